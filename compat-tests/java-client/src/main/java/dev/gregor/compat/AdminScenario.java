package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Topic administration through the Admin API, checked the way an application relies on it:
 * CreateTopics (answered layout, configs and topic id; existing, illegal and unplaceable topics;
 * validate-only), DescribeTopics, DescribeConfigs (values and sources of a topic and of the
 * broker), IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT, validate-only, bad values),
 * CreatePartitions, ListOffsets (earliest, latest, a timestamp, the largest timestamp),
 * DeleteRecords and DeleteTopics, each with the error class a wrong request gets.
 */
final class AdminScenario implements Scenario {
    /** Kafka 4.4's defaults (unchanged since 4.0), reported with source DEFAULT_CONFIG when nothing overrides them. */
    private static final String DEFAULT_SEGMENT_BYTES = "1073741824";
    private static final String DEFAULT_RETENTION_MS = "604800000";
    private static final String DEFAULT_MESSAGE_MAX_BYTES = "1048588";
    private static final String DYNAMIC = "DYNAMIC_TOPIC_CONFIG";
    private static final String DEFAULT = "DEFAULT_CONFIG";
    /**
     * Apache Kafka applies an admin change through its metadata log, so a read right after it may
     * still show the old state for a moment.
     */
    private static final long SETTLE_MS = 5_000;
    /** Timestamps of the records ListOffsets searches, after a base: the largest is not the last. */
    private static final long[] TIMESTAMP_STEPS = {0, 10, 50, 20, 30};
    private static final long GRACE_MS = 2_000;

    private final List<String> problems = new ArrayList<>();
    private final List<String> created = new ArrayList<>();
    private Admin admin;
    private String topic;
    private String recordsTopic;
    private String missing;
    /** A name with '_', so that the same name with '.' collides with it. */
    private String defaultsTopic;
    private Uuid recordsTopicId;
    private int brokerId = -1;
    /** Broker-level changes this run made, undone at the end whatever happens. */
    private final Map<ConfigResource, Collection<AlterConfigOp>> brokerUndo = new LinkedHashMap<>();
    private String bootstrap;

    /** One step's body; a thrown exception fails the scenario. */
    private interface Step {
        void run() throws Exception;
    }

    @Override
    public boolean run(String bootstrap) throws Exception {
        this.bootstrap = bootstrap;
        String stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        topic = "compat-admin-java-" + stamp;
        recordsTopic = "compat-admin-java-records-" + stamp;
        missing = "compat-admin-java-missing-" + stamp;
        defaultsTopic = "compat_admin_java_defaults_" + stamp.replace('-', '_');
        long started = System.nanoTime();
        admin = Clients.admin(bootstrap);
        try {
            List<Step> steps = List.of(this::create, this::describe, this::alter, this::brokerDefaults,
                    this::partitions, this::offsets, this::delete);
            for (Step step : steps) {
                try {
                    step.run();
                } catch (CheckFailed e) {
                    problems.add(e.getMessage());
                } catch (Exception e) {
                    problems.add(Errors.describe(e));
                }
                if (!problems.isEmpty()) {
                    break;
                }
            }
        } finally {
            if (!brokerUndo.isEmpty()) {
                try {
                    get(admin.incrementalAlterConfigs(brokerUndo).all());
                } catch (Exception e) {
                    System.out.println("cleanup: incrementalAlterConfigs " + brokerUndo + ": " + Errors.describe(e));
                }
            }
            if (!created.isEmpty()) {
                try {
                    get(admin.deleteTopics(created).all());
                } catch (Exception e) {
                    System.out.println("cleanup: deleteTopics " + created + ": " + Errors.describe(e));
                }
            }
            admin.close(Duration.ofSeconds(2));
        }
        System.out.println(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms");
        problems.forEach(p -> System.out.println("problem: " + p));
        return problems.isEmpty();
    }

    private void create() throws Exception {
        Map<String, String> configs = Map.of("cleanup.policy", "compact", "retention.ms", "3600000");
        CreateTopicsResult result = admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1).configs(configs)));
        get(result.all());
        created.add(topic);
        int partitions = get(result.numPartitions(topic));
        int replicationFactor = get(result.replicationFactor(topic));
        Uuid id = get(result.topicId(topic));
        System.out.println("createTopics: " + topic + " with 3 partitions, " + configs + ": answered " + partitions
                + " partitions, replication factor " + replicationFactor + ", id " + id);
        expect(partitions == 3 && replicationFactor == 1, "createTopics answered " + partitions
                + " partitions, replication factor " + replicationFactor + ", expected 3 and 1");
        expect(id != null && !id.equals(Uuid.ZERO_UUID), "createTopics answered topic id " + id);
        // CreateTopics v5+ answers the new topic's configs with their sources.
        checkConfigs("createTopics answer", get(result.config(topic)), Map.of(
                "cleanup.policy", new String[] {"compact", DYNAMIC},
                "retention.ms", new String[] {"3600000", DYNAMIC},
                "segment.bytes", new String[] {DEFAULT_SEGMENT_BYTES, DEFAULT}));
        settle(() -> expectPartitions(topic, 3));
        TopicDescription described = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        expect(id.equals(described.topicId()), "describeTopics gives topic id " + described.topicId()
                + ", createTopics gave " + id);

        expectError("createTopics of an existing topic", TopicExistsException.class,
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        expectError("createTopics of an illegal name", InvalidTopicException.class,
                admin.createTopics(List.of(new NewTopic(missing + " bad name!", 1, (short) 1))).all());
        // One replica more than the cluster has brokers.
        int tooMany = get(admin.describeCluster().nodes()).size() + 1;
        expectError("createTopics with replication factor " + tooMany + ", above the broker count",
                InvalidReplicationFactorException.class,
                admin.createTopics(List.of(new NewTopic(missing, 1, (short) tooMany))).all());
        get(admin.createTopics(List.of(new NewTopic(missing, 1, (short) 1)),
                new CreateTopicsOptions().validateOnly(true)).all());
        expect(!get(admin.listTopics().names()).contains(missing), "createTopics(validateOnly) created " + missing);
        System.out.println("createTopics(validateOnly): succeeded, nothing created");

        // No partition count or replication factor: the broker's num.partitions (1 on every
        // broker here) and default.replication.factor (1 on one broker, 3 on a cluster), as the
        // broker describes it.
        int lowestId = get(admin.describeCluster().nodes()).stream().mapToInt(n -> n.id()).min().orElse(-1);
        ConfigResource lowest = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(lowestId));
        ConfigEntry replicationDefault = describeConfigs(lowest).get("default.replication.factor");
        expect(replicationDefault != null && replicationDefault.value() != null,
                "describeConfigs(broker " + lowestId + ") has no default.replication.factor");
        int expectedReplication = Integer.parseInt(replicationDefault.value());
        CreateTopicsResult defaults = admin.createTopics(
                List.of(new NewTopic(defaultsTopic, Optional.empty(), Optional.empty())));
        get(defaults.all());
        created.add(defaultsTopic);
        int defaultPartitions = get(defaults.numPartitions(defaultsTopic));
        int defaultReplication = get(defaults.replicationFactor(defaultsTopic));
        System.out.println("createTopics without partitions or replication factor: answered " + defaultPartitions
                + " partitions, replication factor " + defaultReplication);
        expect(defaultPartitions == 1 && defaultReplication == expectedReplication,
                "createTopics with broker defaults answered " + defaultPartitions + " partitions, replication factor "
                + defaultReplication + ", expected 1 and " + expectedReplication);
        expectError("createTopics of a name colliding with an existing one ('.' for '_')",
                InvalidTopicException.class,
                admin.createTopics(List.of(new NewTopic(defaultsTopic.replace('_', '.'), 1, (short) 1))).all());
        expectError("createTopics with 0 partitions", InvalidPartitionsException.class,
                admin.createTopics(List.of(new NewTopic(missing, 0, (short) 1))).all());
        expectError("createTopics with replication factor 0", InvalidReplicationFactorException.class,
                admin.createTopics(List.of(new NewTopic(missing, 1, (short) 0))).all());
        expectError("createTopics assigning a partition to a broker that does not exist",
                InvalidReplicaAssignmentException.class,
                admin.createTopics(List.of(new NewTopic(missing, Map.of(0, List.of(99))))).all());
        expectError("createTopics with retention.ms=soon", InvalidConfigurationException.class,
                admin.createTopics(List.of(new NewTopic(missing, 1, (short) 1)
                        .configs(Map.of("retention.ms", "soon")))).all());
        expectError("createTopics with an unknown config", InvalidConfigurationException.class,
                admin.createTopics(List.of(new NewTopic(missing, 1, (short) 1)
                        .configs(Map.of("no.such.config", "1")))).all());

        // DeleteRecords is refused on a topic that is only compacted.
        expectError("deleteRecords on a compacted topic", PolicyViolationException.class,
                admin.deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(0))).all());
    }

    private void describe() throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        settle(() -> checkConfigs("describeConfigs(topic)", describeConfigs(resource), Map.of(
                "cleanup.policy", new String[] {"compact", DYNAMIC},
                "retention.ms", new String[] {"3600000", DYNAMIC},
                "segment.bytes", new String[] {DEFAULT_SEGMENT_BYTES, DEFAULT})));
        // Synonyms: the topic's override first, then the broker config it would fall back to.
        Config withSynonyms = get(admin.describeConfigs(List.of(resource),
                new DescribeConfigsOptions().includeSynonyms(true)).all()).get(resource);
        List<String> synonyms = withSynonyms.get("cleanup.policy").synonyms().stream()
                .map(s -> s.name() + "=" + s.value() + " " + s.source()).toList();
        System.out.println("describeConfigs(topic, includeSynonyms): cleanup.policy synonyms " + synonyms);
        List<String> wanted = List.of("cleanup.policy=compact DYNAMIC_TOPIC_CONFIG",
                "log.cleanup.policy=delete DEFAULT_CONFIG");
        expect(synonyms.equals(wanted), "cleanup.policy synonyms " + synonyms + ", expected " + wanted);
        brokerId = get(admin.describeCluster().nodes()).stream().mapToInt(n -> n.id()).min().orElse(-1);
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(brokerId));
        checkConfigs("describeConfigs(broker " + brokerId + ")", describeConfigs(broker), Map.of(
                "message.max.bytes", new String[] {DEFAULT_MESSAGE_MAX_BYTES, DEFAULT},
                "log.segment.bytes", new String[] {DEFAULT_SEGMENT_BYTES, DEFAULT}));
        ConfigResource absent = new ConfigResource(ConfigResource.Type.TOPIC, missing);
        expectError("describeConfigs of a missing topic", UnknownTopicOrPartitionException.class,
                admin.describeConfigs(List.of(absent)).all());
    }

    private void alter() throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        incrementalAlter(resource, List.of(
                op("retention.ms", "7200000", AlterConfigOp.OpType.SET),
                op("cleanup.policy", "delete", AlterConfigOp.OpType.APPEND),
                op("max.message.bytes", "200000", AlterConfigOp.OpType.SET)), false);
        System.out.println("incrementalAlterConfigs: SET retention.ms=7200000, APPEND cleanup.policy delete, "
                + "SET max.message.bytes=200000");
        settle(() -> checkConfigs("describeConfigs(topic)", describeConfigs(resource), Map.of(
                "retention.ms", new String[] {"7200000", DYNAMIC},
                "cleanup.policy", new String[] {"compact,delete", DYNAMIC},
                "max.message.bytes", new String[] {"200000", DYNAMIC})));

        incrementalAlter(resource, List.of(
                op("retention.ms", null, AlterConfigOp.OpType.DELETE),
                op("cleanup.policy", "compact", AlterConfigOp.OpType.SUBTRACT)), false);
        System.out.println("incrementalAlterConfigs: DELETE retention.ms, SUBTRACT cleanup.policy compact");
        settle(() -> checkConfigs("describeConfigs(topic)", describeConfigs(resource), Map.of(
                "retention.ms", new String[] {DEFAULT_RETENTION_MS, DEFAULT},
                "cleanup.policy", new String[] {"delete", DYNAMIC})));

        incrementalAlter(resource, List.of(op("retention.ms", "1000", AlterConfigOp.OpType.SET)), true);
        System.out.println("incrementalAlterConfigs(validateOnly): SET retention.ms=1000");
        // Retried: in a cluster the broker asked may not have applied the DELETE above yet.
        settle(() -> checkConfigs("describeConfigs(topic)", describeConfigs(resource),
                Map.of("retention.ms", new String[] {DEFAULT_RETENTION_MS, DEFAULT})));

        expectError("incrementalAlterConfigs SET retention.ms=soon", InvalidConfigurationException.class,
                admin.incrementalAlterConfigs(Map.of(resource,
                        List.of(op("retention.ms", "soon", AlterConfigOp.OpType.SET)))).all());
        expectError("incrementalAlterConfigs SET no.such.config", InvalidConfigurationException.class,
                admin.incrementalAlterConfigs(Map.of(resource,
                        List.of(op("no.such.config", "1", AlterConfigOp.OpType.SET)))).all());
        expectError("incrementalAlterConfigs of a missing topic", UnknownTopicOrPartitionException.class,
                admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, missing),
                        List.of(op("retention.ms", "1000", AlterConfigOp.OpType.SET)))).all());
    }

    /**
     * A topic without an override takes a dynamic cluster-wide default (broker resource "") and,
     * above that, a dynamic per-broker value, and says which one it got. Both are removed again.
     */
    private void brokerDefaults() throws Exception {
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(brokerId));
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, defaultsTopic);
        brokerUndo.put(cluster, List.of(op("log.retention.ms", null, AlterConfigOp.OpType.DELETE)));
        incrementalAlter(cluster, List.of(op("log.retention.ms", "86400000", AlterConfigOp.OpType.SET)), false);
        System.out.println("incrementalAlterConfigs(cluster default): SET log.retention.ms=86400000");
        settle(() -> checkConfigs("describeConfigs(" + defaultsTopic + ")", describeConfigs(resource), Map.of(
                "retention.ms", new String[] {"86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG"})));
        // Retried: in a cluster each broker applies the cluster default a moment after another did.
        settle(() -> checkConfigs("describeConfigs(broker " + brokerId + ")", describeConfigs(broker), Map.of(
                "log.retention.ms", new String[] {"86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG"})));

        brokerUndo.put(broker, List.of(op("log.retention.ms", null, AlterConfigOp.OpType.DELETE)));
        incrementalAlter(broker, List.of(op("log.retention.ms", "43200000", AlterConfigOp.OpType.SET)), false);
        System.out.println("incrementalAlterConfigs(broker " + brokerId + "): SET log.retention.ms=43200000");
        settle(() -> checkConfigs("describeConfigs(" + defaultsTopic + ")", describeConfigs(resource), Map.of(
                "retention.ms", new String[] {"43200000", "DYNAMIC_BROKER_CONFIG"})));

        get(admin.incrementalAlterConfigs(brokerUndo).all());
        brokerUndo.clear();
        System.out.println("incrementalAlterConfigs: DELETE log.retention.ms at broker " + brokerId
                + " and cluster default");
        settle(() -> checkConfigs("describeConfigs(" + defaultsTopic + ")", describeConfigs(resource), Map.of(
                "retention.ms", new String[] {DEFAULT_RETENTION_MS, DEFAULT})));
        // A bad broker config value is INVALID_REQUEST, not INVALID_CONFIG as for a topic.
        expectError("incrementalAlterConfigs(broker) SET log.retention.ms=soon", InvalidRequestException.class,
                admin.incrementalAlterConfigs(Map.of(broker,
                        List.of(op("log.retention.ms", "soon", AlterConfigOp.OpType.SET)))).all());
    }

    private void partitions() throws Exception {
        get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
        System.out.println("createPartitions: " + topic + " to 5");
        settle(() -> expectPartitions(topic, 5));
        expectError("createPartitions to fewer (4)", InvalidPartitionsException.class,
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all());
        expectError("createPartitions to the same count (5)", InvalidPartitionsException.class,
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
        expectError("createPartitions of a missing topic", UnknownTopicOrPartitionException.class,
                admin.createPartitions(Map.of(missing, NewPartitions.increaseTo(2))).all());
        expectError("createPartitions to 7 with one assignment for two new partitions",
                InvalidReplicaAssignmentException.class,
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(7, List.of(List.of(brokerId))))).all());
        get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(6, List.of(List.of(brokerId))))).all());
        System.out.println("createPartitions: " + topic + " to 6, the new one on broker " + brokerId);
        settle(() -> expectPartitions(topic, 6));
    }

    private void offsets() throws Exception {
        CreateTopicsResult records = admin.createTopics(List.of(new NewTopic(recordsTopic, 2, (short) 1)));
        get(records.all());
        created.add(recordsTopic);
        recordsTopicId = get(records.topicId(recordsTopic));
        TopicPartition p0 = new TopicPartition(recordsTopic, 0);
        TopicPartition empty = new TopicPartition(recordsTopic, 1);
        long base = System.currentTimeMillis() - 60_000;
        long[] stamps = new long[TIMESTAMP_STEPS.length];
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, "none")) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < stamps.length; i++) {
                stamps[i] = base + TIMESTAMP_STEPS[i];
                acks.add(producer.send(new ProducerRecord<>(recordsTopic, 0, stamps[i], null,
                        ("record " + i).getBytes(StandardCharsets.UTF_8))));
            }
            producer.flush();
            for (int i = 0; i < acks.size(); i++) {
                long offset = acks.get(i).get(1, TimeUnit.SECONDS).offset();
                expect(offset == i, "record " + i + " acknowledged at offset " + offset);
            }
        }
        System.out.println("produced " + stamps.length + " records to partition 0 with timestamps base+"
                + java.util.Arrays.toString(TIMESTAMP_STEPS) + "; partition 1 stays empty");

        expectOffset("earliest", p0, OffsetSpec.earliest(), 0, null);
        expectOffset("latest", p0, OffsetSpec.latest(), 5, null);
        expectOffset("maxTimestamp", p0, OffsetSpec.maxTimestamp(), 2, stamps[2]);
        // The first offset whose timestamp is at least the one asked for, not the closest one.
        expectOffset("forTimestamp(base+15)", p0, OffsetSpec.forTimestamp(base + 15), 2, stamps[2]);
        expectOffset("forTimestamp(base+60)", p0, OffsetSpec.forTimestamp(base + 60), -1, -1L);
        expectOffset("earliest of the empty partition", empty, OffsetSpec.earliest(), 0, null);
        expectOffset("latest of the empty partition", empty, OffsetSpec.latest(), 0, null);
        expectOffset("maxTimestamp of the empty partition", empty, OffsetSpec.maxTimestamp(), -1, -1L);

        long low = get(admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(2))).lowWatermarks().get(p0))
                .lowWatermark();
        System.out.println("deleteRecords before offset 2: low watermark " + low);
        expect(low == 2, "deleteRecords before offset 2: low watermark " + low + ", expected 2");
        expectOffset("earliest after deleteRecords", p0, OffsetSpec.earliest(), 2, null);
        // A timestamp before the log start finds the first record still there.
        expectOffset("forTimestamp(base) after deleteRecords", p0, OffsetSpec.forTimestamp(base), 2, stamps[2]);
        expectError("deleteRecords past the high watermark (10)", OffsetOutOfRangeException.class,
                admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(10))).all());
        // Not checked: deleteRecords and listOffsets of a missing topic. The client looks the
        // partition's leader up in Metadata and retries UNKNOWN_TOPIC_OR_PARTITION there until
        // the call times out, against either broker.
    }

    private void delete() throws Exception {
        List<String> gone = new ArrayList<>(created);
        get(admin.deleteTopics(gone).all());
        created.clear();
        System.out.println("deleteTopics: " + gone);
        settle(() -> {
            Set<String> names = get(admin.listTopics().names());
            for (String t : gone) {
                expect(!names.contains(t), t + " still listed after deleteTopics");
            }
        });
        expectError("describeTopics of a deleted topic", UnknownTopicOrPartitionException.class,
                admin.describeTopics(List.of(topic)).allTopicNames());
        expectError("deleteTopics of a missing topic", UnknownTopicOrPartitionException.class,
                admin.deleteTopics(List.of(missing)).all());

        // A topic created again under a deleted one's name is a new, empty topic.
        CreateTopicsResult again = admin.createTopics(List.of(new NewTopic(recordsTopic, 1, (short) 1)));
        get(again.all());
        created.add(recordsTopic);
        Uuid id = get(again.topicId(recordsTopic));
        System.out.println("createTopics of " + recordsTopic + " again: id " + id + " (was " + recordsTopicId + ")");
        expect(!id.equals(recordsTopicId), "the topic created again has the deleted topic's id " + id);
        TopicPartition p0 = new TopicPartition(recordsTopic, 0);
        settle(() -> expectOffset("latest of the topic created again", p0, OffsetSpec.latest(), 0, null));
        expectOffset("earliest of the topic created again", p0, OffsetSpec.earliest(), 0, null);
        get(admin.deleteTopics(List.of(recordsTopic)).all());
        created.clear();
    }

    // ---------------------------------------------------------------------------------------

    /** A failed check inside a step; settle() retries those. */
    private static final class CheckFailed extends Exception {
        CheckFailed(String message) {
            super(message);
        }
    }

    private static void expect(boolean condition, String message) throws CheckFailed {
        if (!condition) {
            throw new CheckFailed(message);
        }
    }

    /** Runs check until it passes or SETTLE_MS passes; the last failure is the step's. */
    private static void settle(Step check) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MS);
        while (true) {
            try {
                check.run();
                return;
            } catch (CheckFailed | ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(Clients.API_TIMEOUT_MS + GRACE_MS, TimeUnit.MILLISECONDS);
    }

    private static void expectError(String label, Class<? extends Throwable> expected, KafkaFuture<?> future)
            throws Exception {
        try {
            Object result = get(future);
            throw new CheckFailed(label + ": succeeded (" + result + "), expected " + expected.getSimpleName());
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (!expected.isInstance(cause)) {
                throw new CheckFailed(label + ": failed with " + Errors.describe(e) + ", expected "
                        + expected.getSimpleName());
            }
            System.out.println(label + ": " + expected.getSimpleName() + " as expected (" + cause.getMessage() + ")");
        }
    }

    private void expectPartitions(String name, int count) throws Exception {
        TopicDescription d = get(admin.describeTopics(List.of(name)).allTopicNames()).get(name);
        expect(d.partitions().size() == count, "describeTopics: " + name + " has " + d.partitions().size()
                + " partitions, expected " + count);
        System.out.println("describeTopics: " + name + " has " + count + " partitions");
    }

    private Config describeConfigs(ConfigResource resource) throws Exception {
        return get(admin.describeConfigs(List.of(resource)).all()).get(resource);
    }

    /** expected: name to {value, source}. */
    private static void checkConfigs(String label, Config config, Map<String, String[]> expected) throws CheckFailed {
        for (Map.Entry<String, String[]> e : new java.util.TreeMap<>(expected).entrySet()) {
            ConfigEntry entry = config.get(e.getKey());
            expect(entry != null, label + ": " + e.getKey() + " missing (" + config.entries().size() + " configs)");
            String value = e.getValue()[0];
            String source = e.getValue()[1];
            System.out.println(label + ": " + e.getKey() + "=\"" + entry.value() + "\" source " + entry.source());
            expect(value.equals(entry.value()) && source.equals(entry.source().name()), label + ": " + e.getKey()
                    + "=\"" + entry.value() + "\" source " + entry.source() + ", expected \"" + value + "\" source "
                    + source);
        }
    }

    private static AlterConfigOp op(String name, String value, AlterConfigOp.OpType type) {
        return new AlterConfigOp(new ConfigEntry(name, value), type);
    }

    private void incrementalAlter(ConfigResource resource, Collection<AlterConfigOp> ops, boolean validateOnly)
            throws Exception {
        Map<ConfigResource, Collection<AlterConfigOp>> change = new LinkedHashMap<>();
        change.put(resource, ops);
        get(admin.incrementalAlterConfigs(change, new AlterConfigsOptions().validateOnly(validateOnly)).all());
    }

    /** timestamp null: not checked (earliest and latest answer -1 there on both brokers or none). */
    private void expectOffset(String label, TopicPartition tp, OffsetSpec spec, long offset, Long timestamp)
            throws Exception {
        ListOffsetsResultInfo info = get(admin.listOffsets(Map.of(tp, spec)).partitionResult(tp));
        System.out.println("listOffsets " + label + ": offset " + info.offset() + " timestamp " + info.timestamp()
                + " leader epoch " + info.leaderEpoch());
        expect(info.offset() == offset && (timestamp == null || info.timestamp() == timestamp), "listOffsets " + label
                + ": offset " + info.offset() + " timestamp " + info.timestamp() + ", expected offset " + offset
                + (timestamp == null ? "" : " timestamp " + timestamp));
    }
}
