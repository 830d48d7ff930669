package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Share groups (KIP-932) with KafkaShareConsumers, all polled in turn from this thread, every
 * delivery (record, consumer, delivery count, time) and every acknowledgement the broker confirmed
 * (each consumer's AcknowledgementCommitCallback) kept per record.
 *
 * Group G gets share.auto.offset.reset=earliest, share.record.lock.duration.ms=15000 (the least
 * Kafka's default group.share.min.record.lock.duration.ms allows) and share.delivery.count.limit=3
 * through incrementalAlterConfigs on the GROUP resource, before any member joins. Topics PLAIN
 * (3 partitions), ACKS (1) and LOCK (1):
 * - H (explicit acknowledgement) alone subscribes to LOCK, where HOLD records wait; it polls until
 *   it gets some and is then never polled again, so they stay acquired, unacknowledged.
 * - A (implicit acknowledgement) subscribes to PLAIN; B (explicit) to PLAIN and ACKS. Once the
 *   group gives both partitions of PLAIN, PLAIN records are produced: each must be delivered once,
 *   with delivery count 1, to A or B, and acknowledged once (A by its next poll, B with ACCEPT).
 * - In ACKS B accepts some records, releases others once (redelivered with count 2, then
 *   accepted), releases others every time (delivered with counts 1, 2, 3 and never again: the
 *   limit archives them) and rejects others (never delivered again).
 * - Once H holds its records, B subscribes to LOCK too: it must get each record H held only after
 *   H's acquisition lock ran out (at least the lock duration after H got it, less a margin), with
 *   delivery count 2.
 * Nothing may arrive in a quiet period after that; describeShareGroups shows G Stable with the
 * three members, listShareGroupOffsets lag 0 for every partition; once the
 * three are closed, G is Empty.
 *
 * Then a restart. Topic RESTART (1 partition) and a group G2 (configured as G) picked so that
 * Kafka's rule puts G2's share-partition state for RESTART-0 (partition abs(hash("G2:topicId:0"))
 * of __share_group_state) on the broker that leads RESTART-0: killing that one broker loses both
 * the share-partition in memory and the coordinator that persisted it. Q (explicit) gets the
 * records, accepts those below KEEP (commitSync must confirm), and holds the rest unacknowledged.
 * The broker is killed and started again through the matrix's control endpoint
 * (COMPAT_CLUSTER_CONTROL); a new consumer Q2 (implicit) must then get every record Q did not have
 * accepted, each once, and none that it had; G2's lag must end at 0.
 */
final class ShareGroupScenario implements Scenario {
    private static final int PLAIN_PARTITIONS = 3;
    private static final int PLAIN = 60;
    private static final int HOLD = 5;
    private static final int RESTART = 20;
    /** Q accepts records restart-0 .. restart-(KEEP-1) before the restart and holds the others. */
    private static final int KEEP = 10;
    private static final int LOCK_MS = 15_000;
    private static final int DELIVERY_LIMIT = 3;
    /** The acquisition lock runs from when the broker acquired the records, a little before H got them. */
    private static final long LOCK_MARGIN_MS = 2_000;
    private static final long QUIET_MS = 3_000;
    /** Share groups assign at heartbeats, 5 s apart by default (group.share.min.heartbeat.interval.ms is 5 s). */
    private static final long ASSIGN_TIMEOUT_MS = 25_000;
    private static final long CONSUME_TIMEOUT_MS = 20_000;
    private static final long SETTLE_MS = 8_000;
    private static final Duration POLL = Duration.ofMillis(100);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration KILL_TIMEOUT = Duration.ofSeconds(20);
    /** A reference Kafka node is ready again in about 30 s on a 2-core machine. */
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    /** After the kill: the broker back (single broker) or the partition's new leader loaded, then Q2's assignment. */
    private static final long AFTER_RESTART_TIMEOUT_MS = 70_000;
    /** The whole scenario; run allows a little more (SHARE_GROUP_TIMEOUT_S), the matrix more still. */
    private static final long BUDGET_MS = 140_000;
    private static final String STATE_TOPIC = "__share_group_state";
    private static final Pattern VALUE = Pattern.compile("share-([a-z0-9]+)-(\\d+)");

    /** A check that did not hold. */
    private static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    /** One delivery of a record to a consumer. */
    private record Delivery(String consumer, int deliveryCount, long atNanos) {
        @Override
        public String toString() {
            return consumer + "#" + deliveryCount;
        }
    }

    private final long started = System.nanoTime();
    private final List<String> problems = new ArrayList<>();
    private final Map<String, KafkaShareConsumer<byte[], byte[]>> consumers = new LinkedHashMap<>();
    /** Consumers polled by pollAll(); the others are left holding what they have. */
    private final Set<String> polled = new TreeSet<>();
    /** record name ("share-plain-7") -> where it was written. */
    private final Map<String, RecordMetadata> produced = new HashMap<>();
    /** "topic/partition/offset" -> record name. */
    private final Map<String, String> byPosition = new HashMap<>();
    private final Map<String, List<Delivery>> deliveries = new HashMap<>();
    /** record name -> consumers whose acknowledgement of it the broker confirmed, in order. */
    private final Map<String, List<String>> acked = new HashMap<>();
    /** Acknowledgements the broker refused, per consumer. */
    private final Map<String, List<String>> ackErrors = new HashMap<>();
    /** Consumers whose refused acknowledgements are expected (they held records past a lock or a restart). */
    private final Set<String> refusalsExpected = new TreeSet<>();
    private String bootstrap;
    private String stamp;
    private KafkaProducer<byte[], byte[]> producer;
    private Admin admin;

    @Override
    public boolean run(String bootstrap) throws Exception {
        this.bootstrap = bootstrap;
        stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        try {
            admin = Clients.admin(bootstrap);
            producer = Clients.producer(bootstrap, "none");
            steps();
            return true;
        } catch (Failure f) {
            System.out.println("problem: " + f.getMessage());
            return false;
        } finally {
            for (String name : new ArrayList<>(consumers.keySet())) {
                close(name, false);
            }
            if (producer != null) {
                producer.close(Duration.ofSeconds(2));
            }
            if (admin != null) {
                admin.close(Duration.ofSeconds(2));
            }
        }
    }

    private void steps() throws Exception {
        String group = "compat-share-java-" + stamp;
        String plain = "compat-share-plain-" + stamp;
        String acks = "compat-share-acks-" + stamp;
        String lock = "compat-share-lock-" + stamp;
        createTopic(plain, PLAIN_PARTITIONS);
        createTopic(acks, 1);
        createTopic(lock, 1);
        configureGroup(group);
        log("group " + group + "; topics " + plain + " (" + PLAIN_PARTITIONS + " partitions), " + acks + ", " + lock);

        // H first, alone on LOCK, where the HOLD records already are.
        produce(lock, 0, "hold", 0, HOLD);
        start("H", group, true, List.of(lock));
        start("A", group, false, List.of(plain));
        start("B", group, true, List.of(plain, acks));
        produce(acks, 0, "accept", 0, 3);
        produce(acks, 0, "releaseonce", 0, 2);
        produce(acks, 0, "releasealways", 0, 2);
        produce(acks, 0, "reject", 0, 2);

        waitFor("H getting the " + HOLD + " records of " + lock, ASSIGN_TIMEOUT_MS,
                () -> countDelivered("hold", HOLD, "H") > 0, () -> "H got none yet");
        polled.remove("H");
        refusalsExpected.add("H");
        Set<String> heldByH = names("hold", HOLD).stream().filter(n -> deliveredTo(n, "H")).collect(Collectors.toCollection(TreeSet::new));
        long heldAt = deliveries.get(heldByH.iterator().next()).get(0).atNanos();
        Optional<Integer> lockTimeout = consumers.get("H").acquisitionLockTimeoutMs();
        log("H holds " + heldByH + " unacknowledged and is no longer polled; its acquisitionLockTimeoutMs() is " + lockTimeout);
        if (lockTimeout.isEmpty() || lockTimeout.get() != LOCK_MS) {
            throw new Failure("H's acquisitionLockTimeoutMs() is " + lockTimeout + ", expected the group's share.record.lock.duration.ms "
                    + LOCK_MS);
        }
        consumers.get("B").subscribe(List.of(plain, acks, lock));
        log("B subscribes to " + lock + " as well");

        waitFor("A and B both assigned partitions of " + plain, ASSIGN_TIMEOUT_MS, () -> {
            Map<String, Set<Integer>> held = assignment(group, plain);
            return held.getOrDefault("A", Set.of()).size() > 0 && held.getOrDefault("B", Set.of()).size() > 0;
        }, () -> "describeShareGroups: " + assignment(group, plain));
        log("assignment of " + plain + ": " + assignment(group, plain));
        produceKeyed(plain, "plain", PLAIN);

        waitFor("every " + plain + " record delivered", CONSUME_TIMEOUT_MS, () -> countDelivered("plain", PLAIN, null) == PLAIN,
                () -> countDelivered("plain", PLAIN, null) + " of " + PLAIN);
        waitFor("the records of " + acks + " settled", CONSUME_TIMEOUT_MS, this::acksSettled, this::acksState);
        long lockWait = LOCK_MS + ASSIGN_TIMEOUT_MS;
        waitFor("B getting every record of " + lock + " (those H held once its lock ran out)", lockWait,
                () -> countDelivered("hold", HOLD, "B") == HOLD, () -> deliveriesOf(names("hold", HOLD)).toString());
        commitAll("A", "B");
        quiet();

        checkPlain();
        checkAcks();
        checkLock(heldByH, heldAt);
        expectAcked(names("plain", PLAIN), 1);

        ShareGroupDescription g = describe(group);
        Map<String, String> members = g.members().stream()
                .collect(Collectors.toMap(ShareMemberDescription::clientId, m -> m.consumerId() + " epoch " + m.memberEpoch()
                        + " " + m.assignment().topicPartitions().stream().map(TopicPartition::toString).sorted().toList(), (a, b) -> a + "; " + b,
                        TreeMap::new));
        log("describeShareGroups " + group + ": " + g.groupState() + ", epoch " + g.groupEpoch() + ", coordinator " + g.coordinator().id()
                + ", members " + members);
        Set<String> wantClients = new TreeSet<>(List.of(clientId("A"), clientId("B"), clientId("H")));
        if (g.groupState() != GroupState.STABLE || !members.keySet().equals(wantClients)) {
            throw new Failure("describeShareGroups " + group + ": " + g.groupState() + " with members " + members.keySet() + ", expected Stable with "
                    + wantClients);
        }
        for (ShareMemberDescription m : g.members()) {
            if (!m.host().equals("/127.0.0.1") || m.memberEpoch() <= 0) {
                throw new Failure("describeShareGroups: member " + m + ", expected host /127.0.0.1 and an epoch above 0");
            }
        }
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < PLAIN_PARTITIONS; p++) {
            all.add(new TopicPartition(plain, p));
        }
        all.add(new TopicPartition(acks, 0));
        all.add(new TopicPartition(lock, 0));
        expectNothingLeft(group, all);

        for (String name : List.of("A", "B", "H")) {
            close(name, true);
        }
        settle("describeShareGroups " + group + " after its members closed", () -> {
            ShareGroupDescription d = describe(group);
            return d.groupState() == GroupState.EMPTY && d.members().isEmpty() ? null
                    : d.groupState() + " with " + d.members().size() + " members";
        });
        log("describeShareGroups " + group + ": Empty, no members, once A, B and H closed");

        restart();
    }

    // ---------------------------------------------------------------------------------------------
    // The restart

    private void restart() throws Exception {
        ClusterControl control = ClusterControl.fromEnv();
        String topic = "compat-share-restart-" + stamp;
        TopicDescription state = waitForLeaders(STATE_TOPIC, -1);
        int statePartitions = state.partitions().size();
        Map<Integer, Integer> stateLeaders = new TreeMap<>();
        for (TopicPartitionInfo p : state.partitions()) {
            stateLeaders.put(p.partition(), p.leader() == null || p.leader().isEmpty() ? -1 : p.leader().id());
        }
        // The partition is led by a broker that leads partitions of __share_group_state too (after earlier
        // restarts some brokers may lead none): its first replica is the first such broker.
        int preferred = stateLeaders.values().stream().filter(id -> id >= 0).findFirst()
                .orElseThrow(() -> new Failure(STATE_TOPIC + " has no leader: " + stateLeaders));
        List<Integer> replicas = new ArrayList<>(List.of(preferred));
        for (var node : get(admin.describeCluster().nodes(), "describeCluster")) {
            if (node.id() != preferred && replicas.size() < 3) replicas.add(node.id());
        }
        get(admin.createTopics(List.of(new NewTopic(topic, Map.of(0, replicas)))).all(), "createTopics " + topic);
        TopicDescription t = waitForLeaders(topic, 1);
        int leader = t.partitions().get(0).leader().id();
        String topicId = t.topicId().toString();
        String group = null;
        int statePartition = -1;
        for (int i = 0; i < 1000 && group == null; i++) {
            String candidate = "compat-share-java-" + stamp + "-r" + i;
            int sp = abs((candidate + ":" + topicId + ":0").hashCode()) % statePartitions;
            if (stateLeaders.get(sp) == leader) {
                group = candidate;
                statePartition = sp;
            }
        }
        if (group == null) {
            throw new Failure("no group name puts its state for " + topic + "-0 on broker " + leader + ", the partition's leader; "
                    + STATE_TOPIC + " leaders " + stateLeaders);
        }
        configureGroup(group);
        log("topic " + topic + " (id " + topicId + "), partition 0 led by broker " + leader + "; group " + group + ": its state for "
                + topic + "-0 is in " + STATE_TOPIC + "-" + statePartition + " of " + statePartitions + ", led by broker " + leader + " too");

        produce(topic, 0, "restart", 0, RESTART);
        start("Q", group, true, List.of(topic));
        // Q acknowledges as it goes, in its own loop below, and is then left holding the rest.
        polled.remove("Q");
        Set<String> keep = new TreeSet<>();
        Set<String> held = new TreeSet<>();
        waitFor("Q getting records of " + topic, ASSIGN_TIMEOUT_MS, () -> !held.isEmpty() || keep.size() == KEEP, () -> {
            return "Q got " + deliveriesOf(names("restart", RESTART)).size() + " records so far";
        }, () -> {
            for (ConsumerRecord<byte[], byte[]> r : pollOne("Q")) {
                String name = name(r);
                if (index(name) < KEEP) {
                    consumers.get("Q").acknowledge(r, AcknowledgeType.ACCEPT);
                    keep.add(name);
                } else {
                    held.add(name);
                }
            }
        });
        Map<TopicIdPartition, Optional<KafkaException>> committed = consumers.get("Q").commitSync(Duration.ofMillis(Clients.API_TIMEOUT_MS));
        if (committed.values().stream().anyMatch(Optional::isPresent)) {
            throw new Failure("Q's commitSync of its ACCEPTs of " + keep + ": " + committed);
        }
        expectAcked(keep, 1);
        refusalsExpected.add("Q");
        Set<String> notAccepted = new TreeSet<>(names("restart", RESTART));
        notAccepted.removeAll(keep);
        log("Q accepted " + keep.size() + " records (confirmed) and holds " + held.size() + " unacknowledged: " + held
                + "; it is no longer polled");

        long killedAt = System.nanoTime();
        CompletableFuture<Void> restarting;
        String q2Bootstrap = bootstrap;
        if (control == null) {
            log(ClusterControl.ENV + " is not set: broker " + leader + " is not restarted");
            restarting = CompletableFuture.completedFuture(null);
        } else {
            List<ClusterControl.Broker> brokers = control.brokers();
            if (brokers.stream().noneMatch(b -> b.id() == leader)) {
                throw new Failure("broker " + leader + " is not one the control endpoint has: " + brokers);
            }
            // Q2 must reach the cluster while broker `leader` (perhaps the one given) is down.
            q2Bootstrap = brokers.stream().map(ClusterControl.Broker::bootstrap).collect(Collectors.joining(","));
            try {
                control.kill(leader, KILL_TIMEOUT);
            } catch (Exception e) {
                throw new Failure("killing broker " + leader + " through " + control.base() + ": " + Errors.describe(e));
            }
            killedAt = System.nanoTime();
            log("broker " + leader + " killed; starting it again");
            restarting = CompletableFuture.runAsync(() -> {
                try {
                    control.start(leader, START_TIMEOUT);
                } catch (Exception e) {
                    throw new CompletionException(e);
                }
            });
        }
        final long killed = killedAt;
        startWith("Q2", group, false, List.of(topic), q2Bootstrap);
        CompletableFuture<Void> restart = restarting;
        waitFor("Q2 getting the " + notAccepted.size() + " records Q had not had accepted", AFTER_RESTART_TIMEOUT_MS,
                () -> notAccepted.stream().allMatch(n -> deliveredTo(n, "Q2")),
                () -> "Q2 got " + deliveriesOf(notAccepted) + (restart.isDone() ? "" : "; the broker is not running again yet"));
        long gotAt = System.nanoTime();
        waitFor("broker " + leader + " running again", START_TIMEOUT.toMillis() + 5_000, restart::isDone, () -> "still starting");
        try {
            restart.join();
        } catch (CompletionException e) {
            throw new Failure("starting broker " + leader + " again: " + Errors.describe(e.getCause()));
        }
        log("Q2 got them " + (gotAt - killed) / 1_000_000 + " ms after the kill; the broker was running again "
                + (System.nanoTime() - killed) / 1_000_000 + " ms after it");
        commitAll("Q2");
        quiet();

        List<String> again = keep.stream().filter(n -> deliveries.get(n).size() != 1).map(n -> n + " " + deliveries.get(n)).toList();
        if (!again.isEmpty()) {
            throw new Failure("records Q had accepted (confirmed by the broker) were delivered again after the restart: " + again);
        }
        List<String> twice = notAccepted.stream().filter(n -> deliveries.get(n).stream().filter(d -> d.consumer().equals("Q2")).count() != 1)
                .map(n -> n + " " + deliveries.get(n)).toList();
        if (!twice.isEmpty()) {
            throw new Failure("Q2 got records other than once each: " + twice);
        }
        expectAcked(notAccepted, "Q2", 1);
        // Kafka persists a record's delivery count with acknowledgements and lock expiries, not with
        // its acquisition: what the killed leader had handed to Q comes back as a first delivery.
        Map<Integer, Long> counts = new TreeMap<>();
        for (String n : held) {
            counts.merge(last(n).deliveryCount(), 1L, Long::sum);
        }
        if (!counts.keySet().equals(Set.of(1))) {
            throw new Failure("after the restart the records Q held came to Q2 with delivery counts " + counts
                    + " (delivery count -> records), expected 1 for all: their acquisition by Q was not persisted");
        }
        log("after the restart Q2 got every record Q had not had accepted once each (" + notAccepted.size() + "); the "
                + held.size() + " Q held came with delivery count 1, their acquisition by Q forgotten with the broker");
        ShareGroupDescription g = describe(group);
        log("describeShareGroups " + group + ": " + g.groupState() + ", coordinator " + g.coordinator().id() + ", "
                + g.members().size() + " members " + g.members().stream().map(ShareMemberDescription::clientId).sorted().toList());
        expectNothingLeft(group, List.of(new TopicPartition(topic, 0)));
    }

    // ---------------------------------------------------------------------------------------------
    // The checks of group G

    private void checkPlain() {
        Map<String, Integer> per = new TreeMap<>();
        List<String> wrong = new ArrayList<>();
        for (String n : names("plain", PLAIN)) {
            List<Delivery> ds = deliveries.get(n);
            if (ds.size() != 1 || ds.get(0).deliveryCount() != 1) {
                wrong.add(n + " " + ds);
                continue;
            }
            per.merge(ds.get(0).consumer(), 1, Integer::sum);
        }
        if (!wrong.isEmpty()) {
            throw new Failure("plain records not delivered exactly once with delivery count 1: " + wrong.stream().limit(10).toList());
        }
        if (per.getOrDefault("A", 0) == 0 || per.getOrDefault("B", 0) == 0) {
            throw new Failure("the " + PLAIN + " plain records went to " + per + ", expected both A and B to get some");
        }
        log("plain: each of the " + PLAIN + " records delivered once with delivery count 1 (" + per + ") and acknowledged once");
    }

    /** accept: [1]; releaseonce: [1, 2]; releasealways: [1, 2, 3] (the limit); reject: [1]; all to B. */
    private void checkAcks() {
        List<String> wrong = new ArrayList<>();
        expectCounts("accept", 3, List.of(1), 1, wrong);
        expectCounts("releaseonce", 2, List.of(1, 2), 2, wrong);
        List<Integer> always = new ArrayList<>();
        for (int c = 1; c <= DELIVERY_LIMIT; c++) {
            always.add(c);
        }
        expectCounts("releasealways", 2, always, DELIVERY_LIMIT, wrong);
        expectCounts("reject", 2, List.of(1), 1, wrong);
        if (!wrong.isEmpty()) {
            throw new Failure("acks topic:\n  " + String.join("\n  ", wrong));
        }
        log("acks: accepted records delivered once; released once: delivery counts 1, 2, then accepted; released every time: "
                + always + " and never again (share.delivery.count.limit " + DELIVERY_LIMIT + "); rejected: delivered once");
    }

    private void expectCounts(String set, int n, List<Integer> counts, int acks, List<String> wrong) {
        for (String name : names(set, n)) {
            List<Delivery> ds = deliveries.getOrDefault(name, List.of());
            List<Integer> got = ds.stream().map(Delivery::deliveryCount).toList();
            if (!got.equals(counts) || ds.stream().anyMatch(d -> !d.consumer().equals("B"))) {
                wrong.add(name + ": delivered " + ds + ", expected to B with delivery counts " + counts);
            }
            List<String> by = acked.getOrDefault(name, List.of());
            if (by.size() != acks || by.stream().anyMatch(c -> !c.equals("B"))) {
                wrong.add(name + ": acknowledgements confirmed " + by + ", expected " + acks + " by B");
            }
        }
    }

    private void checkLock(Set<String> heldByH, long heldAt) {
        List<String> wrong = new ArrayList<>();
        long earliest = Long.MAX_VALUE;
        for (String n : names("hold", HOLD)) {
            List<Delivery> ds = deliveries.get(n);
            List<Delivery> toB = ds.stream().filter(d -> d.consumer().equals("B")).toList();
            if (toB.size() != 1) {
                wrong.add(n + ": delivered " + ds + ", expected once to B");
                continue;
            }
            if (heldByH.contains(n)) {
                long after = (toB.get(0).atNanos() - heldAt) / 1_000_000;
                earliest = Math.min(earliest, after);
                if (!ds.toString().equals("[H#1, B#2]")) {
                    wrong.add(n + ": delivered " + ds + ", expected [H#1, B#2]");
                }
                if (after < LOCK_MS - LOCK_MARGIN_MS) {
                    wrong.add(n + ": delivered to B " + after + " ms after H got it, before H's " + LOCK_MS + " ms lock ran out");
                }
            }
        }
        if (!wrong.isEmpty()) {
            throw new Failure("lock topic:\n  " + String.join("\n  ", wrong));
        }
        expectAcked(names("hold", HOLD), "B", 1);
        log("lock: the " + heldByH.size() + " records H held unacknowledged went to B with delivery count 2, the first "
                + earliest + " ms after H got them (lock " + LOCK_MS + " ms); B accepted each once");
    }

    private void expectAcked(Collection<String> names, int times) {
        List<String> wrong = names.stream().filter(n -> acked.getOrDefault(n, List.of()).size() != times)
                .map(n -> n + " " + acked.getOrDefault(n, List.of())).toList();
        if (!wrong.isEmpty()) {
            throw new Failure("acknowledgements confirmed other than " + times + " time(s): " + wrong.stream().limit(10).toList());
        }
    }

    private void expectAcked(Collection<String> names, String by, int times) {
        expectAcked(names, times);
        List<String> wrong = names.stream().filter(n -> !acked.get(n).stream().allMatch(by::equals)).toList();
        if (!wrong.isEmpty()) {
            throw new Failure("acknowledged by another consumer than " + by + ": " + wrong.stream().map(n -> n + " " + acked.get(n)).toList());
        }
    }

    private boolean acksSettled() {
        return countDelivered("accept", 3, "B") == 3 && names("releaseonce", 2).stream().allMatch(n -> lastCount(n) >= 2)
                && names("releasealways", 2).stream().allMatch(n -> lastCount(n) >= DELIVERY_LIMIT)
                && countDelivered("reject", 2, "B") == 2;
    }

    private String acksState() {
        List<String> all = new ArrayList<>();
        for (String set : List.of("accept", "releaseonce", "releasealways", "reject")) {
            all.addAll(names(set, set.equals("accept") ? 3 : 2));
        }
        return deliveriesOf(all).toString();
    }

    /**
     * Every partition's lag is 0 (every record acknowledged or archived) and its start offset at most
     * its end offset (retried while acknowledgements are written). Kafka reports the start offset
     * last persisted in __share_group_state, which is written with each acknowledgement and so
     * can trail the records that acknowledgement completed: it is printed, not pinned.
     */
    private void expectNothingLeft(String group, List<TopicPartition> partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = partitions.stream().collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest()));
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = get(admin.listOffsets(latest).all(), "listOffsets");
        String[] last = new String[1];
        settle("listShareGroupOffsets " + group, () -> {
            Map<TopicPartition, SharePartitionOffsetInfo> got;
            try {
                got = admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(partitions)))
                        .partitionsToOffsetInfo(group).get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                return "listShareGroupOffsets: " + Errors.describe(e);
            }
            List<String> off = new ArrayList<>();
            StringBuilder seen = new StringBuilder();
            for (TopicPartition tp : partitions) {
                SharePartitionOffsetInfo info = got.get(tp);
                long end = ends.get(tp).offset();
                seen.append(seen.length() == 0 ? "" : ", ").append(tp).append(" start ").append(info == null ? "none" : info.startOffset())
                        .append(" lag ").append(info == null ? "none" : info.lag().map(String::valueOf).orElse("none")).append(" end ").append(end);
                if (info == null || info.startOffset() < 0 || info.startOffset() > end || !info.lag().equals(Optional.of(0L))) {
                    off.add(tp.toString());
                }
            }
            last[0] = seen.toString();
            return off.isEmpty() ? null : "expected lag 0 and a start offset from 0 to the end offset for each of " + off + ": " + seen;
        });
        log("listShareGroupOffsets " + group + ": " + last[0]);
    }

    // ---------------------------------------------------------------------------------------------
    // Consumers

    private static String clientId(String name) {
        return "gregor-compat-java-share-" + name;
    }

    private void start(String name, String group, boolean explicit, List<String> topics) {
        startWith(name, group, explicit, topics, bootstrap);
    }

    private void startWith(String name, String group, boolean explicit, List<String> topics, String servers) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId(name));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, explicit ? "explicit" : "implicit");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        p.put(ConsumerConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, 5_000);
        p.put(ConsumerConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS_CONFIG, 5_000);
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        c.setAcknowledgementCommitCallback((offsets, error) -> offsets.forEach((tip, set) -> {
            for (long o : set) {
                String n = byPosition.getOrDefault(tip.topic() + "/" + tip.partition() + "/" + o, tip + "@" + o);
                if (error == null) {
                    acked.computeIfAbsent(n, k -> new ArrayList<>()).add(name);
                } else {
                    ackErrors.computeIfAbsent(name, k -> new ArrayList<>()).add(n + ": " + Errors.describe(error));
                    if (!refusalsExpected.contains(name)) {
                        problem(name + "'s acknowledgement of " + n + " refused: " + Errors.describe(error));
                    }
                }
            }
        }));
        c.subscribe(topics);
        consumers.put(name, c);
        polled.add(name);
        log(name + " (" + (explicit ? "explicit" : "implicit") + " acknowledgement) subscribes to " + topics);
    }

    /** One poll of one consumer; its records are noted as deliveries. */
    private List<ConsumerRecord<byte[], byte[]>> pollOne(String name) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try {
            for (ConsumerRecord<byte[], byte[]> r : consumers.get(name).poll(POLL)) {
                deliver(name, r);
                out.add(r);
            }
        } catch (Exception e) {
            problem(name + " poll: " + Errors.describe(e));
        }
        return out;
    }

    /** Each polled consumer polls once; B acknowledges what it got, as its record's name says. */
    private void pollAll() {
        for (String name : new ArrayList<>(polled)) {
            KafkaShareConsumer<byte[], byte[]> c = consumers.get(name);
            for (ConsumerRecord<byte[], byte[]> r : pollOne(name)) {
                if (!name.equals("B")) {
                    continue;
                }
                String n = name(r);
                String set = n.substring("share-".length(), n.lastIndexOf('-'));
                int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                AcknowledgeType type = switch (set) {
                    case "releaseonce" -> count == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                    case "releasealways" -> AcknowledgeType.RELEASE;
                    case "reject" -> AcknowledgeType.REJECT;
                    default -> AcknowledgeType.ACCEPT;
                };
                c.acknowledge(r, type);
            }
        }
    }

    private void deliver(String consumer, ConsumerRecord<byte[], byte[]> r) {
        String n = name(r);
        RecordMetadata where = produced.get(n);
        if (where == null) {
            problem(consumer + " got " + n + " at " + r.topic() + "-" + r.partition() + "@" + r.offset() + ", not a record produced here");
            return;
        }
        if (!where.topic().equals(r.topic()) || where.partition() != r.partition() || where.offset() != r.offset()) {
            problem(consumer + " got " + n + " at " + r.topic() + "-" + r.partition() + "@" + r.offset() + "; it was written at "
                    + where.topic() + "-" + where.partition() + "@" + where.offset());
        }
        if (r.deliveryCount().isEmpty()) {
            problem(consumer + " got " + n + " without a delivery count");
        }
        int count = r.deliveryCount().map(Short::intValue).orElse(-1);
        deliveries.computeIfAbsent(n, k -> new ArrayList<>()).add(new Delivery(consumer, count, System.nanoTime()));
    }

    private String name(ConsumerRecord<byte[], byte[]> r) {
        return r.value() == null ? "null" : new String(r.value(), StandardCharsets.UTF_8);
    }

    private void commitAll(String... names) {
        for (String name : names) {
            try {
                Map<TopicIdPartition, Optional<KafkaException>> result = consumers.get(name).commitSync(Duration.ofMillis(Clients.API_TIMEOUT_MS));
                result.forEach((tip, err) -> err.ifPresent(e -> problem(name + " commitSync " + tip + ": " + Errors.describe(e))));
            } catch (Exception e) {
                problem(name + " commitSync: " + Errors.describe(e));
            }
        }
        expectNoProblems();
    }

    /** Polls for QUIET_MS: nothing may be delivered meanwhile. */
    private void quiet() {
        int before = deliveries.values().stream().mapToInt(List::size).sum();
        long t0 = System.nanoTime();
        while (msSince(t0) < QUIET_MS) {
            pollAll();
            expectNoProblems();
        }
        int after = deliveries.values().stream().mapToInt(List::size).sum();
        if (after != before) {
            List<String> late = deliveries.entrySet().stream().filter(e -> e.getValue().get(e.getValue().size() - 1).atNanos() >= t0)
                    .map(e -> e.getKey() + " " + e.getValue()).sorted().toList();
            throw new Failure("delivered in the " + QUIET_MS + " ms after everything was settled: " + late);
        }
    }

    private void close(String name, boolean strict) {
        KafkaShareConsumer<byte[], byte[]> c = consumers.remove(name);
        polled.remove(name);
        if (c == null) {
            return;
        }
        try {
            c.close(CLOSE_TIMEOUT);
        } catch (Exception e) {
            if (strict) {
                throw new Failure(name + " close: " + Errors.describe(e));
            }
            System.out.println("cleanup: closing " + name + ": " + Errors.describe(e));
        }
        if (strict) {
            expectNoProblems();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Records

    private static List<String> names(String set, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add("share-" + set + "-" + i);
        }
        return out;
    }

    private static int index(String name) {
        Matcher m = VALUE.matcher(name);
        return m.matches() ? Integer.parseInt(m.group(2)) : -1;
    }

    private int countDelivered(String set, int n, String consumer) {
        return (int) names(set, n).stream().filter(x -> consumer == null ? deliveries.containsKey(x) : deliveredTo(x, consumer)).count();
    }

    private boolean deliveredTo(String name, String consumer) {
        return deliveries.getOrDefault(name, List.of()).stream().anyMatch(d -> d.consumer().equals(consumer));
    }

    private Delivery last(String name) {
        List<Delivery> ds = deliveries.get(name);
        return ds.get(ds.size() - 1);
    }

    private int lastCount(String name) {
        List<Delivery> ds = deliveries.getOrDefault(name, List.of());
        return ds.isEmpty() ? 0 : ds.get(ds.size() - 1).deliveryCount();
    }

    private Map<String, List<Delivery>> deliveriesOf(Collection<String> names) {
        Map<String, List<Delivery>> out = new TreeMap<>();
        for (String n : names) {
            if (deliveries.containsKey(n)) {
                out.put(n, deliveries.get(n));
            }
        }
        return out;
    }

    /** Records share-set-from .. share-set-(to-1), each on its own to one partition. */
    private void produce(String topic, int partition, String set, int from, int to) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < to; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, partition, null, bytes("share-" + set + "-" + i))));
        }
        collect(futures, set, from);
    }

    /** Keyed records (the default partitioner spreads them over the topic's partitions). */
    private void produceKeyed(String topic, String set, int n) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, bytes("key-" + i), bytes("share-" + set + "-" + i))));
        }
        collect(futures, set, 0);
        Map<Integer, Long> per = produced.entrySet().stream().filter(e -> e.getKey().startsWith("share-" + set + "-"))
                .collect(Collectors.groupingBy(e -> e.getValue().partition(), TreeMap::new, Collectors.counting()));
        if (per.size() != PLAIN_PARTITIONS) {
            throw new Failure("the " + n + " keyed records went to partitions " + per.keySet() + " only");
        }
        log("produced " + n + " " + set + " records to " + topic + " (partition -> records " + per + ")");
    }

    private void collect(List<Future<RecordMetadata>> futures, String set, int from) throws Exception {
        producer.flush();
        for (int i = 0; i < futures.size(); i++) {
            String n = "share-" + set + "-" + (from + i);
            try {
                RecordMetadata md = futures.get(i).get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                produced.put(n, md);
                byPosition.put(md.topic() + "/" + md.partition() + "/" + md.offset(), n);
            } catch (ExecutionException e) {
                throw new Failure("produce " + n + ": " + Errors.describe(e));
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Admin

    private void createTopic(String topic, int partitions) throws Exception {
        // The broker's default replication factor: 3 on a cluster, so a killed broker loses no partition.
        get(admin.createTopics(List.of(new NewTopic(topic, Optional.of(partitions), Optional.empty()))).all(), "createTopics " + topic);
        waitForLeaders(topic, partitions);
    }

    /** share.auto.offset.reset=earliest, the shortest lock the broker allows, a delivery limit of 3. */
    private void configureGroup(String group) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", String.valueOf(LOCK_MS)), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("share.delivery.count.limit", String.valueOf(DELIVERY_LIMIT)), AlterConfigOp.OpType.SET));
        get(admin.incrementalAlterConfigs(Map.of(resource, ops)).all(), "incrementalAlterConfigs of group " + group);
        settle("describeConfigs of group " + group, () -> {
            Map<String, String> got;
            try {
                got = admin.describeConfigs(List.of(resource)).all().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(resource)
                        .entries().stream().filter(e -> e.name().startsWith("share.auto.offset.reset") || e.name().equals("share.record.lock.duration.ms")
                                || e.name().equals("share.delivery.count.limit"))
                        .collect(Collectors.toMap(ConfigEntry::name, ConfigEntry::value, (a, b) -> a, TreeMap::new));
            } catch (Exception e) {
                return Errors.describe(e);
            }
            Map<String, String> want = new TreeMap<>(Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms",
                    String.valueOf(LOCK_MS), "share.delivery.count.limit", String.valueOf(DELIVERY_LIMIT)));
            return got.equals(want) ? null : "got " + got + ", expected " + want;
        });
    }

    private ShareGroupDescription describe(String group) {
        try {
            return admin.describeShareGroups(List.of(group)).all().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(group);
        } catch (Exception e) {
            throw new Failure("describeShareGroups " + group + ": " + Errors.describe(e));
        }
    }

    /** Member client id's letter -> partitions of topic it is assigned. */
    private Map<String, Set<Integer>> assignment(String group, String topic) {
        Map<String, Set<Integer>> out = new TreeMap<>();
        for (ShareMemberDescription m : describe(group).members()) {
            String who = m.clientId().startsWith(clientId("")) ? m.clientId().substring(clientId("").length()) : m.clientId();
            out.put(who, m.assignment().topicPartitions().stream().filter(tp -> tp.topic().equals(topic)).map(TopicPartition::partition)
                    .collect(Collectors.toCollection(TreeSet::new)));
        }
        return out;
    }

    /** Polls describeTopics until every partition has a leader (partitions -1: any count). */
    private TopicDescription waitForLeaders(String topic, int partitions) throws Exception {
        long t0 = System.nanoTime();
        String seen = "nothing";
        while (msSince(t0) < SETTLE_MS) {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic);
                boolean led = d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty());
                if (led && (partitions < 0 ? !d.partitions().isEmpty() : d.partitions().size() == partitions)) {
                    return d;
                }
                seen = d.partitions().size() + " partitions, leaders " + d.partitions().stream()
                        .map(p -> p.leader() == null ? "none" : String.valueOf(p.leader().id())).toList();
            } catch (ExecutionException e) {
                seen = Errors.describe(e);
            }
            Thread.sleep(200);
        }
        throw new Failure("describeTopics " + topic + ": no leader for every partition within " + SETTLE_MS + " ms (" + seen + ")");
    }

    /** Retries check (null when it holds, else what differed) for SETTLE_MS: the broker applies some changes a moment later. */
    private void settle(String what, Supplier<String> check) throws Exception {
        long t0 = System.nanoTime();
        while (true) {
            String differs = check.get();
            if (differs == null) {
                return;
            }
            if (msSince(t0) > SETTLE_MS) {
                throw new Failure(what + ": " + differs);
            }
            Thread.sleep(250);
        }
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f, String what) throws Exception {
        try {
            return f.get(Clients.API_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new Failure(what + ": " + Errors.describe(e));
        }
    }

    // ---------------------------------------------------------------------------------------------

    private void waitFor(String what, long timeoutMs, BooleanSupplier cond, Supplier<String> state) {
        waitFor(what, timeoutMs, cond, state, this::pollAll);
    }

    /** Runs step (the polls) until cond holds; fails naming what and state after timeoutMs or when the budget is spent. */
    private void waitFor(String what, long timeoutMs, BooleanSupplier cond, Supplier<String> state, Runnable step) {
        long t0 = System.nanoTime();
        while (true) {
            expectNoProblems();
            if (cond.getAsBoolean()) {
                log(what + ": " + msSince(t0) + " ms");
                return;
            }
            if (msSince(t0) > timeoutMs) {
                throw new Failure(what + ": not within " + timeoutMs + " ms (" + state.get() + ")");
            }
            if (msSince(started) > BUDGET_MS) {
                throw new Failure(what + ": the scenario's " + BUDGET_MS + " ms ran out (" + state.get() + ")");
            }
            step.run();
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

    private static int abs(int n) {
        return n == Integer.MIN_VALUE ? 0 : Math.abs(n);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static long msSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
