package dev.gregor.compat.streams;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Writes the text to the input topic from a thread of its own, in two halves: the second half
 * only once {@link #releaseSecondHalf()} is called, so the scenario can kill a broker between
 * them. The producer is idempotent with acks=all and retries until its delivery timeout, so a
 * broker that dies under it costs neither a line nor a duplicate.
 */
final class InputProducer implements AutoCloseable {
    /** Lines handed to the producer together before a short pause, so production is spread over a few seconds. */
    private static final int CHUNK = 100;
    private static final long CHUNK_PAUSE_MS = 100;

    private final String topic;
    private final List<String> lines;
    private final int half;
    private final long deadlineNanos;
    private final KafkaProducer<String, String> producer;
    private final CountDownLatch secondHalf = new CountDownLatch(1);
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicReference<String> firstError = new AtomicReference<>();
    private final Thread thread;
    private volatile boolean finished;

    InputProducer(String bootstrap, String topic, List<String> lines, long deadlineNanos) {
        this.topic = topic;
        this.lines = lines;
        this.half = lines.size() / 2;
        this.deadlineNanos = deadlineNanos;
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "gregor-compat-streams-input");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        // Long enough to ride out a leader's death and the election after it; short enough to
        // fail a record inside the scenario's budget when the cluster never recovers.
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 90_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        p.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        this.producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        this.thread = new Thread(this::produce, "input-producer");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void produce() {
        try {
            send(0, half);
            producer.flush();
            long waitNanos = deadlineNanos - System.nanoTime();
            if (waitNanos <= 0 || !secondHalf.await(waitNanos, TimeUnit.NANOSECONDS)) {
                return;
            }
            send(half, lines.size());
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            firstError.compareAndSet(null, Main.describe(e));
        } finally {
            finished = true;
        }
    }

    private void send(int from, int to) throws InterruptedException {
        for (int i = from; i < to; i++) {
            producer.send(new ProducerRecord<>(topic, "line-" + i, lines.get(i)), (metadata, error) -> {
                if (error == null) {
                    acked.incrementAndGet();
                } else {
                    failed.incrementAndGet();
                    firstError.compareAndSet(null, Main.describe(error));
                }
            });
            if ((i - from + 1) % CHUNK == 0 && i + 1 < to) {
                Thread.sleep(CHUNK_PAUSE_MS);
            }
        }
    }

    void releaseSecondHalf() {
        secondHalf.countDown();
    }

    int half() {
        return half;
    }

    long acked() {
        return acked.get();
    }

    long failed() {
        return failed.get();
    }

    String firstError() {
        return firstError.get();
    }

    boolean firstHalfAcked() {
        return acked.get() >= half;
    }

    /** Every line acknowledged. */
    boolean done() {
        return acked.get() == lines.size();
    }

    boolean finished() {
        return finished;
    }

    @Override
    public void close() {
        // Unsent records fail at once, which also ends a flush the thread may still be in.
        producer.close(Duration.ofSeconds(3));
    }
}
