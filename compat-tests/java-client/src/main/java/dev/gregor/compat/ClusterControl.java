package dev.gregor.compat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The matrix's broker control endpoint (compat-tests/lib/cluster-control.mjs), at the base URL in
 * COMPAT_CLUSTER_CONTROL: {@code GET /brokers} lists {@code [{"id":1,"bootstrap":"127.0.0.1:PORT","running":true},...]}
 * (one entry for a single broker), {@code POST /brokers/<id>/kill} answers once that broker was
 * SIGKILLed and has exited, {@code POST /brokers/<id>/start} once it runs again on its port and data.
 */
final class ClusterControl {
    static final String ENV = "COMPAT_CLUSTER_CONTROL";

    record Broker(int id, String bootstrap, boolean running) {
    }

    private static final Pattern OBJECT = Pattern.compile("\\{([^{}]*)\\}");
    private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(\\d+)");
    private static final Pattern BOOTSTRAP = Pattern.compile("\"bootstrap\"\\s*:\\s*\"([^\"]*)\"");
    private static final Pattern RUNNING = Pattern.compile("\"running\"\\s*:\\s*(true|false)");

    private final String base;
    private final HttpClient http;

    private ClusterControl(String base) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** The endpoint named by the environment, or null when there is none (a broker started by hand). */
    static ClusterControl fromEnv() {
        String base = System.getenv(ENV);
        return base == null || base.isBlank() ? null : new ClusterControl(base.trim());
    }

    String base() {
        return base;
    }

    List<Broker> brokers() throws IOException, InterruptedException {
        String body = call("GET", "/brokers", Duration.ofSeconds(10));
        List<Broker> brokers = new ArrayList<>();
        Matcher m = OBJECT.matcher(body);
        while (m.find()) {
            String o = m.group(1);
            Matcher id = ID.matcher(o);
            Matcher bootstrap = BOOTSTRAP.matcher(o);
            Matcher running = RUNNING.matcher(o);
            if (!id.find() || !bootstrap.find() || !running.find()) {
                throw new IOException(ENV + " " + base + "/brokers: entry without id, bootstrap and running: {" + o + "}");
            }
            brokers.add(new Broker(Integer.parseInt(id.group(1)), bootstrap.group(1), running.group(1).equals("true")));
        }
        if (brokers.isEmpty()) {
            throw new IOException(ENV + " " + base + "/brokers listed no broker: " + body);
        }
        return brokers;
    }

    void kill(int id, Duration timeout) throws IOException, InterruptedException {
        call("POST", "/brokers/" + id + "/kill", timeout);
    }

    void start(int id, Duration timeout) throws IOException, InterruptedException {
        call("POST", "/brokers/" + id + "/start", timeout);
    }

    private String call(String method, String path, Duration timeout) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(timeout)
                .method(method, HttpRequest.BodyPublishers.noBody())
                .build();
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new IOException(method + " " + base + path + " answered " + response.statusCode() + ": " + response.body().trim());
        }
        return response.body();
    }
}
