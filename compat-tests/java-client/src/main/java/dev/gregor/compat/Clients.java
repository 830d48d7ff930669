package dev.gregor.compat;

import java.util.Properties;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Client construction shared by all scenarios, so every scenario has the same time bounds. */
final class Clients {
    /** Budget for a single admin call, retries included. */
    static final int API_TIMEOUT_MS = 15_000;

    private Clients() {
    }

    static Admin admin(String bootstrap) {
        Properties p = common(bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        return Admin.create(p);
    }

    /** A plain producer: no idempotence (so no InitProducerId), acks=all, the given codec. */
    static KafkaProducer<byte[], byte[]> producer(String bootstrap, String compressionType) {
        Properties p = common(bootstrap);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compressionType);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        // One request in flight: without idempotence, a retry (in a cluster the partition's leader
        // may learn of a new topic a moment after the client) must not put a later batch first.
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        // send() blocks at most this long for metadata; a record is failed after the delivery timeout.
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 8_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /**
     * A producer with the client's own defaults (idempotence on, acks=all) and only the time
     * bounds every scenario has.
     */
    static KafkaProducer<byte[], byte[]> defaultProducer(String bootstrap) {
        Properties p = common(bootstrap);
        bounded(p);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** A transactional producer (idempotence and acks=all follow from the transactional.id). */
    static KafkaProducer<byte[], byte[]> transactionalProducer(String bootstrap, String transactionalId) {
        Properties p = common(bootstrap);
        bounded(p);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static void bounded(Properties p) {
        // send() and the transaction calls block at most this long; a record is failed after the delivery timeout.
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 8_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
    }

    /** A consumer without group.id: assign() and seek() only, nothing committed. */
    static KafkaConsumer<byte[], byte[]> groupFreeConsumer(String bootstrap) {
        return groupFreeConsumer(bootstrap, new Properties());
    }

    /** The same, with extra settings (for instance isolation.level). */
    static KafkaConsumer<byte[], byte[]> groupFreeConsumer(String bootstrap, Properties extra) {
        Properties p = common(bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 200);
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static Properties common(String bootstrap) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, "gregor-compat-java");
        p.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(CommonClientConfigs.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, 5_000);
        p.put(CommonClientConfigs.SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS_CONFIG, 5_000);
        // Short backoffs so a broker that comes up late is still reached inside the budget,
        // without hammering a port that refuses connections.
        p.put(CommonClientConfigs.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        return p;
    }
}
