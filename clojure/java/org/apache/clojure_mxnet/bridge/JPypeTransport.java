package org.apache.clojure_mxnet.bridge;

import java.util.function.Supplier;

/**
 * The JPype transport, Python first: the JVM runs inside a Python process
 * ({@code mxkv.jvm.start()}, {@code mxkv clj --transport jpype}), and engines
 * are Python objects in that process implementing {@link DirectEngine}
 * through JPype proxies.
 *
 * <p>The Python side {@link #install installs} a factory here when it starts
 * the JVM; the Clojure side asks it for engines ({@link #start}). Nothing
 * crosses a socket or a file: a call is a JNI call into Python, and array
 * memory is reached through direct buffers.
 */
public final class JPypeTransport {
    private static volatile Supplier<DirectEngine> factory;

    private JPypeTransport() {
    }

    /** Called by the hosting Python process (mxkv.jvm) once the JVM is up. */
    public static void install(Supplier<DirectEngine> engines) {
        factory = engines;
    }

    /** True when a Python process hosts this JVM and serves engines. */
    public static boolean isHosted() {
        return factory != null;
    }

    /** A new engine of the hosting Python process. */
    public static DirectEngine start() {
        Supplier<DirectEngine> f = factory;
        if (f == null) {
            throw new IllegalStateException("the JPype transport needs the JVM to be started from Python "
                    + "(mxkv.jvm.start(), or mxkv clj|repl|test|tutorial --transport jpype); "
                    + "this JVM was started otherwise: use the py4j transport");
        }
        DirectEngine e = f.get();
        if (e == null) {
            throw new IllegalStateException("the hosting Python process gave no engine");
        }
        return e;
    }
}
