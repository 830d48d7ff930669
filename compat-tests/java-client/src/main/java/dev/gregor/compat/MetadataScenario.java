package dev.gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.common.Node;

/**
 * Describes the cluster and lists topics through the Admin API.
 * Passes when brokers are real addresses, the controller is one of them, the cluster id is set,
 * and the topic listing succeeds.
 */
final class MetadataScenario implements Scenario {
    private static final long GRACE_MS = 2_000;

    @Override
    public boolean run(String bootstrap) throws Exception {
        List<String> problems = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Clients.API_TIMEOUT_MS);
        Admin admin = Clients.admin(bootstrap);
        try {
            DescribeClusterResult cluster = admin.describeCluster(
                    new DescribeClusterOptions().timeoutMs(remainingMs(deadline)));
            Collection<Node> nodes = cluster.nodes().get(waitMs(deadline), TimeUnit.MILLISECONDS);
            Node controller = cluster.controller().get(waitMs(deadline), TimeUnit.MILLISECONDS);
            String clusterId = cluster.clusterId().get(waitMs(deadline), TimeUnit.MILLISECONDS);

            System.out.println("cluster id: " + (clusterId == null ? "<null>" : "\"" + clusterId + "\""));
            System.out.println("brokers (" + nodes.size() + "):");
            Set<Integer> ids = new HashSet<>();
            for (Node n : nodes) {
                System.out.println("  id=" + n.id() + " " + n.host() + ":" + n.port()
                        + (n.rack() == null ? "" : " rack=" + n.rack()));
                ids.add(n.id());
                if (n.host() == null || n.host().isEmpty()) {
                    problems.add("broker " + n.id() + " has an empty host");
                }
                if (n.port() <= 0) {
                    problems.add("broker " + n.id() + " has port " + n.port());
                }
            }
            if (nodes.isEmpty()) {
                problems.add("no brokers returned");
            }
            if (controller == null || controller.isEmpty()) {
                System.out.println("controller: <none>");
                problems.add("no controller returned");
            } else {
                System.out.println("controller: id=" + controller.id());
                if (!ids.contains(controller.id())) {
                    problems.add("controller id " + controller.id() + " is not among the brokers " + ids);
                }
            }
            if (clusterId == null || clusterId.isEmpty()) {
                problems.add("cluster id is empty");
            }

            Set<String> topics = new TreeSet<>(admin.listTopics(
                            new ListTopicsOptions().timeoutMs(remainingMs(deadline)))
                    .names().get(waitMs(deadline), TimeUnit.MILLISECONDS));
            System.out.println("topics (" + topics.size() + "): " + topics);
        } finally {
            // Closing must not eat into a hung broker's budget beyond a short grace period.
            admin.close(Duration.ofSeconds(2));
        }
        for (String p : problems) {
            System.out.println("problem: " + p);
        }
        return problems.isEmpty();
    }

    /**
     * Waits a little past the call's own timeout so the client reports its own, more specific
     * timeout error rather than a bare future timeout.
     */
    private static long waitMs(long deadlineNanos) {
        return remainingMs(deadlineNanos) + GRACE_MS;
    }

    private static int remainingMs(long deadlineNanos) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        return (int) Math.max(1, left);
    }
}
