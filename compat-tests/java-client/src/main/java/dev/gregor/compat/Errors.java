package dev.gregor.compat;

import java.util.concurrent.ExecutionException;

final class Errors {
    private Errors() {
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
