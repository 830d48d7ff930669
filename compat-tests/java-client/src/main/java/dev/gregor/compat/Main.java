package dev.gregor.compat;

import java.util.Map;
import java.util.TreeMap;

/**
 * Entry point: {@code scenario <name> <bootstrap host:port>}, or {@code produce-loop} (see ProduceLoop), or
 * {@code txn-produce-loop} (see TxnProduceLoop).
 * Exit codes follow the compat-client contract: 0 pass, 1 fail, 3 scenario not implemented.
 */
public final class Main {
    static final int PASS = 0;
    static final int FAIL = 1;
    static final int USAGE = 2;
    static final int NOT_IMPLEMENTED = 3;

    /** New scenarios (produce, consume, groups, transactions) register here. */
    private static final Map<String, Scenario> SCENARIOS = new TreeMap<>();

    static {
        SCENARIOS.put("admin", new AdminScenario());
        SCENARIOS.put("group", new GroupScenario(false));
        SCENARIOS.put("group-consumer", new GroupScenario(true));
        SCENARIOS.put("group-admin", new GroupAdminScenario());
        SCENARIOS.put("group-migration", new MigrationScenario());
        SCENARIOS.put("idempotent", new IdempotentScenario());
        SCENARIOS.put("metadata", new MetadataScenario());
        SCENARIOS.put("roundtrip", new RoundtripScenario());
        SCENARIOS.put("share-group", new ShareGroupScenario());
        SCENARIOS.put("txn", new TxnScenario());
        SCENARIOS.put("txn-cluster", new TxnClusterScenario());
    }

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    private static int run(String[] args) {
        if (args.length == 1 && args[0].equals("scenarios")) {
            SCENARIOS.keySet().forEach(System.out::println);
            return PASS;
        }
        if (args.length == 5 && args[0].equals("produce-loop")) {
            try {
                return ProduceLoop.run(args[1], args[2], Long.parseLong(args[3]), args[4]);
            } catch (Throwable t) {
                System.out.println("FAIL java-client produce-loop: " + Errors.describe(t));
                return FAIL;
            }
        }
        if (args.length == 5 && args[0].equals("txn-produce-loop")) {
            try {
                return TxnProduceLoop.run(args[1], args[2], Long.parseLong(args[3]), args[4]);
            } catch (Throwable t) {
                System.out.println("FAIL java-client txn-produce-loop: " + Errors.describe(t));
                return FAIL;
            }
        }
        if (args.length != 3 || !args[0].equals("scenario")) {
            System.err.println("usage: scenario <name> <bootstrap host:port> | scenarios | produce-loop <bootstrap> <topic> <seconds> <out-file>"
                    + " | txn-produce-loop <bootstrap> <topic> <seconds> <out-file>");
            return USAGE;
        }
        Scenario scenario = SCENARIOS.get(args[1]);
        if (scenario == null) {
            System.out.println("java-client: scenario '" + args[1] + "' is not implemented (have: "
                    + String.join(", ", SCENARIOS.keySet()) + ")");
            return NOT_IMPLEMENTED;
        }
        try {
            boolean ok = scenario.run(args[2]);
            System.out.println((ok ? "PASS" : "FAIL") + " java-client " + args[1]);
            return ok ? PASS : FAIL;
        } catch (TxnClusterScenario.NotApplicable n) {
            System.out.println("java-client " + args[1] + ": not applicable: " + n.getMessage());
            return NOT_IMPLEMENTED;
        } catch (Throwable t) {
            System.out.println("FAIL java-client " + args[1] + ": " + Errors.describe(t));
            return FAIL;
        }
    }
}
