package dev.gregor.compat.streams;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * streams-eos: a Kafka Streams word count with processing.guarantee=exactly_once_v2 on a cluster
 * of at least 3 brokers, with the classic rebalance protocol. streams-groups: the same word count
 * with group.protocol=streams (KIP-1071, the broker assigns the tasks and creates the internal
 * topics), on one broker or a cluster (3 replicas there), which Kafka's kafka-streams-groups tool
 * then lists and describes (members and offsets) while it runs. Every topic has 3 replicas, so the count must come out exact even when
 * a broker leading part of the input is killed in the middle (when the cluster offers a control
 * endpoint, see {@link ClusterControl}). A read_committed reader of the output keeps the latest
 * and the largest count per word: the run passes once every latest count equals the word's
 * number of occurrences in the input and no count ever went past it, down or stood still.
 */
final class StreamsEosScenario {
    static final String NAME = "streams-eos";
    static final String NAME_GROUPS = "streams-groups";

    private static final int PARTITIONS = 3;
    private static final short MAX_REPLICAS = 3;
    private static final int LINES = 3_000;
    private static final long SEED = 20_261_130L;

    /** Counting must be exact by then. */
    private static final Duration BUDGET = Duration.ofSeconds(140);
    /**
     * No call to the cluster or its control endpoint runs past this; closing Streams and the
     * clients then takes at most 19 s, inside the 200 s the run script allows.
     */
    private static final Duration LAST_CALL = Duration.ofSeconds(170);
    private static final Duration CLIENT_CLOSE = Duration.ofSeconds(3);
    private static final Duration CALL = Duration.ofSeconds(15);
    private static final Duration TOPICS_READY = Duration.ofSeconds(20);
    private static final Duration KILL_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    /**
     * The killed broker stays down at least MIN_DOWN, then until the whole input is acknowledged
     * and the count has moved on without it (so its partitions were really led elsewhere: Apache
     * Kafka fences a silent broker after broker.session.timeout.ms, 9 s by default), and at most
     * MAX_DOWN.
     */
    private static final Duration MIN_DOWN = Duration.ofSeconds(8);
    private static final Duration MAX_DOWN = Duration.ofSeconds(30);
    /**
     * A lone broker (streams-groups on one broker) is restarted after this: nothing is processed
     * while it is down, and the group must come back from what its coordinator wrote.
     */
    private static final Duration LONE_DOWN = Duration.ofSeconds(3);
    /** Reading goes on this long after the counts are exact, so a late extra increment is seen. */
    private static final Duration LINGER = Duration.ofSeconds(2);
    private static final Duration STREAMS_CLOSE = Duration.ofSeconds(10);
    private static final Duration POLL = Duration.ofMillis(200);
    private static final int ERRORS_SHOWN = 5;

    private final String bootstrap;
    private final String name;
    /** group.protocol=streams (KIP-1071) rather than the classic protocol. */
    private final boolean streamsProtocol;
    private final int minBrokers;
    private short replicas = MAX_REPLICAS;
    private String minIsr = "2";
    private final long t0 = System.nanoTime();
    private final long deadline = t0 + BUDGET.toNanos();
    private final long lastCall = t0 + LAST_CALL.toNanos();
    private final List<String> problems = new ArrayList<>();

    StreamsEosScenario(String name, String bootstrap) {
        this.bootstrap = bootstrap;
        this.name = name;
        this.streamsProtocol = name.equals(NAME_GROUPS);
        this.minBrokers = streamsProtocol ? 1 : 3;
    }

    int run() throws Exception {
        Admin admin = admin();
        try {
            Collection<Node> nodes = admin.describeCluster().nodes().get(CALL.toMillis(), TimeUnit.MILLISECONDS);
            if (nodes.size() < minBrokers) {
                System.out.println(Main.LABEL + " " + name + ": needs a cluster of at least " + minBrokers
                        + " brokers, this one has " + nodes.size() + " " + ids(nodes) + ": not applicable");
                return Main.NOT_APPLICABLE;
            }
            replicas = (short) Math.min(MAX_REPLICAS, nodes.size());
            minIsr = replicas >= 3 ? "2" : "1";
            log("cluster: " + nodes.size() + " brokers " + ids(nodes));
            return runOn(admin);
        } finally {
            admin.close(CLIENT_CLOSE);
        }
    }

    private int runOn(Admin admin) throws Exception {
        String suffix = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        String input = name + "-in-" + suffix;
        String output = name + "-out-" + suffix;
        String baseAppId = "gregor-compat-wordcount-" + suffix;

        WordText text = WordText.generate(SEED, LINES);
        log("text: " + LINES + " lines, " + text.words + " words, " + text.expected.size()
                + " distinct (seed " + SEED + ")");

        createTopics(admin, input, output);

        ClusterControl control = ClusterControl.fromEnv();
        if (control != null) {
            log("fault injection through " + ClusterControl.ENV + "=" + control.base() + ": " + control.brokers());
        } else {
            log(ClusterControl.ENV + " not set: no broker is killed");
        }
        String appId = streamsProtocol && control != null ? awayFromBootstrap(admin, control, baseAppId) : baseAppId;

        CountView view = new CountView(text.expected);
        Path stateDir = Files.createTempDirectory("gregor-compat-streams-");
        AtomicReference<KafkaStreams.State> state = new AtomicReference<>(KafkaStreams.State.CREATED);
        AtomicInteger threadErrors = new AtomicInteger();
        ClusterControl.Broker killed = null;
        boolean restarted = false;
        boolean lone = false;
        KafkaStreams streams = null;
        long streamsStarted = 0;
        long exactAt = 0;
        long killedAt = 0;
        long restartedAt = 0;
        long processedAtKill = 0;
        long linesAcked = 0;
        KafkaConsumer<String, Long> reader = null;
        InputProducer producer = null;
        boolean released = false;

        try {
            reader = outputReader(output);
            producer = new InputProducer(bootstrap, input, text.lines, deadline);
            streams = new KafkaStreams(topology(input, output), streamsConfig(appId, stateDir));
            streams.setStateListener((now, before) -> {
                state.set(now);
                log("streams state " + before + " -> " + now);
            });
            streams.setUncaughtExceptionHandler(e -> {
                if (threadErrors.incrementAndGet() <= ERRORS_SHOWN) {
                    log("stream thread failed, replacing it: " + Main.describe(e));
                }
                return StreamThreadExceptionResponse.REPLACE_THREAD;
            });
            streams.start();
            streamsStarted = System.nanoTime();
            producer.start();
            log("streams started (application.id " + appId + "); producing the first " + producer.half() + " lines");

            long firstHalfWords = text.wordsIn(0, producer.half());
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> r : reader.poll(POLL)) {
                    view.add(r);
                }
                if (producer.firstError() != null) {
                    problems.add("the input producer failed (" + producer.failed() + " lines): " + producer.firstError());
                    break;
                }
                KafkaStreams.State s = state.get();
                if (s == KafkaStreams.State.ERROR || s == KafkaStreams.State.PENDING_ERROR
                        || s == KafkaStreams.State.NOT_RUNNING) {
                    problems.add("Kafka Streams stopped: state " + s);
                    break;
                }
                if (!released && producer.firstHalfAcked() && view.processed() > 0) {
                    log(String.format(Locale.ROOT, "first half: %d lines acknowledged, %d of its %d words counted (%.0f%%)",
                            producer.half(), view.processed(), firstHalfWords, 100.0 * view.processed() / firstHalfWords));
                    if (control != null) {
                        List<ClusterControl.Broker> all = control.brokers();
                        lone = all.size() == 1 && streamsProtocol;
                        killed = lone ? all.get(0) : streamsProtocol ? pickCoordinator(admin, control, appId, input) : pickVictim(admin, control, input);
                        log("killing broker " + killed.id() + " (" + killed.bootstrap() + ")");
                        control.kill(killed.id(), left(KILL_TIMEOUT));
                        killedAt = System.nanoTime();
                        processedAtKill = view.processed();
                        log("broker " + killed.id() + " is down; producing the other " + (LINES - producer.half()) + " lines");
                    } else {
                        log("producing the other " + (LINES - producer.half()) + " lines");
                    }
                    producer.releaseSecondHalf();
                    released = true;
                }
                long down = System.nanoTime() - killedAt;
                if (killed != null && !restarted && (down >= MAX_DOWN.toNanos() || lone && down >= LONE_DOWN.toNanos()
                        || down >= MIN_DOWN.toNanos() && producer.done() && view.processed() > processedAtKill)) {
                    log("starting broker " + killed.id() + " again (input acknowledged: " + producer.acked()
                            + " of " + LINES + " lines; counted while it was down: " + (view.processed() - processedAtKill)
                            + " words, " + view.processed() + " of " + text.words + " in all)");
                    control.start(killed.id(), left(START_TIMEOUT));
                    restarted = true;
                    restartedAt = System.nanoTime();
                    log(String.format(Locale.ROOT, "broker %d is up again after %.1f s down", killed.id(),
                            (restartedAt - killedAt) / 1e9));
                }
                if (producer.done() && view.exact() && (killed == null || restarted)) {
                    exactAt = System.nanoTime();
                    log("every count is exact; reading " + LINGER.toSeconds() + " s more for late records");
                    long lingerEnd = exactAt + LINGER.toNanos();
                    while (System.nanoTime() < lingerEnd) {
                        for (ConsumerRecord<String, Long> r : reader.poll(POLL)) {
                            view.add(r);
                        }
                    }
                    if (streamsProtocol) {
                        problems.addAll(new StreamsGroupsTool(bootstrap, appId, input, this::log, lastCall).check());
                    }
                    break;
                }
            }

            if (exactAt == 0 && problems.isEmpty()) {
                problems.add("gave up after " + BUDGET.toSeconds() + " s without exact counts: input acknowledged "
                        + producer.acked() + " of " + LINES + " lines (" + producer.failed() + " failed), output "
                        + view.records() + " records, " + view.processed() + " of " + text.words
                        + " words counted, Streams state " + state.get()
                        + (released ? "" : "; the second half was never produced, since no count of the first half was committed"));
            }
            if (killed != null && !restarted) {
                restartQuietly(control, killed);
                restarted = true;
            }
            checkInternalTopics(admin, appId);
            linesAcked = producer.acked();
        } finally {
            if (killed != null && !restarted) {
                restartQuietly(control, killed);
            }
            if (streams != null) {
                long closing = System.nanoTime();
                boolean closed = streams.close(STREAMS_CLOSE);
                log(String.format(Locale.ROOT, "streams %s in %.1f s", closed ? "closed" : "not closed (timed out)",
                        (System.nanoTime() - closing) / 1e9));
            }
            if (reader != null) {
                reader.close(CLIENT_CLOSE);
            }
            if (producer != null) {
                producer.close();
            }
            deleteTree(stateDir);
        }

        List<String> mismatches = view.mismatches();
        if (!mismatches.isEmpty() && exactAt != 0) {
            problems.add("counts changed after they were exact: " + sample(mismatches));
        } else if (!mismatches.isEmpty()) {
            problems.add(mismatches.size() + " of " + text.expected.size() + " words without their exact count (latest/expected): "
                    + sample(mismatches));
        }
        List<String> overshoots = view.overshoots();
        if (!overshoots.isEmpty()) {
            problems.add(overshoots.size() + " words counted past their total (max/expected): " + sample(overshoots));
        }
        if (view.regressionCount() > 0) {
            problems.add(view.regressionCount() + " committed counts did not grow over the one before: "
                    + String.join("; ", view.regressionSample()));
        }
        if (view.malformedCount() > 0) {
            problems.add(view.malformedCount() + " output records that are not <word, count> of the input's words: "
                    + String.join("; ", view.malformedSample()));
        }
        if (threadErrors.get() > 0) {
            log(threadErrors.get() + " stream thread failures (replaced)");
        }

        StringBuilder summary = new StringBuilder("summary: ")
                .append(linesAcked).append(" of ").append(LINES).append(" lines produced, ")
                .append(text.expected.size()).append(" distinct words, ")
                .append(view.records()).append(" output records read, ");
        if (exactAt != 0) {
            summary.append(String.format(Locale.ROOT, "exact counts %.1f s after Streams started, ", (exactAt - streamsStarted) / 1e9));
        } else {
            summary.append("counts never exact, ");
        }
        summary.append("max overshoot ").append(view.maxOvershoot());
        if (killed != null) {
            summary.append(String.format(Locale.ROOT, ", broker %d killed at %.1f s", killed.id(), (killedAt - t0) / 1e9));
            if (restartedAt != 0) {
                summary.append(String.format(Locale.ROOT, " and up again at %.1f s", (restartedAt - t0) / 1e9));
            }
        } else {
            summary.append(", no broker killed");
        }
        log(summary.toString());
        problems.forEach(p -> System.out.println("problem: " + p));
        return problems.isEmpty() ? Main.PASS : Main.FAIL;
    }

    private static Topology topology(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("word-counts")
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private Properties streamsConfig(String appId, Path stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, "gregor-compat-streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        if (streamsProtocol) {
            p.put("group.protocol", "streams");
        }
        // The changelog and repartition topics (created by Streams, or with group.protocol=streams by
        // the broker): as durable as the input.
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, (int) replicas);
        p.put(StreamsConfig.topicPrefix(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG), minIsr);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // Small polls spread the input over many transactions, so a broker dies between some of them.
        p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), 100);
        p.put(CommonClientConfigs.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        return p;
    }

    private KafkaConsumer<String, Long> outputReader(String output) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "gregor-compat-streams-reader");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 200);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) CALL.toMillis());
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        KafkaConsumer<String, Long> reader = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer());
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < PARTITIONS; i++) {
            tps.add(new TopicPartition(output, i));
        }
        reader.assign(tps);
        reader.seekToBeginning(tps);
        return reader;
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "gregor-compat-streams-admin");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) CALL.toMillis());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(AdminClientConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, 5_000);
        p.put(AdminClientConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS_CONFIG, 5_000);
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        return Admin.create(p);
    }

    /** Creates both topics and waits until each partition has a leader and all its replicas in sync. */
    private void createTopics(Admin admin, String input, String output) throws Exception {
        Map<String, String> configs = Map.of(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, minIsr);
        admin.createTopics(List.of(
                new NewTopic(input, PARTITIONS, replicas).configs(configs),
                new NewTopic(output, PARTITIONS, replicas).configs(configs)))
                .all().get(CALL.toMillis(), TimeUnit.MILLISECONDS);
        long until = System.nanoTime() + TOPICS_READY.toNanos();
        String last = "not described yet";
        while (System.nanoTime() < until) {
            try {
                Map<String, TopicDescription> d = admin.describeTopics(List.of(input, output))
                        .allTopicNames().get(CALL.toMillis(), TimeUnit.MILLISECONDS);
                last = layout(d.get(input)) + "; " + layout(d.get(output));
                if (ready(d.get(input)) && ready(d.get(output))) {
                    log("topics " + input + " and " + output + " (" + PARTITIONS + " partitions, " + replicas
                            + " replicas, min.insync.replicas " + minIsr + "): " + last);
                    return;
                }
            } catch (java.util.concurrent.ExecutionException e) {
                last = Main.describe(e);
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("topics not ready with " + replicas + " in-sync replicas per partition within "
                + TOPICS_READY.toSeconds() + " s: " + last);
    }

    private boolean ready(TopicDescription d) {
        if (d == null || d.partitions().size() != PARTITIONS) {
            return false;
        }
        for (TopicPartitionInfo p : d.partitions()) {
            if (p.leader() == null || p.replicas().size() != replicas || p.isr().size() != replicas) {
                return false;
            }
        }
        return true;
    }

    private static String layout(TopicDescription d) {
        if (d == null) {
            return "missing";
        }
        StringBuilder sb = new StringBuilder(d.name()).append(" leaders");
        for (TopicPartitionInfo p : d.partitions()) {
            sb.append(' ').append(p.partition()).append('@').append(p.leader() == null ? "none" : p.leader().id())
                    .append("(isr ").append(p.isr().size()).append(')');
        }
        return sb.toString();
    }

    /**
     * A running broker that leads at least one input partition (the most of them), and is not
     * the only address the clients were given to bootstrap from: they must still reach the
     * cluster while it is down.
     */
    private ClusterControl.Broker pickVictim(Admin admin, ClusterControl control, String input) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(input)).allTopicNames()
                .get(CALL.toMillis(), TimeUnit.MILLISECONDS).get(input);
        Map<Integer, List<Integer>> led = new TreeMap<>();
        for (TopicPartitionInfo p : d.partitions()) {
            if (p.leader() != null) {
                led.computeIfAbsent(p.leader().id(), k -> new ArrayList<>()).add(p.partition());
            }
        }
        List<String> seeds = Arrays.stream(bootstrap.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
        List<ClusterControl.Broker> brokers = control.brokers();
        ClusterControl.Broker best = null;
        for (ClusterControl.Broker b : brokers) {
            if (!b.running() || !led.containsKey(b.id())) {
                continue;
            }
            if (seeds.size() == 1 && sameAddress(seeds.get(0), b.bootstrap())) {
                continue;
            }
            if (best == null || led.get(b.id()).size() > led.get(best.id()).size()) {
                best = b;
            }
        }
        if (best == null) {
            throw new IllegalStateException("no broker to kill: input leaders " + led + ", brokers " + brokers
                    + ", bootstrap " + bootstrap + " (a running leader that is not the only bootstrap address is needed)");
        }
        log("input partitions by leader " + led + "; broker " + best.id() + " leads " + led.get(best.id()));
        return best;
    }

    /**
     * With group.protocol=streams on a cluster: the group's coordinator, so that the group must
     * come back on another broker from what the coordinator wrote (when the coordinator is the
     * only bootstrap address, a leader of the input as for streams-eos).
     */
    private ClusterControl.Broker pickCoordinator(Admin admin, ClusterControl control, String appId, String input) throws Exception {
        Node coordinator = admin.describeStreamsGroups(List.of(appId)).all()
                .get(CALL.toMillis(), TimeUnit.MILLISECONDS).get(appId).coordinator();
        List<String> seeds = Arrays.stream(bootstrap.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
        for (ClusterControl.Broker b : control.brokers()) {
            if (b.running() && coordinator != null && b.id() == coordinator.id()
                    && !(seeds.size() == 1 && sameAddress(seeds.get(0), b.bootstrap()))) {
                log("group " + appId + " is coordinated by broker " + b.id());
                return b;
            }
        }
        log("the coordinator of " + appId + " (" + coordinator + ") is the only bootstrap address: killing a leader of the input instead");
        return pickVictim(admin, control, input);
    }

    /**
     * With group.protocol=streams on a cluster: an application id whose group is coordinated by a
     * broker the clients do not bootstrap from (the leader of its __consumer_offsets partition,
     * abs(hashCode) modulo the partitions, as Kafka places groups), so that killing the coordinator
     * moves the group to another broker while the clients can still reach the cluster.
     */
    private String awayFromBootstrap(Admin admin, ClusterControl control, String base) throws Exception {
        List<String> seeds = Arrays.stream(bootstrap.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
        if (seeds.size() != 1 || control.brokers().size() < 2) {
            return base;
        }
        try {
            // FindCoordinator creates __consumer_offsets when it does not exist yet.
            admin.describeStreamsGroups(List.of(base)).all().get(CALL.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException expected) {
            // The group does not exist yet.
        }
        TopicDescription offsets = admin.describeTopics(List.of("__consumer_offsets")).allTopicNames()
                .get(CALL.toMillis(), TimeUnit.MILLISECONDS).get("__consumer_offsets");
        Integer seedId = null;
        for (ClusterControl.Broker b : control.brokers()) {
            if (sameAddress(seeds.get(0), b.bootstrap())) {
                seedId = b.id();
            }
        }
        int n = offsets.partitions().size();
        for (int i = 0; i < 100; i++) {
            String candidate = i == 0 ? base : base + "-" + i;
            TopicPartitionInfo p = offsets.partitions().get((candidate.hashCode() & 0x7fffffff) % n);
            if (p.leader() != null && (seedId == null || p.leader().id() != seedId)) {
                return candidate;
            }
        }
        return base;
    }

    private static boolean sameAddress(String a, String b) {
        return normalize(a).equals(normalize(b));
    }

    private static String normalize(String address) {
        return address.trim().toLowerCase(Locale.ROOT).replace("localhost:", "127.0.0.1:");
    }

    /** Streams' changelog and repartition topics must have the replicas it asked for. */
    private void checkInternalTopics(Admin admin, String appId) {
        try {
            List<String> names = admin.listTopics().names().get(left(CALL).toMillis(), TimeUnit.MILLISECONDS).stream()
                    .filter(n -> n.startsWith(appId + "-")).sorted().toList();
            if (names.isEmpty()) {
                problems.add("Streams created no internal topics named " + appId + "-*");
                return;
            }
            Map<String, TopicDescription> d = admin.describeTopics(names).allTopicNames()
                    .get(left(CALL).toMillis(), TimeUnit.MILLISECONDS);
            for (String name : names) {
                List<TopicPartitionInfo> parts = d.get(name).partitions();
                int replicas = parts.stream().mapToInt(p -> p.replicas().size()).min().orElse(0);
                log("internal topic " + name + ": " + parts.size() + " partitions, " + replicas + " replicas");
                if (parts.stream().anyMatch(p -> p.replicas().size() != replicas)) {
                    problems.add("internal topic " + name + " has partitions with other than " + replicas + " replicas");
                }
            }
        } catch (Exception e) {
            problems.add("could not describe Streams' internal topics: " + Main.describe(e));
        }
    }

    /** Leaves the cluster whole for whatever runs next, whatever went wrong here. */
    private void restartQuietly(ClusterControl control, ClusterControl.Broker broker) {
        try {
            log("starting broker " + broker.id() + " again before leaving");
            control.start(broker.id(), left(START_TIMEOUT));
        } catch (Exception e) {
            problems.add("could not start broker " + broker.id() + " again: " + Main.describe(e));
        }
    }

    /** {@code max}, or less so that a call ends by LAST_CALL (at least a second, so it can still answer). */
    private Duration left(Duration max) {
        long remaining = Math.max(lastCall - System.nanoTime(), TimeUnit.SECONDS.toNanos(1));
        return Duration.ofNanos(Math.min(max.toNanos(), remaining));
    }

    private static String ids(Collection<Node> nodes) {
        return nodes.stream().map(Node::id).sorted(Comparator.naturalOrder()).toList().toString();
    }

    private static String sample(List<String> items) {
        int shown = Math.min(items.size(), 10);
        String head = String.join(", ", items.subList(0, shown));
        return shown < items.size() ? head + ", ... (" + items.size() + " in all)" : head;
    }

    void log(String message) {
        System.out.println(String.format(Locale.ROOT, "[%6.1f s] %s", (System.nanoTime() - t0) / 1e9, message));
    }

    private static void deleteTree(Path root) {
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            System.out.println("could not remove the state directory " + root + ": " + e.getMessage());
        }
    }
}
