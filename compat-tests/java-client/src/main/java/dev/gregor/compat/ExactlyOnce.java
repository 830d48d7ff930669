package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * What the {@code txn} and {@code idempotent} scenarios share: a fresh topic, reading a whole
 * topic back in an isolation level, and the check of one partition's log (as in
 * {@code lib/exactly-once.mjs}): every value read is allowed, none twice, every required one
 * present, in production order, each at its acknowledged offset.
 */
final class ExactlyOnce {
    static final int PARTITIONS = 3;
    /** Reading goes on this long after the expected records are in, to catch late extras. */
    private static final long SETTLE_MS = 1_000;
    private static final long READ_MS = 10_000;
    private static final int MAX_PROBLEMS = 8;

    /** One record as read: its offset and value. */
    record Read(long offset, String value) {
    }

    private ExactlyOnce() {
    }

    static void createTopic(String bootstrap, String topic) throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
        }
    }

    /**
     * Reads every partition of {@code topic} from the beginning without a group, in the given
     * isolation level ("read_committed" or "read_uncommitted"), until {@code want} records are
     * in and no more came for a second. Returns partition -> records in offset order.
     */
    static Map<Integer, List<Read>> readTopic(String bootstrap, String topic, String isolation, int want)
            throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        Map<Integer, List<Read>> read = new HashMap<>();
        int count = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.groupFreeConsumer(bootstrap, p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
                read.put(i, new ArrayList<>());
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + READ_MS;
            long lastAt = System.currentTimeMillis();
            while (count < want || System.currentTimeMillis() - lastAt < SETTLE_MS) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(isolation + ": " + count + " of " + want + " records read in "
                            + READ_MS + " ms");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    read.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                            .add(new Read(r.offset(), new String(r.value(), StandardCharsets.UTF_8)));
                    count++;
                    lastAt = System.currentTimeMillis();
                }
            }
        }
        System.out.println(isolation + ": " + count + " records read");
        return read;
    }

    /**
     * Checks one partition: {@code order} is every value that may have been written to it, in
     * production order; {@code allowed} (null: all of them) those this reader may see;
     * {@code required} those it must see; {@code offsets} (may be empty) the acknowledged offset
     * of a value. Returns the problems, empty when the log is right.
     */
    static List<String> checkPartition(String label, List<String> order, Set<String> allowed,
            Set<String> required, List<Read> read, Map<String, Long> offsets) {
        List<String> problems = new ArrayList<>();
        Map<String, Integer> index = new HashMap<>();
        for (int i = 0; i < order.size(); i++) {
            index.put(order.get(i), i);
        }
        Map<String, Long> seen = new HashMap<>();
        int lastIndex = -1;
        long lastOffset = -1;
        for (Read r : read) {
            if (r.offset() <= lastOffset) {
                add(problems, label, "offset " + r.offset() + " read after offset " + lastOffset);
            }
            lastOffset = r.offset();
            if (seen.containsKey(r.value())) {
                add(problems, label, "duplicate: " + r.value() + " at offset " + r.offset() + ", already at offset "
                        + seen.get(r.value()));
                continue;
            }
            seen.put(r.value(), r.offset());
            Integer i = index.get(r.value());
            if (i == null) {
                add(problems, label, "unexpected value " + r.value() + " at offset " + r.offset());
                continue;
            }
            if (allowed != null && !allowed.contains(r.value())) {
                add(problems, label, r.value() + " at offset " + r.offset()
                        + " must not be visible to this reader (aborted or never sent here)");
                continue;
            }
            if (i < lastIndex) {
                add(problems, label, "out of order: " + r.value() + " at offset " + r.offset() + " comes after "
                        + order.get(lastIndex));
            }
            lastIndex = Math.max(lastIndex, i);
            Long acked = offsets.get(r.value());
            if (acked != null && acked != r.offset()) {
                add(problems, label, r.value() + " is at offset " + r.offset()
                        + ", but its produce was acknowledged with offset " + acked);
            }
        }
        List<String> missing = order.stream().filter(v -> required.contains(v) && !seen.containsKey(v)).toList();
        if (!missing.isEmpty()) {
            add(problems, label, missing.size() + " missing, first " + missing.subList(0, Math.min(3, missing.size())));
        }
        return problems;
    }

    private static void add(List<String> problems, String label, String problem) {
        if (problems.size() < MAX_PROBLEMS) {
            problems.add(label + ": " + problem);
        }
    }
}
