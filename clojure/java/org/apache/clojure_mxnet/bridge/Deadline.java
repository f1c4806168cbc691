package org.apache.clojure_mxnet.bridge;

/**
 * Each thread's deadline for the engine call it is making: what
 * {@link DeadlineClient} bounds a Py4J call's connection by. Apart from it
 * (and free of Py4J) so that a JVM without Py4J's jar (the JPype transport
 * alone) runs the same calls.
 */
public final class Deadline {
    private static final ThreadLocal<long[]> CURRENT = ThreadLocal.withInitial(() -> new long[1]);

    private Deadline() {
    }

    /**
     * Runs {@code engine.call(op, args)} on this thread with deadline
     * {@code deadline} (epoch ms; 0: none) for the transport's connection
     * (engines that need none ignore it).
     */
    public static String call(Engine engine, String op, String args, long deadline) {
        long[] d = CURRENT.get();
        d[0] = deadline;
        try {
            return engine.call(op, args);
        } finally {
            d[0] = 0;
        }
    }

    /** This thread's deadline for its current call (epoch ms; 0: none). */
    public static long current() {
        return CURRENT.get()[0];
    }
}
