package dev.gregor.compat;

import java.util.Properties;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/** Client construction shared by all scenarios, so every scenario has the same time bounds. */
final class Clients {
    /** Budget for a single admin call, retries included. */
    static final int API_TIMEOUT_MS = 15_000;

    private Clients() {
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, "gregor-compat-java");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(AdminClientConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MS_CONFIG, 5_000);
        p.put(AdminClientConfig.SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS_CONFIG, 5_000);
        // Short backoffs so a broker that comes up late is still reached inside the budget,
        // without hammering a port that refuses connections.
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, 200);
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 2_000);
        return Admin.create(p);
    }
}
