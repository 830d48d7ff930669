package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * For each codec, a KafkaProducer (idempotence off) sends COUNT records with keys, headers and
 * explicit timestamps to partition 0 of a new, auto-created topic; the acknowledged offsets must
 * run 0, 1, 2, ... Then one KafkaConsumer without a group assigns every codec's partition and
 * reads: everything from offset 0 (keys, values, headers and timestamps byte for byte), from an
 * offset in the middle of a batch, and from the offset offsetsForTimes gives for a timestamp
 * between two records.
 */
final class RoundtripScenario implements Scenario {
    private static final List<String> CODECS = List.of("none", "gzip", "snappy", "lz4", "zstd");
    private static final int COUNT = 5_000;
    private static final int MIDDLE = 2_345;
    private static final int TIMESTAMP_INDEX = 3_456;
    private static final long TIMESTAMP_STEP_MS = 10;
    /** Reading fails after this long without a new record. */
    private static final long READ_IDLE_MS = 5_000;

    /** One produced record; key and value may be null. */
    private record Message(byte[] key, byte[] value, List<Header> headers, long timestamp) {
    }

    @Override
    public boolean run(String bootstrap) throws Exception {
        List<Message> messages = makeMessages(COUNT, 19);
        String stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        Map<String, TopicPartition> partitions = new LinkedHashMap<>();
        for (String codec : CODECS) {
            partitions.put(codec, new TopicPartition("compat-roundtrip-java-" + codec + "-" + stamp, 0));
        }
        System.out.println(COUNT + " records per codec " + CODECS + " to partition 0 of a new topic each (auto-created)");

        long started = System.nanoTime();
        for (String codec : CODECS) {
            List<String> problems = produce(bootstrap, partitions.get(codec), codec, messages);
            if (!problems.isEmpty()) {
                problems.forEach(p -> System.out.println("problem: " + p));
                return false;
            }
        }
        System.out.println("produced in " + msSince(started) + " ms");

        started = System.nanoTime();
        List<String> problems = consume(bootstrap, partitions, messages);
        System.out.println("read back in " + msSince(started) + " ms");
        problems.forEach(p -> System.out.println("problem: " + p));
        return problems.isEmpty();
    }

    private static List<String> produce(String bootstrap, TopicPartition tp, String codec, List<Message> messages)
            throws Exception {
        List<String> problems = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, codec)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>(messages.size());
            for (Message m : messages) {
                acks.add(producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), m.timestamp(), m.key(),
                        m.value(), m.headers())));
            }
            producer.flush();
            for (int i = 0; i < acks.size(); i++) {
                long offset = acks.get(i).get(1, TimeUnit.SECONDS).offset();
                if (offset != i) {
                    problems.add(codec + ": record " + i + " acknowledged at offset " + offset + ", expected " + i
                            + " (offsets must run 0, 1, 2, ... in send order)");
                    break;
                }
            }
        } catch (java.util.concurrent.ExecutionException e) {
            problems.add(codec + ": send failed: " + Errors.describe(e));
        }
        return problems;
    }

    private static List<String> consume(String bootstrap, Map<String, TopicPartition> partitions,
            List<Message> messages) {
        List<String> problems = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.groupFreeConsumer(bootstrap)) {
            consumer.assign(partitions.values());

            Map<TopicPartition, Long> starts = new HashMap<>();
            partitions.values().forEach(tp -> starts.put(tp, 0L));
            Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> all = read(consumer, starts, messages.size(), problems);
            if (!problems.isEmpty()) {
                return problems;
            }
            partitions.forEach((codec, tp) -> compare(codec, messages, all.get(tp), problems));
            if (!problems.isEmpty()) {
                return problems;
            }

            partitions.values().forEach(tp -> starts.put(tp, (long) MIDDLE));
            Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> middle = read(consumer, starts, 1, problems);
            partitions.forEach((codec, tp) -> {
                List<ConsumerRecord<byte[], byte[]>> got = middle.get(tp);
                if (!got.isEmpty() && got.get(0).offset() != MIDDLE) {
                    problems.add(codec + ": seek(" + MIDDLE + ") read offset " + got.get(0).offset() + " first");
                }
            });

            long target = messages.get(TIMESTAMP_INDEX).timestamp() - TIMESTAMP_STEP_MS / 2;
            Map<TopicPartition, Long> query = new HashMap<>();
            partitions.values().forEach(tp -> query.put(tp, target));
            Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
            partitions.forEach((codec, tp) -> {
                OffsetAndTimestamp at = found.get(tp);
                if (at == null || at.offset() != TIMESTAMP_INDEX) {
                    problems.add(codec + ": offsetsForTimes(" + target + ") gave " + at + ", expected offset " + TIMESTAMP_INDEX);
                } else {
                    starts.put(tp, at.offset());
                }
            });
            if (!problems.isEmpty()) {
                return problems;
            }
            Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> byTime = read(consumer, starts, 1, problems);
            partitions.forEach((codec, tp) -> {
                List<ConsumerRecord<byte[], byte[]>> got = byTime.get(tp);
                if (!got.isEmpty() && got.get(0).offset() != TIMESTAMP_INDEX) {
                    problems.add(codec + ": seek to offsetsForTimes' " + TIMESTAMP_INDEX + " read offset "
                            + got.get(0).offset() + " first");
                }
            });
        } catch (Exception e) {
            problems.add("consumer: " + Errors.describe(e));
        }
        return problems;
    }

    /** Seeks each partition to its start and polls until each has {@code want} records. */
    private static Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> read(
            KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> starts, int want, List<String> problems) {
        Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> out = new HashMap<>();
        starts.forEach((tp, offset) -> {
            consumer.seek(tp, offset);
            out.put(tp, new ArrayList<>());
        });
        long idleSince = System.nanoTime();
        while (out.values().stream().anyMatch(l -> l.size() < want)) {
            if (msSince(idleSince) > READ_IDLE_MS) {
                StringBuilder where = new StringBuilder();
                out.forEach((tp, l) -> {
                    if (l.size() < want) {
                        where.append(where.length() == 0 ? "" : ", ").append(tp).append(" at offset ")
                                .append(l.isEmpty() ? starts.get(tp) : l.get(l.size() - 1).offset() + 1);
                    }
                });
                problems.add("nothing more read in " + READ_IDLE_MS + " ms from " + where);
                break;
            }
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                List<ConsumerRecord<byte[], byte[]>> l = out.get(new TopicPartition(r.topic(), r.partition()));
                if (l != null && l.size() < want) {
                    l.add(r);
                    idleSince = System.nanoTime();
                }
            }
        }
        return out;
    }

    private static void compare(String codec, List<Message> messages, List<ConsumerRecord<byte[], byte[]>> records,
            List<String> problems) {
        int before = problems.size();
        if (records.size() != messages.size()) {
            problems.add(codec + ": read back " + records.size() + " records, expected " + messages.size());
        }
        for (int i = 0; i < Math.min(records.size(), messages.size()) && problems.size() - before < 5; i++) {
            ConsumerRecord<byte[], byte[]> r = records.get(i);
            Message m = messages.get(i);
            if (r.offset() != i) {
                problems.add(codec + ": record " + i + " has offset " + r.offset() + ", expected " + i);
            } else if (!Arrays.equals(r.key(), m.key())) {
                problems.add(codec + ": offset " + i + ": key " + show(r.key()) + ", expected " + show(m.key()));
            } else if (!Arrays.equals(r.value(), m.value())) {
                problems.add(codec + ": offset " + i + ": value " + show(r.value()) + ", expected " + show(m.value()));
            } else if (!sameHeaders(r.headers().toArray(), m.headers())) {
                problems.add(codec + ": offset " + i + ": headers " + Arrays.toString(r.headers().toArray())
                        + ", expected " + m.headers());
            } else if (r.timestamp() != m.timestamp()) {
                problems.add(codec + ": offset " + i + ": timestamp " + r.timestamp() + ", expected " + m.timestamp());
            }
        }
    }

    private static boolean sameHeaders(Header[] got, List<Header> want) {
        if (got.length != want.size()) {
            return false;
        }
        for (int i = 0; i < got.length; i++) {
            if (!got[i].key().equals(want.get(i).key()) || !Arrays.equals(got[i].value(), want.get(i).value())) {
                return false;
            }
        }
        return true;
    }

    private static String show(byte[] b) {
        if (b == null) {
            return "null";
        }
        return b.length + " bytes " + Arrays.toString(Arrays.copyOf(b, Math.min(b.length, 16)));
    }

    /**
     * Keys and values mixing text and arbitrary bytes; every 10th key null, record 1 with an empty
     * value and record 2 with a null one; headers with a repeated name and an empty value;
     * timestamps an hour back, TIMESTAMP_STEP_MS apart.
     */
    static List<Message> makeMessages(int count, long seed) {
        Random rand = new Random(seed);
        String[] words = {"kafka", "gregor", "offset", "batch", "record", "header", "ü€✓"};
        long base = System.currentTimeMillis() - 3_600_000;
        List<Message> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            byte[] key = null;
            if (i % 10 != 0) {
                key = ("key-" + i).getBytes(StandardCharsets.UTF_8);
                if (i % 3 == 0) {
                    key = Arrays.copyOf(key, key.length + 4);
                    for (int j = key.length - 4; j < key.length; j++) {
                        key[j] = (byte) rand.nextInt(256);
                    }
                }
            }
            double r = rand.nextDouble();
            int len = r < 0.05 ? 1 + rand.nextInt(2000) : 1 + rand.nextInt(120);
            byte[] value;
            if (r < 0.5) {
                StringBuilder sb = new StringBuilder();
                while (sb.length() < len) {
                    sb.append(words[rand.nextInt(words.length)]).append(' ');
                }
                value = Arrays.copyOf(sb.toString().getBytes(StandardCharsets.UTF_8), len);
            } else {
                value = new byte[len];
                rand.nextBytes(value);
            }
            if (i == 1) {
                value = new byte[0];
            } else if (i == 2) {
                value = null;
            }
            List<Header> headers = List.of(
                    new RecordHeader("compat", "roundtrip".getBytes(StandardCharsets.UTF_8)),
                    new RecordHeader("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8)),
                    new RecordHeader("dup", "1".getBytes(StandardCharsets.UTF_8)),
                    new RecordHeader("dup", "2".getBytes(StandardCharsets.UTF_8)),
                    new RecordHeader("empty", new byte[0]));
            out.add(new Message(key, value, headers, base + i * TIMESTAMP_STEP_MS));
        }
        return out;
    }

    private static long msSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }
}
