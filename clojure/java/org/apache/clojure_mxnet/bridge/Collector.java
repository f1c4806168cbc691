package org.apache.clojure_mxnet.bridge;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Runs a garbage collection and waits for the {@link Handles#CLEANER} to run
 * the actions of what it found: how the bridge bounds memory the JVM does
 * not see (engine arrays held by collectable handles, {@link Handles}; the
 * region space of dropped vectors, {@link Regions}). A Clojure object holding
 * a large engine array is a few dozen bytes of heap, so without this a loop
 * that drops them may never make the JVM collect.
 *
 * <p>A sentinel registered before the GC tells when the Cleaner has reached
 * what the GC found; the Cleaner may run it before the others, so after it
 * the wait goes on until no action has run for a quiet period: {@link
 * #QUIET_MS}, or twice as long as the sentinel took when that was longer (a
 * loaded machine's scheduling gaps grow with its load; the Cleaner thread
 * waiting that long for a core would otherwise pass for a Cleaner with
 * nothing left to do), at most {@link #MAX_QUIET_MS}. The sentinel is waited
 * for up to {@link #SENTINEL_MS} (a loaded machine runs the Cleaner late), or
 * 50 ms where explicit GCs are disabled and it never comes.
 */
final class Collector {
    private Collector() {
    }

    /** The longest wait for the Cleaner after a GC, in milliseconds. */
    static final long SENTINEL_MS = 2000;

    /** How long no Cleaner action may run before the wait ends, at least, in milliseconds. */
    static final long QUIET_MS = 20;

    /** The longest quiet period, in milliseconds. */
    static final long MAX_QUIET_MS = 500;

    /** Whether System.gc() runs a collection (not -XX:+DisableExplicitGC). */
    static final boolean EXPLICIT_GC = java.lang.management.ManagementFactory.getRuntimeMXBean()
            .getInputArguments().stream().noneMatch(a -> a.equals("-XX:+DisableExplicitGC"));

    /**
     * Runs a GC and waits until {@code enough} holds, or the Cleaner has run
     * what the GC found: the sentinel ran and {@code actions} (a count of the
     * Cleaner actions run so far) stopped changing. The caller holds
     * {@code monitor}, which is released while waiting (so that the Cleaner's
     * actions can take it), or passes null to sleep instead.
     */
    static void collect(Object monitor, LongSupplier actions, BooleanSupplier enough) {
        CountDownLatch sentinel = new CountDownLatch(1);
        Handles.CLEANER.register(new Object(), sentinel::countDown);
        System.gc();
        long gcDone = System.nanoTime();
        long deadline = gcDone + TimeUnit.MILLISECONDS.toNanos(EXPLICIT_GC ? SENTINEL_MS : 50);
        long quietNs = TimeUnit.MILLISECONDS.toNanos(QUIET_MS);
        long seen = actions.getAsLong();
        long quietUntil = Long.MAX_VALUE;
        try {
            while (System.nanoTime() < deadline && !enough.getAsBoolean()) {
                if (sentinel.getCount() == 0) {
                    long now = actions.getAsLong();
                    if (quietUntil == Long.MAX_VALUE) {
                        // the sentinel just ran: scale the quiet period to its delay
                        quietNs = Math.min(TimeUnit.MILLISECONDS.toNanos(MAX_QUIET_MS),
                                Math.max(quietNs, 2 * (System.nanoTime() - gcDone)));
                        deadline = Math.max(deadline, System.nanoTime() + quietNs);
                    }
                    if (now != seen || quietUntil == Long.MAX_VALUE) {
                        seen = now;
                        quietUntil = System.nanoTime() + quietNs;
                    } else if (System.nanoTime() > quietUntil) {
                        return;
                    }
                }
                if (monitor != null) {
                    monitor.wait(1);
                } else {
                    Thread.sleep(1);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
