package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * group-admin: the Admin client's view of a classic consumer group, and the non-default assignors.
 * 1. A consumer reads 30 records (10 per partition) of a fresh 3-partition topic, commits and stays:
 *    listConsumerGroups, describeConsumerGroups and listConsumerGroupOffsets are checked field by field.
 * 2. It closes: the group is Empty with no members; alterConsumerGroupOffsets sets partition 0 to 3,
 *    which listConsumerGroupOffsets and a new member (it reads partition 0 from 3) both see.
 * 3. RoundRobinAssignor splits a 6-partition topic between two members 3 and 3, interleaved;
 *    CooperativeStickyAssignor lets the first member keep what it retains when a second joins
 *    (revoked only the partitions that move).
 * Every value the brokers report is printed as a "fact" line, so the two brokers' runs can be diffed.
 */
final class GroupAdminScenario implements Scenario {
    private static final int SESSION_TIMEOUT_MS = 10_000;
    private static final int HEARTBEAT_INTERVAL_MS = 1_000;
    private static final int REBALANCE_TIMEOUT_MS = 20_000;
    /** Includes group.initial.rebalance.delay.ms (3 s by default). */
    private static final long STEP_TIMEOUT_MS = 12_000;
    private static final long SCENARIO_BUDGET_MS = 45_000;
    private static final Duration POLL = Duration.ofMillis(50);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(8);
    /** Apache Kafka may apply an admin change a little after answering; reads are retried this long. */
    private static final long SETTLE_MS = 5_000;

    private static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    private final long started = System.nanoTime();
    private final List<String> problems = new ArrayList<>();
    private final Map<String, KafkaConsumer<byte[], byte[]>> consumers = new LinkedHashMap<>();
    private final Map<String, Set<Integer>> held = new LinkedHashMap<>();
    private final Map<String, List<Set<Integer>>> revokedEvents = new LinkedHashMap<>();
    private final Map<String, List<ConsumerRecord<byte[], byte[]>>> read = new LinkedHashMap<>();
    private String bootstrap;
    private String stamp;
    private Admin admin;

    @Override
    public boolean run(String bootstrap) throws Exception {
        this.bootstrap = bootstrap;
        stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        try {
            admin = Clients.admin(bootstrap);
            adminView();
            assignors();
        } catch (Failure f) {
            problems.add(f.getMessage());
        } finally {
            for (String name : new ArrayList<>(consumers.keySet())) {
                close(name);
            }
            if (admin != null) {
                admin.close(Duration.ofSeconds(2));
            }
        }
        for (String p : problems) {
            System.out.println("problem: " + p);
        }
        log("done in " + msSince(started) + " ms");
        return problems.isEmpty();
    }

    // ---- 1 and 2: the admin view of a group ----

    private void adminView() throws Exception {
        String topic = "compat-gadmin-java-" + stamp;
        String group = "compat-gadmin-java-" + stamp;
        create(topic, 3);
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, "none")) {
            for (int p = 0; p < 3; p++) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, p, null, bytes("m-" + p + "-" + i)));
                }
            }
            producer.flush();
        }
        // The coordinator is whichever broker leads the group's __consumer_offsets partition: the
        // only broker, or one of a cluster's.
        java.util.Set<Integer> brokerIds = new java.util.TreeSet<>();
        admin.describeCluster().nodes().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS).forEach(n -> brokerIds.add(n.id()));
        log("topic " + topic + ": 30 records, 10 per partition; group " + group);

        KafkaConsumer<byte[], byte[]> a = start("A", group, topic, null);
        waitFor("A reading all 30 records", STEP_TIMEOUT_MS, () -> {
            poll("A");
            return read.get("A").size() >= 30;
        });
        a.commitSync(Duration.ofMillis(Clients.API_TIMEOUT_MS));
        log("A read " + read.get("A").size() + " records and committed; holds " + held.get("A"));
        check("A's records", read.get("A").size(), 30);

        // listConsumerGroups: the group is there, Stable, classic.
        ConsumerGroupListing listing = retry("listConsumerGroups shows " + group + " Stable", () -> {
            for (ConsumerGroupListing l : admin.listConsumerGroups().all().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                if (l.groupId().equals(group) && l.groupState().equals(Optional.of(GroupState.STABLE))) {
                    return l;
                }
            }
            return null;
        });
        if (listing != null) {
            fact("list.groupState", listing.groupState());
            fact("list.type", listing.type());
            fact("list.isSimpleConsumerGroup", listing.isSimpleConsumerGroup());
            if (listing.type().isPresent()) {
                check("list.type", listing.type().get(), GroupType.CLASSIC);
            }
            check("list.isSimpleConsumerGroup", listing.isSimpleConsumerGroup(), false);
        }

        // describeConsumerGroups while A is in it.
        ConsumerGroupDescription d = describe(group);
        fact("describe.groupState", d.groupState());
        fact("describe.type", d.type());
        fact("describe.protocol(assignor)", d.partitionAssignor());
        fact("describe.isSimpleConsumerGroup", d.isSimpleConsumerGroup());
        fact("describe.coordinator", d.coordinator() == null ? null : d.coordinator().id() + " " + d.coordinator().host());
        fact("describe.groupEpoch", d.groupEpoch());
        fact("describe.targetAssignmentEpoch", d.targetAssignmentEpoch());
        fact("describe.members", d.members().size());
        check("describe.groupState", d.groupState(), GroupState.STABLE);
        check("describe.type", d.type(), GroupType.CLASSIC);
        check("describe.protocol(assignor)", d.partitionAssignor(), "range");
        check("describe.isSimpleConsumerGroup", d.isSimpleConsumerGroup(), false);
        check("describe.coordinator is one of the brokers " + brokerIds,
                d.coordinator() != null && brokerIds.contains(d.coordinator().id()), true);
        check("describe.members", d.members().size(), 1);
        for (MemberDescription m : d.members()) {
            fact("member.clientId", m.clientId());
            fact("member.host", m.host());
            fact("member.consumerId starts with clientId-", m.consumerId().startsWith(m.clientId() + "-"));
            fact("member.groupInstanceId", m.groupInstanceId());
            fact("member.assignment", partitions(m.assignment().topicPartitions(), topic));
            fact("member.targetAssignment", m.targetAssignment());
            fact("member.memberEpoch", m.memberEpoch());
            check("member.clientId", m.clientId(), "gregor-compat-java-ga-A");
            check("member.host", m.host(), "/127.0.0.1");
            check("member.consumerId starts with clientId-", m.consumerId().startsWith(m.clientId() + "-"), true);
            check("member.groupInstanceId", m.groupInstanceId(), Optional.empty());
            check("member.assignment", partitions(m.assignment().topicPartitions(), topic), Set.of(0, 1, 2));
        }

        // listConsumerGroupOffsets: what A committed.
        Map<TopicPartition, OffsetAndMetadata> committed = offsets(group);
        for (int p = 0; p < 3; p++) {
            OffsetAndMetadata om = committed.get(new TopicPartition(topic, p));
            fact("offsets[" + p + "]", om == null ? null : om.offset() + " metadata=" + quote(om.metadata()) + " leaderEpoch=" + om.leaderEpoch());
            check("offsets[" + p + "].offset", om == null ? null : om.offset(), 10L);
            check("offsets[" + p + "].metadata", om == null ? null : om.metadata(), "");
            check("offsets[" + p + "].leaderEpoch", om == null ? null : om.leaderEpoch(), Optional.of(0));
        }

        // 2. A leaves: Empty, no members.
        close("A");
        ConsumerGroupDescription empty = retry("describeConsumerGroups shows " + group + " Empty", () -> {
            ConsumerGroupDescription e = describe(group);
            return e.groupState() == GroupState.EMPTY ? e : null;
        });
        if (empty != null) {
            fact("empty.groupState", empty.groupState());
            fact("empty.type", empty.type());
            fact("empty.protocol(assignor)", quote(empty.partitionAssignor()));
            fact("empty.members", empty.members().size());
            fact("empty.coordinator", empty.coordinator() == null ? null : empty.coordinator().id());
            check("empty.members", empty.members().size(), 0);
            check("empty.protocol(assignor)", empty.partitionAssignor(), "");
            check("empty.type", empty.type(), GroupType.CLASSIC);
        }

        TopicPartition p0 = new TopicPartition(topic, 0);
        admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(3))).all()
                .get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        Map<TopicPartition, OffsetAndMetadata> altered = retry("listConsumerGroupOffsets reads partition 0 at 3", () -> {
            Map<TopicPartition, OffsetAndMetadata> o = offsets(group);
            OffsetAndMetadata om = o.get(p0);
            return om != null && om.offset() == 3 ? o : null;
        });
        if (altered != null) {
            for (int p = 0; p < 3; p++) {
                OffsetAndMetadata om = altered.get(new TopicPartition(topic, p));
                fact("altered.offsets[" + p + "]", om == null ? null : om.offset() + " metadata=" + quote(om.metadata()) + " leaderEpoch=" + om.leaderEpoch());
                check("altered.offsets[" + p + "].offset", om == null ? null : om.offset(), p == 0 ? 3L : 10L);
            }
        }

        // A new member starts at 3 on partition 0 and reads nothing else.
        start("A2", group, topic, null);
        waitFor("A2 reading partition 0 from offset 3", STEP_TIMEOUT_MS, () -> {
            poll("A2");
            return read.get("A2").size() >= 7;
        });
        long settle = System.nanoTime();
        while (msSince(settle) < 500) {
            poll("A2");
        }
        String got = read.get("A2").stream().map(r -> r.partition() + "@" + r.offset()).collect(Collectors.joining(","));
        fact("A2.read", got);
        check("A2.read", got, "0@3,0@4,0@5,0@6,0@7,0@8,0@9");
        close("A2");
    }

    // ---- 3: assignors ----

    private void assignors() throws Exception {
        String topic = "compat-gadmin-java-6-" + stamp;
        create(topic, 6);

        String rr = "compat-gadmin-java-rr-" + stamp;
        start("R1", rr, topic, RoundRobinAssignor.class.getName());
        start("R2", rr, topic, RoundRobinAssignor.class.getName());
        waitFor("R1 and R2 holding 3 partitions each", STEP_TIMEOUT_MS, () -> {
            poll("R1");
            poll("R2");
            return held.get("R1").size() == 3 && held.get("R2").size() == 3 && disjoint("R1", "R2");
        });
        fact("roundrobin.R1", held.get("R1"));
        fact("roundrobin.R2", held.get("R2"));
        Set<Set<Integer>> split = Set.of(held.get("R1"), held.get("R2"));
        check("roundrobin split", split, Set.of(Set.of(0, 2, 4), Set.of(1, 3, 5)));
        ConsumerGroupDescription d = describe(rr);
        fact("roundrobin.describe.protocol(assignor)", d.partitionAssignor());
        fact("roundrobin.describe.groupState", d.groupState());
        check("roundrobin.describe.protocol(assignor)", d.partitionAssignor(), "roundrobin");
        check("roundrobin.describe.groupState", d.groupState(), GroupState.STABLE);
        Map<String, Set<Integer>> described = new TreeMap<>();
        for (MemberDescription m : d.members()) {
            described.put(m.clientId(), partitions(m.assignment().topicPartitions(), topic));
        }
        fact("roundrobin.describe.members", described);
        check("roundrobin.describe.members", described,
                Map.of("gregor-compat-java-ga-R1", held.get("R1"), "gregor-compat-java-ga-R2", held.get("R2")));
        close("R1");
        close("R2");

        String coop = "compat-gadmin-java-coop-" + stamp;
        start("S1", coop, topic, CooperativeStickyAssignor.class.getName());
        waitFor("S1 holding all 6 partitions", STEP_TIMEOUT_MS, () -> {
            poll("S1");
            return held.get("S1").size() == 6;
        });
        Set<Integer> before = new TreeSet<>(held.get("S1"));
        start("S2", coop, topic, CooperativeStickyAssignor.class.getName());
        long joined = System.nanoTime();
        waitFor("S1 and S2 holding 3 partitions each", STEP_TIMEOUT_MS, () -> {
            poll("S1");
            poll("S2");
            return held.get("S1").size() == 3 && held.get("S2").size() == 3 && disjoint("S1", "S2");
        });
        log("S2 got its partitions " + msSince(joined) + " ms after it started");
        Set<Integer> kept = held.get("S1");
        Set<Integer> moved = new TreeSet<>(before);
        moved.removeAll(kept);
        fact("cooperative.S1.before", before);
        fact("cooperative.S1.after", kept);
        fact("cooperative.S2", held.get("S2"));
        fact("cooperative.S1.revoked", revokedEvents.get("S1"));
        fact("cooperative.S2.revoked", revokedEvents.get("S2"));
        check("cooperative S2 holds what S1 gave up", held.get("S2"), moved);
        Set<Integer> revoked = new TreeSet<>();
        for (Set<Integer> ev : revokedEvents.get("S1")) {
            if (ev.isEmpty() || ev.size() == 6) {
                problems.add("cooperative: S1 revoked " + ev + " in one callback (expected only partitions that move)");
            }
            revoked.addAll(ev);
        }
        check("cooperative S1 revoked in all", revoked, moved);
        check("cooperative S2 revoked", revokedEvents.get("S2"), List.of());
        ConsumerGroupDescription c = describe(coop);
        fact("cooperative.describe.protocol(assignor)", c.partitionAssignor());
        check("cooperative.describe.protocol(assignor)", c.partitionAssignor(), "cooperative-sticky");
    }

    // ---- helpers ----

    private void create(String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
                .get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private KafkaConsumer<byte[], byte[]> start(String name, String group, String topic, String assignor) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "gregor-compat-java-ga-" + name);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        if (assignor != null) {
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
        }
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, SESSION_TIMEOUT_MS);
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, HEARTBEAT_INTERVAL_MS);
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
        revokedEvents.put(name, new ArrayList<>());
        read.put(name, new ArrayList<>());
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                Set<Integer> s = partitions(parts, topic);
                if (consumers.containsKey(name)) {
                    revokedEvents.get(name).add(s);
                }
                held.get(name).removeAll(s);
                log(name + " revoked " + s + ", holds " + held.get(name));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                held.get(name).addAll(partitions(parts, topic));
                log(name + " assigned " + partitions(parts, topic) + ", holds " + held.get(name));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> parts) {
                held.get(name).removeAll(partitions(parts, topic));
                log(name + " lost " + partitions(parts, topic));
            }
        });
        consumers.put(name, consumer);
        return consumer;
    }

    private void poll(String name) {
        for (ConsumerRecord<byte[], byte[]> r : consumers.get(name).poll(POLL)) {
            read.get(name).add(r);
        }
    }

    private void close(String name) {
        KafkaConsumer<byte[], byte[]> c = consumers.remove(name);
        if (c == null) {
            return;
        }
        try {
            c.close(CLOSE_TIMEOUT);
        } catch (Exception e) {
            log("closing " + name + ": " + Errors.describe(e));
        }
    }

    private boolean disjoint(String a, String b) {
        Set<Integer> both = new TreeSet<>(held.get(a));
        both.retainAll(held.get(b));
        return both.isEmpty();
    }

    private ConsumerGroupDescription describe(String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).all().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS)
                .get(group);
    }

    private Map<TopicPartition, OffsetAndMetadata> offsets(String group) throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private interface Attempt<T> {
        T get() throws Exception;
    }

    /** Retries until the attempt gives non-null, for up to SETTLE_MS; a miss is a problem and null. */
    private <T> T retry(String what, Attempt<T> attempt) throws Exception {
        long start = System.nanoTime();
        while (true) {
            T v = attempt.get();
            if (v != null) {
                return v;
            }
            if (msSince(start) > SETTLE_MS) {
                problems.add(what + ": not within " + SETTLE_MS + " ms");
                return null;
            }
            Thread.sleep(200);
        }
    }

    private void waitFor(String what, long timeoutMs, BooleanSupplier cond) {
        long start = System.nanoTime();
        while (!cond.getAsBoolean()) {
            if (msSince(start) > timeoutMs || msSince(started) > SCENARIO_BUDGET_MS) {
                throw new Failure("timed out waiting for " + what + " (" + timeoutMs + " ms); holding " + held);
            }
        }
        log(what + ": after " + msSince(start) + " ms");
    }

    private static Set<Integer> partitions(Collection<TopicPartition> parts, String topic) {
        return parts.stream().filter(tp -> tp.topic().equals(topic)).map(TopicPartition::partition)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private void check(String what, Object actual, Object expected) {
        if (!java.util.Objects.equals(actual, expected)) {
            problems.add(what + ": got " + actual + ", expected " + expected);
        }
    }

    private static void fact(String key, Object value) {
        System.out.println("fact " + key + " = " + value);
    }

    private static String quote(String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }

    private void log(String line) {
        System.out.printf("[%6d ms] %s%n", msSince(started), line);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static long msSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }
}
