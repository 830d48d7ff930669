package dev.gregor.compat.streams;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Runs Apache Kafka's kafka-streams-groups tool (org.apache.kafka.tools.streams.StreamsGroupCommand,
 * from the kafka-tools compat client's classpath, {@code KAFKA_TOOLS_LIB}) against the running
 * application: --list must name the group, --describe --members must show its members (one per
 * stream thread) and --describe --offsets the committed offsets of the input topic.
 */
final class StreamsGroupsTool {
    static final String ENV = "KAFKA_TOOLS_LIB";
    private static final String MAIN = "org.apache.kafka.tools.streams.StreamsGroupCommand";
    private static final long RUN_TIMEOUT_S = 40;
    private static final int THREADS = 2;

    private final String bootstrap;
    private final String group;
    private final String input;
    private final Consumer<String> log;
    private final long lastCall;

    StreamsGroupsTool(String bootstrap, String group, String input, Consumer<String> log, long lastCall) {
        this.bootstrap = bootstrap;
        this.group = group;
        this.input = input;
        this.log = log;
        this.lastCall = lastCall;
    }

    /** The problems found; none when the tool describes the group as it is. */
    List<String> check() {
        List<String> problems = new ArrayList<>();
        String lib = System.getenv(ENV);
        if (lib == null || !new File(lib, "kafka-tools-4.4.0.jar").isFile()) {
            problems.add("kafka-streams-groups not found: set " + ENV + " to compat-tests/kafka-tools/target/lib (run compat-tests/kafka-tools/run install)");
            return problems;
        }
        try {
            String listed = run(lib, problems, "--list");
            if (listed != null && listed.lines().map(String::trim).noneMatch(l -> l.equals(group) || l.startsWith(group + " "))) {
                problems.add("kafka-streams-groups --list does not name " + group + ": " + oneLine(listed));
            }
            String members = run(lib, problems, "--describe", "--group", group, "--members");
            if (members != null) {
                long rows = members.lines().filter(l -> l.startsWith(group + " ")).count();
                if (rows != THREADS) {
                    problems.add("kafka-streams-groups --describe --members shows " + rows + " members of " + group
                            + " (want " + THREADS + ", one per stream thread): " + oneLine(members));
                }
            }
            String offsets = run(lib, problems, "--describe", "--group", group, "--offsets");
            if (offsets != null && offsets.lines().noneMatch(l -> l.startsWith(group + " ") && l.contains(input))) {
                problems.add("kafka-streams-groups --describe --offsets shows no offsets of " + input + ": " + oneLine(offsets));
            }
            String state = run(lib, problems, "--describe", "--group", group, "--state");
            if (state != null && state.lines().noneMatch(l -> l.startsWith(group + " ") && l.contains("Stable"))) {
                problems.add("kafka-streams-groups --describe --state does not show " + group + " Stable: " + oneLine(state));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            problems.add("interrupted while running kafka-streams-groups");
        }
        return problems;
    }

    /** The tool's standard output, or null (with the problem noted) when it failed. */
    private String run(String lib, List<String> problems, String... args) throws InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", lib + File.separator + "*", MAIN, "--bootstrap-server", bootstrap));
        cmd.addAll(List.of(args));
        String label = "kafka-streams-groups " + String.join(" ", args);
        long left = TimeUnit.NANOSECONDS.toSeconds(lastCall - System.nanoTime());
        long timeout = Math.max(5, Math.min(RUN_TIMEOUT_S, left));
        try {
            Path out = Files.createTempFile("gregor-compat-tool-", ".out");
            Path err = Files.createTempFile("gregor-compat-tool-", ".err");
            try {
                Process proc = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
                long started = System.nanoTime();
                if (!proc.waitFor(timeout, TimeUnit.SECONDS)) {
                    proc.destroyForcibly();
                    problems.add(label + ": no answer within " + timeout + " s");
                    return null;
                }
                String stdout = Files.readString(out, StandardCharsets.UTF_8);
                String stderr = Files.readString(err, StandardCharsets.UTF_8);
                log.accept(String.format(Locale.ROOT, "%s (exit %d, %.1f s):%n%s", label, proc.exitValue(),
                        (System.nanoTime() - started) / 1e9, stdout.stripTrailing()));
                if (proc.exitValue() != 0 || stdout.contains("Error:")) {
                    problems.add(label + " failed (exit " + proc.exitValue() + "): " + oneLine(stdout + " " + stderr));
                    return null;
                }
                return stdout;
            } finally {
                Files.deleteIfExists(out);
                Files.deleteIfExists(err);
            }
        } catch (IOException e) {
            problems.add(label + ": " + e.getMessage());
            return null;
        }
    }

    private static String oneLine(String s) {
        String flat = s.replaceAll("\\s+", " ").trim();
        return flat.length() > 400 ? flat.substring(0, 400) + "..." : flat;
    }
}
