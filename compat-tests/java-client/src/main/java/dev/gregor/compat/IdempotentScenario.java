package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * A KafkaProducer with the client's defaults (idempotence on, acks=all, up to 5 requests in
 * flight per connection) sends COUNT records round-robin to the 3 partitions of a fresh topic.
 * A consumer must read each exactly once, in send order per partition, at its acknowledged
 * offset. Admin.describeProducers (where the broker has DescribeProducers) must show one
 * producer per partition, the one that wrote it, with the last sequence number it used.
 */
final class IdempotentScenario implements Scenario {
    private static final int COUNT = 3_000;

    @Override
    public boolean run(String bootstrap) throws Exception {
        String topic = "compat-idempotent-java-" + System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        ExactlyOnce.createTopic(bootstrap, topic);

        Map<Integer, List<String>> order = new HashMap<>();
        Map<String, Long> offsets = new HashMap<>();
        List<String> problems = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = Clients.defaultProducer(bootstrap)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>(COUNT);
            for (int i = 0; i < COUNT; i++) {
                int p = i % ExactlyOnce.PARTITIONS;
                String value = "r-" + i;
                order.computeIfAbsent(p, x -> new ArrayList<>()).add(value);
                acks.add(producer.send(new ProducerRecord<>(topic, p, null, value.getBytes(StandardCharsets.UTF_8))));
            }
            producer.flush();
            for (int i = 0; i < COUNT; i++) {
                offsets.put("r-" + i, acks.get(i).get(10, TimeUnit.SECONDS).offset());
            }
        }
        System.out.println(COUNT + " records acknowledged on " + topic + " (defaults: enable.idempotence, acks=all)");

        Map<Integer, List<ExactlyOnce.Read>> read = ExactlyOnce.readTopic(bootstrap, topic, "read_uncommitted", COUNT);
        for (var e : read.entrySet()) {
            List<String> values = order.getOrDefault(e.getKey(), List.of());
            problems.addAll(ExactlyOnce.checkPartition("partition " + e.getKey(), values, null,
                    new java.util.HashSet<>(values), e.getValue(), offsets));
        }
        problems.addAll(checkProducers(bootstrap, topic));
        problems.forEach(p -> System.out.println("problem: " + p));
        if (problems.isEmpty()) {
            System.out.println("each of the " + COUNT + " records exactly once, at its acknowledged offset, in order");
        }
        return problems.isEmpty();
    }

    /** The idempotent producer's state per partition, as the broker keeps it. */
    private static List<String> checkProducers(String bootstrap, String topic) throws Exception {
        List<String> problems = new ArrayList<>();
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < ExactlyOnce.PARTITIONS; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        Map<TopicPartition, PartitionProducerState> states;
        try (Admin admin = Clients.admin(bootstrap)) {
            states = admin.describeProducers(tps).all().get();
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof UnsupportedVersionException) {
                System.out.println("describeProducers: not supported by this broker, not checked");
                return problems;
            }
            throw e;
        }
        long producerId = -2;
        for (TopicPartition tp : tps) {
            List<ProducerState> active = states.get(tp).activeProducers();
            System.out.println("describeProducers " + tp + ": " + active);
            int expectedLast = COUNT / ExactlyOnce.PARTITIONS - 1;
            if (active.size() != 1) {
                problems.add(tp + ": " + active.size() + " active producers, expected 1");
                continue;
            }
            ProducerState s = active.get(0);
            if (producerId == -2) {
                producerId = s.producerId();
            }
            if (s.producerId() < 0 || s.producerId() != producerId) {
                problems.add(tp + ": producer id " + s.producerId() + ", expected one id >= 0 for every partition");
            }
            if (s.lastSequence() != expectedLast) {
                problems.add(tp + ": last sequence " + s.lastSequence() + ", expected " + expectedLast);
            }
        }
        return problems;
    }
}
