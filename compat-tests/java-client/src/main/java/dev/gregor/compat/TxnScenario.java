package dev.gregor.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A transactional KafkaProducer (a transactional.id fresh per run) writes COUNT transactions of
 * PER_PARTITION records to each of the 3 partitions of a fresh topic; the transactions in
 * ABORTED are flushed (so their records are in the log) and aborted, the others committed. A
 * read_committed consumer must then see exactly the committed records and a read_uncommitted
 * one all of them, each once, in production order per partition, at the acknowledged offsets.
 */
final class TxnScenario implements Scenario {
    private static final int COUNT = 8;
    private static final int PER_PARTITION = 5;
    private static final Set<Integer> ABORTED = Set.of(1, 4, 6);

    @Override
    public boolean run(String bootstrap) throws Exception {
        String stamp = System.currentTimeMillis() + "-" + ProcessHandle.current().pid();
        String topic = "compat-txn-java-" + stamp;
        ExactlyOnce.createTopic(bootstrap, topic);

        Map<Integer, List<String>> order = new HashMap<>();
        Set<String> committed = new HashSet<>();
        Set<String> aborted = new HashSet<>();
        Map<String, Long> offsets = new ConcurrentHashMap<>();
        List<String> problems = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = Clients.transactionalProducer(bootstrap, "compat-txn-java-" + stamp)) {
            producer.initTransactions();
            for (int t = 0; t < COUNT; t++) {
                producer.beginTransaction();
                List<String> values = new ArrayList<>();
                for (int k = 0; k < PER_PARTITION; k++) {
                    for (int p = 0; p < ExactlyOnce.PARTITIONS; p++) {
                        String value = "t" + t + "-p" + p + "-" + k;
                        values.add(value);
                        order.computeIfAbsent(p, x -> new ArrayList<>()).add(value);
                        producer.send(new ProducerRecord<>(topic, p, null, value.getBytes(StandardCharsets.UTF_8)),
                                (md, err) -> {
                                    if (err != null) {
                                        synchronized (problems) {
                                            problems.add("delivery of " + value + " failed: " + Errors.describe(err));
                                        }
                                    } else {
                                        offsets.put(value, md.offset());
                                    }
                                });
                    }
                }
                // Flushed before an abort too, so the aborted records are really in the log.
                producer.flush();
                if (ABORTED.contains(t)) {
                    producer.abortTransaction();
                    aborted.addAll(values);
                } else {
                    producer.commitTransaction();
                    committed.addAll(values);
                }
            }
        }
        System.out.println(COUNT + " transactions on " + topic + ": " + committed.size() + " records committed, "
                + aborted.size() + " aborted (transactions " + new java.util.TreeSet<>(ABORTED) + ")");
        if (!problems.isEmpty()) {
            problems.forEach(p -> System.out.println("problem: " + p));
            return false;
        }

        Set<String> all = new HashSet<>(committed);
        all.addAll(aborted);
        Map<Integer, List<ExactlyOnce.Read>> readCommitted = ExactlyOnce.readTopic(bootstrap, topic, "read_committed",
                committed.size());
        Map<Integer, List<ExactlyOnce.Read>> readAll = ExactlyOnce.readTopic(bootstrap, topic, "read_uncommitted",
                all.size());
        for (var e : readCommitted.entrySet()) {
            problems.addAll(ExactlyOnce.checkPartition("read_committed partition " + e.getKey(),
                    order.getOrDefault(e.getKey(), List.of()), committed, committed, e.getValue(), offsets));
        }
        for (var e : readAll.entrySet()) {
            problems.addAll(ExactlyOnce.checkPartition("read_uncommitted partition " + e.getKey(),
                    order.getOrDefault(e.getKey(), List.of()), null, all, e.getValue(), offsets));
        }
        problems.forEach(p -> System.out.println("problem: " + p));
        if (problems.isEmpty()) {
            System.out.println("read_committed: the " + committed.size() + " committed records, each once, in order; "
                    + "read_uncommitted: all " + all.size());
        }
        return problems.isEmpty();
    }
}
