package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The online migration of a live group between the classic and the consumer (KIP-848) protocol,
 * as an operator rolls it out: two classic consumers C1 and C2 (group.protocol=classic, the
 * default assignors) share a 4-partition topic; a consumer-protocol member N1 joins (the classic
 * group becomes a consumer group with C1 and C2 in it; describeConsumerGroups must say CONSUMER
 * and tell the classic members, upgraded false, from N1, upgraded true); then C1 leaves as N2
 * joins, and C2 leaves: describeConsumerGroups must say CONSUMER. Then the way back: classic K1
 * joins as N1 leaves, classic K2 joins as N2 leaves; the last consumer-protocol member leaving
 * turns the group back into a classic one (CLASSIC).
 *
 * A record is produced every few polls all along; the consumers, polled in turn from this
 * thread, commitSync what they read (a commit refused during a rebalance is only reported).
 * Every record produced must be read by some member (at least once: none lost), and no partition
 * may be held by two members at once, as their rebalance listeners report what they hold. Each
 * step waits until the members present hold every partition between them, each some.
 */
final class MigrationScenario implements Scenario {
    private static final int PARTITIONS = 4;
    private static final Duration POLL = Duration.ofMillis(50);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(8);
    /** Partitions move at the consumer-protocol members' heartbeats (5 s apart by Kafka's default). */
    private static final long STEP_TIMEOUT_MS = 25_000;
    private static final long SCENARIO_BUDGET_MS = 80_000;
    /** One record is produced every this many rounds of polls. */
    private static final int PRODUCE_EVERY = 4;

    private static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    private final long started = System.nanoTime();
    private final Map<String, KafkaConsumer<byte[], byte[]>> consumers = new LinkedHashMap<>();
    private final Map<String, Set<Integer>> held = new LinkedHashMap<>();
    private final Set<Integer> seen = new HashSet<>();
    private final List<String> problems = new ArrayList<>();
    private String bootstrap;
    private String topic;
    private String groupId;
    private KafkaProducer<byte[], byte[]> producer;
    private int produced;
    private int rounds;
    private int refusedCommits;

    @Override
    public boolean run(String bootstrap) throws Exception {
        this.bootstrap = bootstrap;
        String stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        topic = "compat-migration-java-" + stamp;
        groupId = "compat-migration-java-" + stamp;
        try {
            steps();
            return problems.isEmpty();
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
            for (String p : problems) {
                System.out.println("problem: " + p);
            }
        }
    }

    private void steps() throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all()
                    .get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            log("topic " + topic + " with " + PARTITIONS + " partitions; group " + groupId);
            producer = Clients.producer(bootstrap, "none");

            start("C1", false);
            start("C2", false);
            waitForSplit("C1", "C2");
            expectType(admin, GroupType.CLASSIC, "two classic members");

            // Rolling upgrade: each classic member is replaced by one of the consumer protocol.
            start("N1", true);
            waitFor("N1 holding partitions beside C1 and C2", () -> !holds("N1").isEmpty() && coverAll("C1", "C2", "N1"));
            ConsumerGroupDescription mixed = expectType(admin, GroupType.CONSUMER, "N1 joined the classic group");
            Map<String, Boolean> upgraded = new LinkedHashMap<>();
            for (MemberDescription m : mixed.members()) {
                upgraded.put(m.clientId().replaceFirst("^.*-", ""), m.upgraded().orElse(null));
            }
            log("mixed group members, upgraded: " + upgraded);
            if (!Boolean.FALSE.equals(upgraded.get("C1")) || !Boolean.FALSE.equals(upgraded.get("C2")) || !Boolean.TRUE.equals(upgraded.get("N1"))) {
                throw new Failure("describeConsumerGroups should show C1 and C2 as classic members and N1 as upgraded: " + upgraded);
            }
            // C1 makes way for N2 at the same time.
            leave("C1");
            start("N2", true);
            waitFor("N2 holding partitions beside C2 and N1", () -> !holds("N2").isEmpty() && coverAll("C2", "N1", "N2"));
            leave("C2");
            waitForSplit("N1", "N2");
            expectType(admin, GroupType.CONSUMER, "after the rolling upgrade");

            // Rolling downgrade: back to classic members; the last consumer-protocol member leaving ends the consumer group.
            start("K1", false);
            leave("N1");
            waitForSplit("N2", "K1");
            start("K2", false);
            leave("N2");
            waitForSplit("K1", "K2");
            expectType(admin, GroupType.CLASSIC, "after the rolling downgrade");

            producer.flush();
            int last = produced;
            waitFor("every one of the " + last + " records produced read by some member", () -> {
                for (int i = 0; i < last; i++) {
                    if (!seen.contains(i)) {
                        return false;
                    }
                }
                return true;
            });
            log("all " + last + " records read (" + refusedCommits + " commits refused during rebalances); "
                    + msSince(started) + " ms in all");
        }
    }

    private void start(String name, boolean consumerProtocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "gregor-compat-java-mig-" + name);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, consumerProtocol ? "consumer" : "classic");
        if (!consumerProtocol) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
        }
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 20_000);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        held.put(name, new TreeSet<>());
        consumers.put(name, c);
        c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
                partitions.forEach(tp -> held.get(name).remove(tp.partition()));
            }

            @Override
            public void onPartitionsLost(java.util.Collection<TopicPartition> partitions) {
                partitions.forEach(tp -> held.get(name).remove(tp.partition()));
            }

            @Override
            public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
                for (TopicPartition tp : partitions) {
                    for (Map.Entry<String, Set<Integer>> e : held.entrySet()) {
                        if (!e.getKey().equals(name) && e.getValue().contains(tp.partition())) {
                            problems.add(name + " was given partition " + tp.partition() + " while " + e.getKey() + " still held it");
                        }
                    }
                    held.get(name).add(tp.partition());
                }
            }
        });
        log(name + " starts (" + (consumerProtocol ? "consumer" : "classic") + " protocol)");
    }

    private void leave(String name) {
        long at = System.nanoTime();
        consumers.remove(name).close(CLOSE_TIMEOUT);
        held.remove(name);
        log(name + " left (" + msSince(at) + " ms)");
    }

    /** One round: a record produced now and then, and every member polled once, committing what it read. */
    private void round() {
        if (rounds++ % PRODUCE_EVERY == 0) {
            int i = produced++;
            producer.send(new ProducerRecord<>(topic, ("k" + i).getBytes(StandardCharsets.UTF_8), ("migration-" + i).getBytes(StandardCharsets.UTF_8)));
        }
        for (Map.Entry<String, KafkaConsumer<byte[], byte[]>> e : consumers.entrySet()) {
            KafkaConsumer<byte[], byte[]> c = e.getValue();
            ConsumerRecords<byte[], byte[]> records = c.poll(POLL);
            if (records.isEmpty()) {
                continue;
            }
            Map<TopicPartition, OffsetAndMetadata> next = new LinkedHashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                String v = new String(r.value(), StandardCharsets.UTF_8);
                seen.add(Integer.parseInt(v.substring("migration-".length())));
                next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            try {
                c.commitSync(next);
            } catch (Exception ex) {
                refusedCommits++;
            }
        }
    }

    private void waitFor(String what, BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STEP_TIMEOUT_MS);
        long at = System.nanoTime();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new Failure("timed out after " + STEP_TIMEOUT_MS + " ms waiting for " + what + "; held: " + held);
            }
            if (msSince(started) > SCENARIO_BUDGET_MS) {
                throw new Failure("scenario budget of " + SCENARIO_BUDGET_MS + " ms spent waiting for " + what + "; held: " + held);
            }
            round();
        }
        log(what + " after " + msSince(at) + " ms; held: " + held);
    }

    private void waitForSplit(String a, String b) {
        waitFor(a + " and " + b + " holding all partitions between them, each some",
                () -> !holds(a).isEmpty() && !holds(b).isEmpty() && coverAll(a, b));
    }

    private Set<Integer> holds(String name) {
        return held.getOrDefault(name, Set.of());
    }

    private boolean coverAll(String... names) {
        Set<Integer> all = new TreeSet<>();
        for (String n : names) {
            all.addAll(holds(n));
        }
        return all.size() == PARTITIONS;
    }

    private ConsumerGroupDescription expectType(Admin admin, GroupType type, String when) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(groupId)).all()
                .get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(groupId);
        log(when + ": describeConsumerGroups says type " + d.type() + ", state " + d.groupState() + ", " + d.members().size() + " members");
        if (d.type() != type) {
            throw new Failure(when + ": the group should be of type " + type + ", describeConsumerGroups says " + d.type());
        }
        return d;
    }

    private static long msSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }

    private void log(String message) {
        System.out.println("[" + msSince(started) + " ms] " + message);
    }
}
