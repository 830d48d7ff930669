package dev.gregor.compat.streams;

import java.util.concurrent.ExecutionException;

/**
 * Entry point: {@code scenario <name> <bootstrap>}, where the bootstrap may be a comma-separated
 * list of host:port. Exit codes follow the compat-client contract: 0 pass, 1 fail, 3 not
 * applicable (an unknown scenario, or a cluster the scenario cannot run on).
 */
public final class Main {
    static final int PASS = 0;
    static final int FAIL = 1;
    static final int USAGE = 2;
    static final int NOT_APPLICABLE = 3;

    static final String LABEL = "kafka-streams";

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    private static int run(String[] args) {
        if (args.length == 1 && args[0].equals("scenarios")) {
            System.out.println(StreamsEosScenario.NAME);
            System.out.println(StreamsEosScenario.NAME_GROUPS);
            return PASS;
        }
        if (args.length != 3 || !args[0].equals("scenario")) {
            System.err.println("usage: scenario <name> <bootstrap host:port[,host:port...]> | scenarios");
            return USAGE;
        }
        if (!args[1].equals(StreamsEosScenario.NAME) && !args[1].equals(StreamsEosScenario.NAME_GROUPS)) {
            System.out.println(LABEL + ": scenario '" + args[1] + "' is not implemented (have: "
                    + StreamsEosScenario.NAME + ", " + StreamsEosScenario.NAME_GROUPS + ")");
            return NOT_APPLICABLE;
        }
        int rc;
        try {
            rc = new StreamsEosScenario(args[1], args[2]).run();
        } catch (Throwable t) {
            System.out.println("FAIL " + LABEL + " " + args[1] + ": " + describe(t));
            return FAIL;
        }
        if (rc == PASS || rc == FAIL) {
            System.out.println((rc == PASS ? "PASS " : "FAIL ") + LABEL + " " + args[1]);
        }
        return rc;
    }

    /** Unwraps future wrappers so the broker-facing cause is what gets printed. */
    static String describe(Throwable t) {
        Throwable cause = t;
        while (cause instanceof ExecutionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        StringBuilder sb = new StringBuilder(cause.getClass().getName());
        if (cause.getMessage() != null) {
            sb.append(": ").append(cause.getMessage());
        }
        Throwable inner = cause.getCause();
        if (inner != null && inner != cause) {
            sb.append(" (caused by ").append(inner.getClass().getName());
            if (inner.getMessage() != null) {
                sb.append(": ").append(inner.getMessage());
            }
            sb.append(')');
        }
        return sb.toString();
    }
}
