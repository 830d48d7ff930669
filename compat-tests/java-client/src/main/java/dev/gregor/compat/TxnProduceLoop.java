package dev.gregor.compat;

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * {@code txn-produce-loop <bootstrap> <topic> <seconds> <out-file>}: runs
 * transactions of ten records each (values "javatxn-T-I") for that long,
 * one transactional id throughout. Each transaction's outcome goes to the out
 * file once known: "C partition offset value" for every record of a
 * committed one, "A value" for every record of one aborted, "U value" where
 * the outcome is unknown (the producer failed for good during the commit and
 * was made again). For the cluster failover tests, which kill brokers
 * meanwhile, then read the topic read_committed: every committed record once,
 * at its offset, and nothing of an aborted transaction.
 */
final class TxnProduceLoop {
    private static final int RECORDS_PER_TXN = 10;

    private TxnProduceLoop() {
    }

    private static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        producer.initTransactions();
        return producer;
    }

    static int run(String bootstrap, String topic, long seconds, String outPath) throws IOException {
        String transactionalId = "chaos-txn-" + System.currentTimeMillis();
        long committed = 0;
        long aborted = 0;
        long unknown = 0;
        try (PrintWriter out = new PrintWriter(new FileWriter(outPath, StandardCharsets.UTF_8))) {
            KafkaProducer<String, String> producer = producer(bootstrap, transactionalId);
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            for (long t = 0; System.nanoTime() < end; t++) {
                List<String> values = new ArrayList<>();
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                boolean inCommit = false;
                try {
                    producer.beginTransaction();
                    for (int i = 0; i < RECORDS_PER_TXN; i++) {
                        String value = "javatxn-" + t + "-" + i;
                        values.add(value);
                        sent.add(producer.send(new ProducerRecord<>(topic, value)));
                    }
                    inCommit = true;
                    commit(producer);
                    for (int i = 0; i < values.size(); i++) {
                        RecordMetadata md = sent.get(i).get();
                        out.println("C " + md.partition() + " " + md.offset() + " " + values.get(i));
                    }
                    committed++;
                } catch (Exception e) {
                    // Abortable errors: the transaction is aborted and its records must never be read committed.
                    // Anything the producer cannot go on from: it is made again, and a transaction it was
                    // committing has an unknown outcome.
                    boolean abortedNow = false;
                    try {
                        producer.abortTransaction();
                        abortedNow = true;
                    } catch (Exception abortFailed) {
                        producer.close(Duration.ofSeconds(5));
                        producer = producer(bootstrap, transactionalId);
                    }
                    String mark = abortedNow || !inCommit ? "A " : "U ";
                    for (String v : values) out.println(mark + v);
                    if (mark.equals("A ")) aborted++;
                    else unknown++;
                }
                out.flush();
            }
            producer.close(Duration.ofSeconds(30));
        }
        System.out.println("java-client txn-produce-loop: committed " + committed + " aborted " + aborted + " unknown " + unknown);
        return Main.PASS;
    }

    /** Commits, trying again after a timeout as the client allows, for up to a minute. */
    private static void commit(KafkaProducer<String, String> producer) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (;;) {
            try {
                producer.commitTransaction();
                return;
            } catch (TimeoutException e) {
                if (System.nanoTime() > deadline) throw new KafkaException("commit did not complete within a minute", e);
            }
        }
    }
}
