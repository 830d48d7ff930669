package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * Transactions whose partition leader, transaction coordinator and group coordinator are three
 * different brokers. Topic IN (3 partitions, replication factor 3, min.insync.replicas=2) has its
 * partitions led by three brokers; the transactional id T and the group G are picked so that
 * their coordinators differ. Producer T commits transaction A, aborts B and commits C (5 records
 * to each partition of IN each); read_committed must see exactly A and C, read_uncommitted A, B
 * and C. Then a consumer in group G copies IN to OUT upper-cased, one transaction per poll with
 * sendOffsetsToTransaction, one of them aborted on purpose and processed again after a rewind:
 * OUT read_committed must hold each committed record of IN once, read_uncommitted the aborted
 * copies too, and G's committed offsets must be IN's end offsets. Needs 3 brokers.
 */
final class TxnClusterScenario implements Scenario {
    static final int BROKERS = 3;
    private static final int PARTITIONS = 3;
    private static final short REPLICATION = 3;
    private static final int PER_PARTITION = 5;
    /** Transactions of step 3, in order; B is the aborted one. */
    private static final List<String> TXNS = List.of("A", "B", "C");
    private static final Set<String> COMMITTED_TXNS = Set.of("A", "C");
    /** How many group ids are tried for a group coordinator other than T's. */
    private static final int CANDIDATES = 50;
    /** The whole scenario stops here; run kills the JVM a little later. */
    private static final long BUDGET_MS = 100_000;
    private static final long WAIT_MS = 20_000;
    private static final int MAX_POLL_RECORDS = 7;

    /** The scenario cannot run here: the broker set is too small. Main answers exit 3. */
    static final class NotApplicable extends Exception {
        NotApplicable(String message) {
            super(message);
        }
    }

    private long deadline;
    private final List<String> problems = new ArrayList<>();
    private final List<String> summary = new ArrayList<>();
    private final AtomicInteger sendFailures = new AtomicInteger();
    private volatile String firstSendFailure;

    @Override
    public boolean run(String bootstrap) throws Exception {
        deadline = System.currentTimeMillis() + BUDGET_MS;
        try {
            plan(bootstrap);
        } catch (NotApplicable n) {
            throw n;
        } catch (Exception e) {
            fail(Errors.describe(e));
        }
        return report();
    }

    private void plan(String bootstrap) throws Exception {
        String stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        String in = "compat-txnc-java-in-" + stamp;
        String out = "compat-txnc-java-out-" + stamp;
        String txnId = "compat-txnc-java-" + stamp;

        try (Admin admin = Clients.admin(bootstrap)) {
            Collection<Node> nodes = admin.describeCluster().nodes().get();
            if (nodes.size() < BROKERS) {
                throw new NotApplicable("the cluster has " + nodes.size() + " broker(s); txn-cluster needs "
                        + BROKERS);
            }
            System.out.println("brokers: " + nodes.stream().map(n -> n.id() + "@" + n.host() + ":" + n.port())
                    .collect(Collectors.joining(", ")));

            // 1. The topics, and IN led by three brokers.
            admin.createTopics(List.of(
                    new NewTopic(in, PARTITIONS, REPLICATION).configs(Map.of("min.insync.replicas", "2")),
                    new NewTopic(out, PARTITIONS, REPLICATION))).all().get();
            Map<Integer, Integer> inLeaders = waitForLeaders(admin, in, PARTITIONS);
            Map<Integer, Integer> outLeaders = waitForLeaders(admin, out, PARTITIONS);
            System.out.println(in + " leaders (partition=broker): " + inLeaders);
            System.out.println(out + " leaders (partition=broker): " + outLeaders);
            if (new HashSet<>(inLeaders.values()).size() != PARTITIONS) {
                fail(in + ": expected its " + PARTITIONS + " partitions led by " + PARTITIONS
                        + " different brokers, saw leaders " + inLeaders);
                return;
            }

            // The transactional.id turns idempotence on and acks to all.
            try (KafkaProducer<byte[], byte[]> producer = Clients.transactionalProducer(bootstrap, txnId)) {
                // 2. T's coordinator (FindCoordinator through describeTransactions), then a group
                // whose coordinator is another broker.
                producer.initTransactions();
                int txnCoordinator = admin.describeTransactions(List.of(txnId)).description(txnId).get()
                        .coordinatorId();
                String groupId = pickGroup(admin, "compat-txnc-java-" + stamp, txnCoordinator);
                if (groupId == null) {
                    return;
                }
                int groupCoordinator = groupCoordinatorOf(groupId);
                Set<Integer> coordinators = Set.of(txnCoordinator, groupCoordinator);
                int third = inLeaders.values().stream().filter(b -> !coordinators.contains(b)).findFirst().orElseThrow();
                System.out.println("transaction coordinator of " + txnId + ": broker " + txnCoordinator);
                System.out.println("group coordinator of " + groupId + " (leader of its __consumer_offsets partition): broker "
                        + groupCoordinator);
                System.out.println("third broker " + third + " leads " + in + " partition " + ledBy(inLeaders, third)
                        + " and " + out + " partition(s) " + ledBy(outLeaders, third));

                // 3. A committed, B aborted, C committed.
                Map<Integer, Long> lastInOffsets = new ConcurrentHashMap<>();
                Map<Integer, List<String>> committedIn = new TreeMap<>();
                Map<Integer, List<String>> allIn = new TreeMap<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    committedIn.put(p, new ArrayList<>());
                    allIn.put(p, new ArrayList<>());
                }
                for (String txn : TXNS) {
                    producer.beginTransaction();
                    for (int k = 0; k < PER_PARTITION; k++) {
                        for (int p = 0; p < PARTITIONS; p++) {
                            String value = txn + "-p" + p + "-" + k;
                            producer.send(new ProducerRecord<>(in, p, null, value.getBytes(StandardCharsets.UTF_8)),
                                    acknowledged(lastInOffsets));
                            allIn.get(p).add(value);
                            if (COMMITTED_TXNS.contains(txn)) {
                                committedIn.get(p).add(value);
                            }
                        }
                    }
                    // Flushed before the abort too, so B's records are really in the log.
                    producer.flush();
                    if (COMMITTED_TXNS.contains(txn)) {
                        producer.commitTransaction();
                    } else {
                        producer.abortTransaction();
                    }
                }
                System.out.println("transactions on " + in + ": A committed, B aborted, C committed ("
                        + PER_PARTITION + " records to each partition each)");

                // 4. IN as each isolation level sees it.
                Map<Integer, Long> inEnd = settledEnd(admin, in, lastInOffsets);
                System.out.println(in + " end offsets: " + inEnd);
                Map<Integer, List<String>> inCommitted = readAll(bootstrap, in, "read_committed", inEnd);
                Map<Integer, List<String>> inAll = readAll(bootstrap, in, "read_uncommitted", inEnd);
                compare(in + " read_committed", committedIn, inCommitted);
                compare(in + " read_uncommitted", allIn, inAll);
                summary.add(in + " read_committed " + count(inCommitted) + "/" + count(committedIn)
                        + ", read_uncommitted " + count(inAll) + "/" + count(allIn));

                // 5. Consume-transform-produce.
                Copy copy = copy(bootstrap, producer, in, out, groupId, inEnd);
                if (copy == null) {
                    return;
                }

                // 6. OUT, and the group's offsets.
                Map<Integer, List<String>> expectedOut = new TreeMap<>();
                committedIn.forEach((p, values) -> expectedOut.put(p, values.stream()
                        .map(v -> v.toUpperCase(Locale.ROOT)).toList()));
                Map<Integer, Long> outEnd = settledEnd(admin, out, copy.lastOffsets);
                Map<Integer, List<String>> outCommitted = readAll(bootstrap, out, "read_committed", outEnd);
                Map<Integer, List<String>> outAll = readAll(bootstrap, out, "read_uncommitted", outEnd);
                compare(out + " read_committed", expectedOut, outCommitted);
                compare(out + " read_uncommitted (the aborted copies included)", copy.written, outAll);
                summary.add(out + " read_committed " + count(outCommitted) + "/" + count(expectedOut)
                        + ", read_uncommitted " + count(outAll) + "/" + count(copy.written) + " ("
                        + copy.abortedRecords + " aborted copies)");

                Map<TopicPartition, OffsetAndMetadata> groupOffsets = admin.listConsumerGroupOffsets(groupId)
                        .partitionsToOffsetAndMetadata().get();
                int atEnd = 0;
                for (int p = 0; p < PARTITIONS; p++) {
                    OffsetAndMetadata o = groupOffsets.get(new TopicPartition(in, p));
                    Long got = o == null ? null : o.offset();
                    System.out.println("group " + groupId + " " + in + " partition " + p + ": committed " + got
                            + ", end offset " + inEnd.get(p));
                    if (got != null && got.equals(inEnd.get(p))) {
                        atEnd++;
                    } else {
                        fail("group " + groupId + " partition " + p + " of " + in + ": expected committed offset "
                                + inEnd.get(p) + " (the end offset), saw " + got);
                    }
                }
                summary.add("group offsets at the end " + atEnd + "/" + PARTITIONS);

                // The group coordinator was computed; the broker's own answer must agree.
                ConsumerGroupDescription described = admin.describeConsumerGroups(List.of(groupId))
                        .describedGroups().get(groupId).get();
                int reported = described.coordinator().id();
                System.out.println("describeConsumerGroups(" + groupId + "): coordinator broker " + reported);
                if (reported != groupCoordinator) {
                    fail("group " + groupId + ": expected coordinator broker " + groupCoordinator
                            + " (leader of __consumer_offsets partition " + offsetsPartition(groupId)
                            + "), the broker reports " + reported);
                }
                summary.add(copy.transactions + " copy transactions committed, 1 aborted");
            }
        }
    }

    private boolean report() {
        if (sendFailures.get() > 0) {
            problems.add(0, sendFailures.get() + " record(s) not acknowledged, the first: " + firstSendFailure);
        }
        problems.forEach(p -> System.out.println("problem: " + p));
        summary.forEach(s -> System.out.println("summary: " + s));
        return problems.isEmpty();
    }

    private void fail(String problem) {
        synchronized (problems) {
            problems.add(problem);
        }
    }

    private long left(long cap) {
        long rest = deadline - System.currentTimeMillis();
        if (rest <= 0) {
            throw new IllegalStateException("scenario budget of " + BUDGET_MS + " ms used up");
        }
        return Math.min(cap, rest);
    }

    /** Polls describeTopics until every partition of topic has a leader; partition -> leader id. */
    private Map<Integer, Integer> waitForLeaders(Admin admin, String topic, int partitions) throws Exception {
        long until = System.currentTimeMillis() + left(WAIT_MS);
        Map<Integer, Integer> leaders = new TreeMap<>();
        while (true) {
            leaders.clear();
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                for (TopicPartitionInfo p : d.partitions()) {
                    if (p.leader() != null && !p.leader().isEmpty()) {
                        leaders.put(p.partition(), p.leader().id());
                    }
                }
                if (d.partitions().size() == partitions && leaders.size() == partitions) {
                    return leaders;
                }
            } catch (Exception e) {
                if (System.currentTimeMillis() > until) {
                    throw e;
                }
            }
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException(topic + ": expected a leader for each of its " + partitions
                        + " partitions within " + WAIT_MS + " ms, saw " + leaders);
            }
            Thread.sleep(200);
        }
    }

    /** Leaders of __consumer_offsets, made first by asking for a throwaway group's coordinator. */
    private Map<Integer, Integer> offsetsTopicLeaders;

    /**
     * A group id (prefix-g0, prefix-g1, ...) whose coordinator is not {@code avoid}, or null (with
     * a problem) when none of CANDIDATES is.
     */
    private String pickGroup(Admin admin, String prefix, int avoid) throws Exception {
        // A group's FindCoordinator makes __consumer_offsets when it does not exist yet.
        admin.listConsumerGroupOffsets(prefix + "-probe").partitionsToOffsetAndMetadata().get();
        offsetsTopicLeaders = waitForLeaders(admin, "__consumer_offsets", partitionCount(admin, "__consumer_offsets"));
        List<String> tried = new ArrayList<>();
        for (int i = 0; i < CANDIDATES; i++) {
            String groupId = prefix + "-g" + i;
            int coordinator = groupCoordinatorOf(groupId);
            if (coordinator != avoid) {
                return groupId;
            }
            tried.add(groupId + "->" + coordinator);
        }
        fail("no group id among " + CANDIDATES + " candidates has a coordinator other than broker " + avoid + ": "
                + tried.subList(0, 5) + "...");
        return null;
    }

    private int groupCoordinatorOf(String groupId) {
        return offsetsTopicLeaders.get(offsetsPartition(groupId));
    }

    /**
     * Kafka's rule for the partition of an internal topic that owns a key: the key's Java string
     * hash, absolute (with Integer.MIN_VALUE counting as 0), modulo the partition count.
     */
    private int offsetsPartition(String key) {
        int h = key.hashCode();
        return (h == Integer.MIN_VALUE ? 0 : Math.abs(h)) % offsetsTopicLeaders.size();
    }

    private int partitionCount(Admin admin, String topic) throws Exception {
        long until = System.currentTimeMillis() + left(WAIT_MS);
        while (true) {
            try {
                return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            } catch (Exception e) {
                if (System.currentTimeMillis() > until) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private static String ledBy(Map<Integer, Integer> leaders, int broker) {
        List<Integer> ps = leaders.entrySet().stream().filter(e -> e.getValue() == broker).map(Map.Entry::getKey)
                .toList();
        return ps.isEmpty() ? "none" : ps.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    /** A send callback keeping the highest offset acknowledged per partition, and the failures. */
    private Callback acknowledged(Map<Integer, Long> lastOffsets) {
        return (md, err) -> {
            if (err != null) {
                if (sendFailures.getAndIncrement() == 0) {
                    firstSendFailure = Errors.describe(err);
                }
            } else {
                lastOffsets.merge(md.partition(), md.offset(), Math::max);
            }
        };
    }

    /**
     * The end offsets of topic as a read_committed reader has them (ListOffsets latest,
     * READ_COMMITTED), once they are past the last offset acknowledged in each partition: a
     * transaction is decided on a partition only once its marker is in, so before that the last
     * stable offset stops at its first record.
     */
    private Map<Integer, Long> settledEnd(Admin admin, String topic, Map<Integer, Long> lastOffsets) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        long until = System.currentTimeMillis() + left(WAIT_MS);
        Map<Integer, Long> end = new TreeMap<>();
        while (true) {
            admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get()
                    .forEach((tp, info) -> end.put(tp.partition(), info.offset()));
            if (lastOffsets.entrySet().stream().allMatch(e -> end.get(e.getKey()) > e.getValue())) {
                return end;
            }
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException(topic + ": expected the last stable offsets past the last records written "
                        + new TreeMap<>(lastOffsets) + " within " + WAIT_MS + " ms (the transactions decided), saw " + end);
            }
            Thread.sleep(100);
        }
    }

    /**
     * Reads every partition of topic without a group, in the given isolation level, from the
     * beginning up to the end offsets; partition -> values.
     */
    private Map<Integer, List<String>> readAll(String bootstrap, String topic, String isolation, Map<Integer, Long> end) {
        Map<Integer, List<String>> values = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.groupFreeConsumer(bootstrap,
                props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                tps.add(new TopicPartition(topic, p));
                values.put(p, new ArrayList<>());
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long until = System.currentTimeMillis() + left(WAIT_MS);
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp.partition()))) {
                if (System.currentTimeMillis() > until) {
                    Map<Integer, Long> at = new TreeMap<>();
                    tps.forEach(tp -> at.put(tp.partition(), consumer.position(tp)));
                    throw new IllegalStateException(topic + " " + isolation + ": expected to reach end offsets " + end
                            + " within " + WAIT_MS + " ms, stopped at " + at);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    if (r.offset() < end.get(r.partition())) {
                        values.get(r.partition()).add(new String(r.value(), StandardCharsets.UTF_8));
                    }
                }
            }
        }
        System.out.println(topic + " " + isolation + ": " + count(values) + " records up to end offsets " + end);
        return values;
    }

    /** What the copy loop wrote to OUT, aborted attempts included, per partition in order. */
    private record Copy(Map<Integer, List<String>> written, Map<Integer, Long> lastOffsets, int abortedRecords,
            int transactions) {
    }

    /**
     * Step 5: a classic-group consumer of IN in group G; each poll's records go upper-cased to the
     * same partition of OUT in one transaction of producer T, with the consumer's positions sent
     * to it. The first transaction that carries records is aborted after its records are written,
     * and the consumer rewound to the positions before that poll; stops once G's offsets committed
     * by the transactions are IN's end offsets.
     */
    private Copy copy(String bootstrap, KafkaProducer<byte[], byte[]> producer, String in, String out, String groupId,
            Map<Integer, Long> inEnd) throws Exception {
        Map<Integer, List<String>> written = new TreeMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            written.put(p, new ArrayList<>());
        }
        Map<Integer, Long> lastOffsets = new ConcurrentHashMap<>();
        Map<TopicPartition, Long> committed = new HashMap<>();
        Map<TopicPartition, Long> end = new HashMap<>();
        inEnd.forEach((p, o) -> end.put(new TopicPartition(in, p), o));
        int abortedRecords = 0;
        int transactions = 0;
        boolean aborted = false;
        Properties p = props(
                ConsumerConfig.GROUP_ID_CONFIG, groupId,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(MAX_POLL_RECORDS),
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000",
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000",
                ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
        long until = System.currentTimeMillis() + left(60_000);
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.groupFreeConsumer(bootstrap, p)) {
            consumer.subscribe(List.of(in));
            while (!committed.equals(end)) {
                if (System.currentTimeMillis() > until) {
                    fail("copy loop: expected group " + groupId + " to commit the end offsets " + end
                            + " through transactions, reached " + committed + " (" + transactions + " committed)");
                    return null;
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                Map<TopicPartition, Long> positions = new HashMap<>();
                for (TopicPartition tp : consumer.assignment()) {
                    positions.put(tp, consumer.position(tp));
                }
                // A poll without records may still move a position past a transaction marker.
                boolean moved = positions.entrySet().stream()
                        .anyMatch(e -> e.getValue() > committed.getOrDefault(e.getKey(), 0L));
                if (records.isEmpty() && !moved) {
                    continue;
                }
                producer.beginTransaction();
                Map<Integer, List<String>> batch = new TreeMap<>();
                Map<TopicPartition, Long> firstOffsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String value = new String(r.value(), StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
                    producer.send(new ProducerRecord<>(out, r.partition(), null, value.getBytes(StandardCharsets.UTF_8)),
                            acknowledged(lastOffsets));
                    batch.computeIfAbsent(r.partition(), x -> new ArrayList<>()).add(value);
                    firstOffsets.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                positions.forEach((tp, o) -> offsets.put(tp, new OffsetAndMetadata(o)));
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.flush();
                batch.forEach((part, values) -> written.get(part).addAll(values));
                if (!aborted && !records.isEmpty()) {
                    producer.abortTransaction();
                    aborted = true;
                    abortedRecords = records.count();
                    firstOffsets.forEach(consumer::seek);
                    System.out.println("aborted the transaction of " + records.count() + " records (" + batch
                            + "), rewound to " + firstOffsets);
                    continue;
                }
                producer.commitTransaction();
                transactions++;
                committed.putAll(positions);
                System.out.println("committed " + records.count() + " records, offsets " + new TreeMap<>(
                        positions.entrySet().stream().collect(Collectors.toMap(e -> e.getKey().partition(),
                                Map.Entry::getValue))));
            }
        }
        return new Copy(written, lastOffsets, abortedRecords, transactions);
    }

    /** Adds a problem per partition whose values differ from the expected list. */
    private void compare(String label, Map<Integer, List<String>> expected, Map<Integer, List<String>> got) {
        for (int p = 0; p < PARTITIONS; p++) {
            List<String> want = expected.getOrDefault(p, List.of());
            List<String> saw = got.getOrDefault(p, List.of());
            if (want.equals(saw)) {
                continue;
            }
            int i = 0;
            while (i < want.size() && i < saw.size() && want.get(i).equals(saw.get(i))) {
                i++;
            }
            fail(label + " partition " + p + ": expected " + want.size() + " records " + want + ", saw " + saw.size()
                    + " " + saw + "; first difference at position " + i + ": expected "
                    + (i < want.size() ? want.get(i) : "nothing") + ", saw " + (i < saw.size() ? saw.get(i) : "nothing"));
        }
    }

    private static int count(Map<Integer, List<String>> values) {
        return values.values().stream().mapToInt(List::size).sum();
    }

    private static Properties props(String... kv) {
        Properties p = new Properties();
        for (int i = 0; i < kv.length; i += 2) {
            p.put(kv[i], kv[i + 1]);
        }
        return p;
    }
}
