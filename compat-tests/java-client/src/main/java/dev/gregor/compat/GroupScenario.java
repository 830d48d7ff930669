package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The group scenario (compat-tests/lib/group.mjs explains the plan) with KafkaConsumers on the
 * classic protocol (group.protocol=classic) and the default assignors (range, then
 * cooperative-sticky; both members pick range). Two consumers A and B share a fresh 6-partition
 * topic; once both hold partitions, FIRST keyed messages are produced and must each be read
 * exactly once between them. B commits and leaves; A must hold all partitions within the session
 * timeout and read SECOND more. A commits and leaves; THIRD more are produced and a new consumer C
 * must read exactly those, starting at the committed offsets. The consumers are polled in turn
 * from this thread, so the rebalance listeners, which keep track of what each one holds, run here.
 * Every poll that returned records is followed by commitSync of what it read.
 *
 * As {@code group-consumer} the same plan runs on the consumer rebalance protocol of KIP-848
 * (group.protocol=consumer): the broker assigns (its default assignor, uniform), sessions and
 * heartbeat intervals are the broker's, and partitions move incrementally, each revoked before
 * another member gets it; the waits allow for the broker's heartbeat interval (5 s by default).
 * It also restarts the group's coordinator: once A alone has read SECOND, the broker that
 * coordinates the group (describeConsumerGroups) is killed and started again through the
 * matrix's control endpoint (COMPAT_CLUSTER_CONTROL; without it the restart is skipped, saying
 * so) while A keeps polling, RESTARTED more are produced, and A must read them exactly once as
 * the same member, still holding every partition, its commits accepted by a coordinator that
 * reloaded the group from __consumer_offsets. C later starts from those commits.
 */
final class GroupScenario implements Scenario {
    private static final int PARTITIONS = 6;
    private static final int FIRST = 600;
    private static final int SECOND = 120;
    private static final int THIRD = 60;
    /** Produced after the coordinator's restart (group-consumer only). */
    private static final int RESTARTED = 120;
    /** Kafka's group.min.session.timeout.ms is 6 s; heartbeats this often notice a rebalance soon. */
    private static final int SESSION_TIMEOUT_MS = 10_000;
    private static final int HEARTBEAT_INTERVAL_MS = 1_000;
    /** max.poll.interval.ms, which the classic consumer sends as its rebalance timeout. */
    private static final int REBALANCE_TIMEOUT_MS = 20_000;
    /** Includes group.initial.rebalance.delay.ms (3 s by default). */
    private static final long JOIN_TIMEOUT_MS = 15_000;
    private static final long CONSUME_TIMEOUT_MS = 10_000;
    private static final Duration POLL = Duration.ofMillis(50);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(8);
    /** The whole scenario; run allows a little more, under the matrix's hard 60 s. */
    private static final long SCENARIO_BUDGET_MS = 45_000;
    /**
     * group-consumer: the whole scenario, coordinator restart included; run allows a little more
     * (GROUP_CONSUMER_TIMEOUT_S), under the matrix's limit for it (SCENARIO_TIMEOUTS_MS).
     */
    private static final long CONSUMER_SCENARIO_BUDGET_MS = 110_000;
    /** The kill answers once the process has exited. */
    private static final Duration KILL_TIMEOUT = Duration.ofSeconds(20);
    /**
     * The start answers once the broker is ready and listed: gregor in 1 to 2 s, a reference Kafka
     * node in about 30 s on a 2-core machine.
     */
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    /** After the restart: A reads the new messages, its commits accepted, and the coordinator lists it. */
    private static final long AFTER_RESTART_TIMEOUT_MS = 30_000;
    /**
     * A is polled this long after the restart before its membership is checked, so that it has
     * heartbeated to the coordinator at least once (Kafka's group.consumer.heartbeat.interval.ms is 5 s).
     */
    private static final long HEARTBEATS_AFTER_RESTART_MS = 7_000;
    private static final Pattern VALUE = Pattern.compile("group-message-(\\d+)");

    /** A check that did not hold. */
    private static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    private final boolean consumerProtocol;
    private final long joinTimeoutMs;
    private final long leaveTimeoutMs;

    GroupScenario(boolean consumerProtocol) {
        this.consumerProtocol = consumerProtocol;
        // The consumer protocol moves partitions at the members' heartbeats, every 5 s by Kafka's default.
        this.joinTimeoutMs = consumerProtocol ? 40_000 : JOIN_TIMEOUT_MS;
        this.leaveTimeoutMs = consumerProtocol ? 30_000 : SESSION_TIMEOUT_MS;
    }

    private final long started = System.nanoTime();
    private final Map<String, Set<Integer>> held = new LinkedHashMap<>();
    /** Message index to the reads of it: "member partition offset". */
    private final Map<Integer, List<String>> consumedBy = new HashMap<>();
    /** Partition to (offset to message index). */
    private final Map<Integer, Map<Long, Integer>> offsets = new TreeMap<>();
    private final Map<Integer, RecordMetadata> produced = new HashMap<>();
    private final List<String> problems = new ArrayList<>();
    private final Map<String, KafkaConsumer<byte[], byte[]>> consumers = new LinkedHashMap<>();
    private String topic;
    private String groupId;
    private String bootstrap;
    private KafkaProducer<byte[], byte[]> producer;
    /** Partitions a member lost (fenced, or its session gone) since the coordinator's restart began. */
    private final List<String> lostSinceRestart = new ArrayList<>();
    private boolean restarting;
    /** When a commitSync last succeeded, per member (System.nanoTime()). */
    private final Map<String, Long> lastCommit = new HashMap<>();

    @Override
    public boolean run(String bootstrap) throws Exception {
        this.bootstrap = bootstrap;
        String stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        topic = "compat-group-java-" + stamp;
        groupId = "compat-group-java-" + stamp;
        try {
            steps();
            return true;
        } catch (Failure f) {
            System.out.println("problem: " + f.getMessage());
            return false;
        } finally {
            for (Map.Entry<String, KafkaConsumer<byte[], byte[]>> e : consumers.entrySet()) {
                try {
                    e.getValue().close(CLOSE_TIMEOUT);
                } catch (Exception ex) {
                    System.out.println("cleanup: closing " + e.getKey() + ": " + Errors.describe(ex));
                }
            }
            if (producer != null) {
                producer.close(Duration.ofSeconds(2));
            }
        }
    }

    private void steps() throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all()
                    .get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
        log("topic " + topic + " with " + PARTITIONS + " partitions; group " + groupId);
        producer = Clients.producer(bootstrap, "none");

        start("A");
        start("B");
        waitFor("A and B holding all partitions between them", joinTimeoutMs, () -> split("A", "B"),
                () -> describe("A", "B"));
        produce(0, FIRST);
        consumeStep("A and B", 0, FIRST, "A", "B");
        if (offsets.size() != PARTITIONS) {
            throw new Failure("the " + FIRST + " keyed messages went to partitions " + offsets.keySet() + " only, expected all "
                    + PARTITIONS);
        }

        long leftAt = System.nanoTime();
        leave("B");
        waitFor("A holding all partitions after B left", leaveTimeoutMs, () -> holds("A").size() == PARTITIONS,
                () -> describe("A"));
        log("A holds all " + PARTITIONS + " partitions " + msSince(leftAt) + " ms after B started leaving");
        produce(FIRST, FIRST + SECOND);
        consumeStep("A alone", FIRST, FIRST + SECOND, "A");

        int beforeThird = FIRST + SECOND;
        if (consumerProtocol) {
            restartCoordinator(beforeThird, beforeThird + RESTARTED);
            beforeThird += RESTARTED;
        }

        leave("A");
        int end = beforeThird + THIRD;
        produce(beforeThird, end);
        start("C");
        consumeStep("C after the commits", beforeThird, end, "C");
        // A partition C wrongly read from its start would show up as old messages by now.
        long settle = System.nanoTime();
        while (msSince(settle) < 1_000) {
            pollAll();
        }
        expectStep("whole run", 0, end, "A", "B", "C");
        if (holds("C").size() != PARTITIONS) {
            throw new Failure(describe("C") + ", expected all " + PARTITIONS + " partitions");
        }
    }

    private void start(String name) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "gregor-compat-java-" + name);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        if (consumerProtocol) {
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        } else {
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, SESSION_TIMEOUT_MS);
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, HEARTBEAT_INTERVAL_MS);
        }
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, REBALANCE_TIMEOUT_MS);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        held.put(name, new TreeSet<>());
        // Eager assignors revoke everything and assign the whole new set; cooperative ones
        // only the difference. Keeping the set up to date from both serves either.
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                change(name, partitions, false, "revoked");
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                change(name, partitions, true, "assigned");
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                change(name, partitions, false, "lost");
            }
        });
        consumers.put(name, consumer);
    }

    private void change(String name, Collection<TopicPartition> partitions, boolean add, String what) {
        if (restarting && !add && !partitions.isEmpty()) {
            lostSinceRestart.add(name + " " + what + " " + partitions.stream().map(TopicPartition::partition).sorted().toList());
        }
        Set<Integer> mine = new TreeSet<>(holds(name));
        Set<Integer> changed = partitions.stream().filter(tp -> tp.topic().equals(topic)).map(TopicPartition::partition)
                .collect(Collectors.toCollection(TreeSet::new));
        if (add) {
            mine.addAll(changed);
        } else {
            mine.removeAll(changed);
        }
        assign(name, mine, what + " " + changed + "; holds");
    }

    /** The member now holds exactly {@code mine}; no partition may be held by two members at once. */
    private void assign(String name, Set<Integer> mine, String why) {
        held.put(name, mine);
        log(name + " " + why + " " + mine);
        held.forEach((other, theirs) -> {
            if (!other.equals(name)) {
                Set<Integer> both = new TreeSet<>(mine);
                both.retainAll(theirs);
                if (!both.isEmpty()) {
                    problem("partitions " + both + " assigned to " + name + " while " + other + " still holds them");
                }
            }
        });
    }

    private Set<Integer> holds(String name) {
        return held.getOrDefault(name, Set.of());
    }

    private boolean split(String... members) {
        Set<Integer> all = new TreeSet<>();
        for (String m : members) {
            if (holds(m).isEmpty()) {
                return false;
            }
            all.addAll(holds(m));
        }
        return all.size() == PARTITIONS;
    }

    private String describe(String... members) {
        return java.util.Arrays.stream(members).map(m -> m + " holds " + holds(m)).collect(Collectors.joining(", "));
    }

    /** Keyed messages, partitioned by the producer's default partitioner (murmur2 of the key). */
    private void produce(int from, int to) throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int i = from; i < to; i++) {
            acks.add(producer.send(new ProducerRecord<>(topic, bytes("key-" + i), bytes("group-message-" + i))));
        }
        producer.flush();
        for (int i = from; i < to; i++) {
            try {
                produced.put(i, acks.get(i - from).get(1, TimeUnit.SECONDS));
            } catch (java.util.concurrent.ExecutionException e) {
                throw new Failure("produce message " + i + ": " + Errors.describe(e));
            }
        }
        log("produced messages " + from + ".." + (to - 1));
    }

    /** One turn: each member polls briefly and commits what it read with commitSync. */
    private void pollAll() {
        for (Map.Entry<String, KafkaConsumer<byte[], byte[]>> e : new ArrayList<>(consumers.entrySet())) {
            String name = e.getKey();
            KafkaConsumer<byte[], byte[]> consumer = e.getValue();
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            try {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL)) {
                    consume(name, r);
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (!next.isEmpty()) {
                    consumer.commitSync(next);
                    lastCommit.put(name, System.nanoTime());
                }
            } catch (Exception ex) {
                problem(name + (next.isEmpty() ? " poll: " : " commitSync " + next + ": ") + Errors.describe(ex));
            }
        }
    }

    private void consume(String name, ConsumerRecord<byte[], byte[]> r) {
        String value = r.value() == null ? "null" : new String(r.value(), StandardCharsets.UTF_8);
        Matcher m = VALUE.matcher(value);
        int partition = r.partition();
        long offset = r.offset();
        if (!m.matches()) {
            problem(name + " read partition " + partition + " offset " + offset + " with value " + value + ", not one produced here");
            return;
        }
        int i = Integer.parseInt(m.group(1));
        String key = r.key() == null ? "null" : new String(r.key(), StandardCharsets.UTF_8);
        if (!key.equals("key-" + i)) {
            problem(name + " read message " + i + " with key " + key + ", expected key-" + i);
        }
        RecordMetadata where = produced.get(i);
        if (where != null && (where.partition() != partition || where.offset() != offset)) {
            problem(name + " read message " + i + " at partition " + partition + " offset " + offset
                    + "; it was acknowledged at partition " + where.partition() + " offset " + where.offset());
        }
        if (!holds(name).contains(partition)) {
            problem(name + " read partition " + partition + " offset " + offset + ", which it does not hold");
        }
        Integer before = offsets.computeIfAbsent(partition, k -> new TreeMap<>()).put(offset, i);
        if (before != null && before != i) {
            problem("partition " + partition + " offset " + offset + " read as message " + before + " and as message " + i);
        }
        List<String> reads = consumedBy.computeIfAbsent(i, k -> new ArrayList<>());
        reads.add(name + " at partition " + partition + " offset " + offset);
        if (reads.size() == 2) {
            problem("message " + i + " (partition " + partition + " offset " + offset + ") read twice: " + reads);
        }
    }

    private int countRead(int from, int to) {
        int n = 0;
        for (int i = from; i < to; i++) {
            n += consumedBy.containsKey(i) ? 1 : 0;
        }
        return n;
    }

    private void consumeStep(String step, int from, int to, String... members) {
        waitFor(step + ": reading messages " + from + ".." + (to - 1), CONSUME_TIMEOUT_MS, () -> countRead(from, to) == to - from,
                () -> countRead(from, to) + " read; " + describe(members));
        expectStep(step, from, to, members);
    }

    /**
     * Messages [from, to) were each read exactly once, by one of {@code members}; nothing at or past
     * {@code to} was read; in every partition the offsets read so far run 0, 1, 2, ... without a gap.
     */
    private void expectStep(String step, int from, int to, String... members) {
        expectNoProblems();
        Map<String, Integer> byMember = new LinkedHashMap<>();
        for (String m : members) {
            byMember.put(m, 0);
        }
        List<Integer> missing = new ArrayList<>();
        for (int i = from; i < to; i++) {
            List<String> reads = consumedBy.get(i);
            if (reads == null) {
                missing.add(i);
                continue;
            }
            for (String read : reads) {
                String member = read.substring(0, read.indexOf(' '));
                if (!byMember.containsKey(member)) {
                    throw new Failure(step + ": message " + i + " was read by " + member + ", expected one of " + byMember.keySet());
                }
                byMember.merge(member, 1, Integer::sum);
            }
        }
        if (!missing.isEmpty()) {
            List<String> where = missing.stream().limit(5).map(i -> produced.containsKey(i)
                    ? i + " (partition " + produced.get(i).partition() + " offset " + produced.get(i).offset() + ")"
                    : String.valueOf(i)).toList();
            throw new Failure(step + ": " + missing.size() + " of " + (to - from) + " messages never read, e.g. " + where);
        }
        List<Integer> early = consumedBy.keySet().stream().filter(i -> i >= to).sorted().limit(5).toList();
        if (!early.isEmpty()) {
            throw new Failure(step + ": read messages not produced yet: " + early);
        }
        StringBuilder perPartition = new StringBuilder();
        offsets.forEach((partition, seen) -> {
            long n = 0;
            for (long o : seen.keySet()) {
                if (o != n) {
                    throw new Failure(step + ": partition " + partition + " offsets read skip from " + (n - 1) + " to " + o
                            + ", expected 0, 1, 2, ... without a gap");
                }
                n++;
            }
            perPartition.append(perPartition.length() == 0 ? "" : " ").append(partition).append(':').append(seen.size());
        });
        log(step + ": messages " + from + ".." + (to - 1) + " each read once (" + byMember.entrySet().stream()
                .map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", "))
                + "); records read per partition so far " + perPartition);
    }

    /**
     * Kills the group's coordinator and starts it again, A polled meanwhile (a consumer not polled
     * for max.poll.interval.ms leaves its group); then messages [from, to) are produced and A,
     * still the same member holding every partition, must read each exactly once and commit it;
     * the coordinator must then describe the group with A as it was.
     */
    private void restartCoordinator(int from, int to) throws Exception {
        ClusterControl control = ClusterControl.fromEnv();
        long killed = 0;
        KafkaConsumer<byte[], byte[]> a = consumers.get("A");
        String memberId = a.groupMetadata().memberId();
        int epoch = a.groupMetadata().generationId();
        if (control == null) {
            log(ClusterControl.ENV + " is not set: the group's coordinator is not restarted");
        } else {
            ConsumerGroupDescription before = describeGroup();
            int coordinator = before.coordinator().id();
            List<ClusterControl.Broker> brokers = control.brokers();
            if (brokers.stream().noneMatch(b -> b.id() == coordinator)) {
                throw new Failure("the coordinator, broker " + coordinator + ", is not one the control endpoint has: " + brokers);
            }
            log("the group's coordinator is broker " + coordinator + " (" + brokers.size() + " broker(s)); A is member "
                    + memberId + " at epoch " + epoch + ", group " + before.groupState() + ", epoch " + before.groupEpoch().orElse(-1));
            restarting = true;
            long t0 = System.nanoTime();
            AtomicLong killedAt = new AtomicLong();
            AtomicLong runningAt = new AtomicLong();
            CompletableFuture<Void> restart = CompletableFuture.runAsync(() -> {
                try {
                    control.kill(coordinator, KILL_TIMEOUT);
                    killedAt.set(System.nanoTime());
                    control.start(coordinator, START_TIMEOUT);
                    runningAt.set(System.nanoTime());
                } catch (Exception e) {
                    throw new CompletionException(e);
                }
            });
            waitFor("broker " + coordinator + " killed and started again", KILL_TIMEOUT.plus(START_TIMEOUT).toMillis() + 5_000,
                    restart::isDone, () -> killedAt.get() == 0 ? "not killed yet" : "killed, not started yet");
            try {
                restart.join();
            } catch (CompletionException e) {
                throw new Failure("restarting broker " + coordinator + " through " + control.base() + ": " + Errors.describe(e.getCause()));
            }
            log("broker " + coordinator + " killed after " + (killedAt.get() - t0) / 1_000_000 + " ms, running again "
                    + (runningAt.get() - killedAt.get()) / 1_000_000 + " ms later");
            killed = killedAt.get();
        }
        long runningAgain = System.nanoTime();
        produce(from, to);
        String step = control == null ? "A again" : "A after the coordinator's restart";
        waitFor(step + ": reading messages " + from + ".." + (to - 1), AFTER_RESTART_TIMEOUT_MS,
                () -> countRead(from, to) == to - from, () -> countRead(from, to) + " read; " + describe("A"));
        long readAt = System.nanoTime();
        expectStep(step, from, to, "A");
        // Every poll that read something commits it; the last commit covers the last of them.
        long committed = lastCommit.getOrDefault("A", 0L);
        if (committed < runningAgain) {
            throw new Failure(step + ": A committed nothing after the restart");
        }
        log(step + ": A read all " + (to - from) + " " + (readAt - runningAgain) / 1_000_000 + " ms after "
                + (killed == 0 ? "the producer started" : "the broker was running again (" + (readAt - killed) / 1_000_000 + " ms after the kill)")
                + "; its last commit of them was accepted at " + (committed - runningAgain) / 1_000_000 + " ms");
        if (control == null) {
            return;
        }
        waitFor(step + ": A polled " + HEARTBEATS_AFTER_RESTART_MS + " ms after the restart", HEARTBEATS_AFTER_RESTART_MS + 5_000,
                () -> msSince(runningAgain) >= HEARTBEATS_AFTER_RESTART_MS, () -> describe("A"));
        restarting = false;
        if (!lostSinceRestart.isEmpty()) {
            throw new Failure(step + ": partitions were taken from a member (fenced or its session gone): " + lostSinceRestart);
        }
        if (holds("A").size() != PARTITIONS) {
            throw new Failure(step + ": " + describe("A") + ", expected all " + PARTITIONS + " partitions");
        }
        String memberAfter = a.groupMetadata().memberId();
        int epochAfter = a.groupMetadata().generationId();
        if (!memberAfter.equals(memberId)) {
            throw new Failure(step + ": A is member " + memberAfter + " at epoch " + epochAfter + ", was " + memberId + " at epoch " + epoch
                    + ": it joined again instead of keeping its session");
        }
        ConsumerGroupDescription after = describeGroup();
        List<String> members = after.members().stream().map(m -> m.consumerId() + " " + m.assignment().topicPartitions().stream()
                .filter(tp -> tp.topic().equals(topic)).map(TopicPartition::partition).sorted().toList()).toList();
        MemberDescription only = after.members().size() == 1 ? after.members().iterator().next() : null;
        if (only == null || !only.consumerId().equals(memberId) || only.assignment().topicPartitions().size() != PARTITIONS) {
            throw new Failure(step + ": the coordinator describes the group's members as " + members + ", expected only A (" + memberId
                    + ") with all " + PARTITIONS + " partitions");
        }
        log(step + ": A is still member " + memberId + " (epoch " + epoch + " before, " + epochAfter + " after); the coordinator, broker "
                + after.coordinator().id() + ", describes the group " + after.groupState() + " at epoch " + after.groupEpoch().orElse(-1)
                + " with members " + members);
    }

    private ConsumerGroupDescription describeGroup() throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            return admin.describeConsumerGroups(List.of(groupId)).all().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(groupId);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new Failure("describeConsumerGroups " + groupId + ": " + Errors.describe(e));
        }
    }

    /** Commits were made after every poll; close() revokes, then sends LeaveGroup. */
    private void leave(String name) {
        KafkaConsumer<byte[], byte[]> consumer = consumers.remove(name);
        assign(name, new TreeSet<>(), "leaves the group; holds");
        try {
            consumer.close(CLOSE_TIMEOUT);
        } catch (Exception e) {
            throw new Failure(name + " close: " + Errors.describe(e));
        }
    }

    /** Polls every member until {@code cond} holds; fails naming {@code what} and {@code state} after timeoutMs. */
    private void waitFor(String what, long timeoutMs, BooleanSupplier cond, Supplier<String> state) {
        long start = System.nanoTime();
        while (true) {
            expectNoProblems();
            if (cond.getAsBoolean()) {
                return;
            }
            if (msSince(start) > timeoutMs) {
                throw new Failure(what + ": not within " + timeoutMs + " ms (" + state.get() + ")");
            }
            long budget = consumerProtocol ? CONSUMER_SCENARIO_BUDGET_MS : SCENARIO_BUDGET_MS;
            if (msSince(started) > budget) {
                throw new Failure(what + ": the scenario's " + budget + " ms ran out (" + state.get() + ")");
            }
            pollAll();
        }
    }

    private void problem(String text) {
        if (problems.size() < 10) {
            problems.add(text);
        }
        log("problem: " + text);
    }

    private void expectNoProblems() {
        if (!problems.isEmpty()) {
            throw new Failure(String.join("\n  ", problems));
        }
    }

    private void log(String line) {
        System.out.printf("  +%.2f s %s%n", (System.nanoTime() - started) / 1e9, line);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static long msSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
