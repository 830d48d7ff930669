package dev.gregor.compat;

/** One named check run against a broker. */
interface Scenario {
    /**
     * Runs the check against {@code bootstrap}, printing what it sees.
     *
     * @return true when every expectation held; exceptions count as failure
     */
    boolean run(String bootstrap) throws Exception;
}
