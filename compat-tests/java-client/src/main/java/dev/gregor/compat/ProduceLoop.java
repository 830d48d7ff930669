package dev.gregor.compat;

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * {@code produce-loop <bootstrap> <topic> <seconds> <out-file>}: produces one
 * record about every 2 ms for that long, with the client's defaults for
 * durability (acks=all, idempotence on) and retries, values "java-0",
 * "java-1", ...; each acknowledged record is written to the out file as
 * "partition offset value" once its callback reports success. For the
 * cluster failover tests, which kill brokers meanwhile and then look for
 * every acknowledged record.
 */
final class ProduceLoop {
    private ProduceLoop() {
    }

    static int run(String bootstrap, String topic, long seconds, String outPath) throws IOException, InterruptedException {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        AtomicLong acknowledged = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        try (PrintWriter out = new PrintWriter(new FileWriter(outPath, StandardCharsets.UTF_8));
             KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            for (long i = 0; System.nanoTime() < end; i++) {
                String value = "java-" + i;
                producer.send(new ProducerRecord<>(topic, value), (md, err) -> {
                    if (err != null) {
                        failed.incrementAndGet();
                        return;
                    }
                    synchronized (out) {
                        out.println(md.partition() + " " + md.offset() + " " + value);
                    }
                    acknowledged.incrementAndGet();
                });
                Thread.sleep(2);
            }
            producer.flush();
            producer.close(Duration.ofSeconds(60));
        }
        System.out.println("java-client produce-loop: acknowledged " + acknowledged.get() + " failed " + failed.get());
        return Main.PASS;
    }
}
