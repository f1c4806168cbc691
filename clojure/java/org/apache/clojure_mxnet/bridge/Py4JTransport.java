package org.apache.clojure_mxnet.bridge;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import java.util.function.Supplier;

import py4j.CallbackClient;
import py4j.Gateway;
import py4j.GatewayServer;

/**
 * The Py4J transport, JVM first: this side starts a {@link GatewayServer} on
 * loopback with an ephemeral port and a random secret, spawns
 * {@code python -m mxkv.bridge} with port and secret in its environment (never
 * on its command line), and waits for the engine to connect back and register
 * an object implementing {@link Engine}.
 *
 * <p>The engine reads its stdin until EOF, so it exits when this JVM goes
 * away, however it goes. Calls into the engine go through a
 * {@link DeadlineClient}: each fails by its own deadline when the engine is
 * frozen, on every thread, connection setup included; one to an engine that
 * died fails at once.
 *
 * <p>The other way round, Python first ({@link #attach}): a running Python
 * program serves engines ({@code mxkv.bridge.serve()}) on a loopback
 * callback server guarded by a secret, and this JVM attaches to it.
 */
public final class Py4JTransport implements AutoCloseable {

    /** The gateway's entry point: what the Python side calls to hand over its engine. */
    public static final class Rendezvous {
        private final CompletableFuture<Engine> engine = new CompletableFuture<>();
        private volatile GatewayServer server;

        /**
         * Called by the engine once its callback server listens on
         * {@code callbackPort}: points the callback client there and hands
         * the engine to the waiting JVM thread.
         */
        public void register(Engine e, int callbackPort) {
            server.resetCallbackClient(server.getCallbackClient().getAddress(), callbackPort);
            engine.complete(e);
        }

        /** Called by the engine when it cannot start, with the reason. */
        public void fail(String message) {
            engine.completeExceptionally(new IllegalStateException(message));
        }
    }

    private final GatewayServer server;
    private final Process process;
    private final Engine engine;
    private final int callTimeoutMs;
    private final Thread hook;
    private volatile boolean closed;
    private final List<Path> owned = new ArrayList<>();

    private Py4JTransport(GatewayServer server, Process process, Engine engine, int callTimeoutMs) {
        this.server = server;
        this.process = process;
        this.engine = engine;
        this.callTimeoutMs = callTimeoutMs;
        this.hook = new Thread(this::closeQuietly, "mxkv-engine-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    private static String secret() {
        byte[] b = new byte[32]; // 256 bits
        new SecureRandom().nextBytes(b);
        StringBuilder s = new StringBuilder(64);
        for (byte x : b) {
            s.append(String.format("%02x", x));
        }
        return s.toString();
    }

    /**
     * Starts an engine.
     *
     * @param command        the engine's command line, e.g. {@code [python, -m, mxkv.bridge]}
     * @param env            extra environment for the engine (may be empty)
     * @param startTimeoutMs how long to wait for the engine to register
     * @param callTimeoutMs  the longest a call may wait for the engine's answer (0: forever)
     */
    public static Py4JTransport start(List<String> command, Map<String, String> env,
                                      long startTimeoutMs, int callTimeoutMs) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        String token = secret();
        Rendezvous rendezvous = new Rendezvous();
        // The callback port is a placeholder until the engine reports its own
        // (the gateway then makes a client for it with DeadlineClient.copyWith).
        CallbackClient cb = new DeadlineClient(GatewayServer.DEFAULT_PYTHON_PORT, loopback, token,
                callTimeoutMs);
        GatewayServer server = new GatewayServer.GatewayServerBuilder(rendezvous)
                .javaPort(0)
                .javaAddress(loopback)
                .authToken(token)
                .callbackClient(cb)
                .build();
        rendezvous.server = server;
        startAsDaemon(server);
        Process p;
        try {
            ProcessBuilder pb = new ProcessBuilder(command);
            pb.environment().putAll(env);
            pb.environment().put("MXKV_BRIDGE_PORT", Integer.toString(server.getListeningPort()));
            pb.environment().put("MXKV_BRIDGE_SECRET", token);
            pb.redirectInput(ProcessBuilder.Redirect.PIPE);
            pb.redirectOutput(ProcessBuilder.Redirect.INHERIT);
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            p = pb.start();
        } catch (IOException e) {
            server.shutdown();
            throw new IllegalStateException("cannot start the mxkv engine (" + String.join(" ", command)
                    + "): " + e.getMessage() + "; set MXKV_PYTHON to a Python with mxkv installed", e);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(startTimeoutMs);
        try {
            while (true) {
                try {
                    Engine e = rendezvous.engine.get(50, TimeUnit.MILLISECONDS);
                    return new Py4JTransport(server, p, e, callTimeoutMs);
                } catch (TimeoutException te) {
                    if (!p.isAlive()) {
                        throw new IllegalStateException("the mxkv engine exited with code " + p.exitValue()
                                + " before connecting (" + String.join(" ", command)
                                + "); its error output is above");
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the mxkv engine did not connect within "
                                + startTimeoutMs + " ms (" + String.join(" ", command) + ")");
                    }
                }
            }
        } catch (ExecutionException e) {
            kill(p, server);
            throw new IllegalStateException("the mxkv engine failed to start: " + e.getCause().getMessage(), e);
        } catch (InterruptedException e) {
            kill(p, server);
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the mxkv engine", e);
        } catch (RuntimeException e) {
            kill(p, server);
            throw e;
        }
    }

    /**
     * Starts the gateway from a daemon thread: Py4J's server and connection
     * threads inherit that, so they never keep the JVM from exiting.
     */
    private static void startAsDaemon(GatewayServer server) {
        RuntimeException[] failure = new RuntimeException[1];
        Thread starter = new Thread(() -> {
            try {
                server.start(true);
            } catch (RuntimeException e) {
                failure[0] = e;
            }
        }, "mxkv-gateway-start");
        starter.setDaemon(true);
        starter.start();
        try {
            starter.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the Py4J gateway", e);
        }
        if (failure[0] != null) {
            throw new IllegalStateException("cannot start the Py4J gateway: " + failure[0].getMessage(), failure[0]);
        }
    }

    private static void kill(Process p, GatewayServer server) {
        p.destroyForcibly();
        server.shutdown();
    }

    public Engine engine() {
        return engine;
    }

    public Process process() {
        return process;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return !closed && process.isAlive();
    }

    public boolean isClosed() {
        return closed;
    }

    public int callTimeoutMs() {
        return callTimeoutMs;
    }

    /**
     * Removes the engine's shared-memory files {@code paths} (its arena and
     * region space) as soon as its process is gone, however it went: an
     * engine killed by SIGKILL cannot remove them itself. Only files named
     * {@code mxkv-<engine pid>-...} are touched. Also done by {@link #close}.
     */
    public void removeWhenGone(List<String> paths) {
        String prefix = "mxkv-" + process.pid() + "-";
        synchronized (owned) {
            for (String s : paths) {
                Path f = Paths.get(s);
                if (f.getFileName() != null && f.getFileName().toString().startsWith(prefix)) {
                    owned.add(f);
                }
            }
        }
        process.onExit().thenRun(this::removeOwned);
    }

    private void removeOwned() {
        synchronized (owned) {
            for (Path f : owned) {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException e) {
                    // not ours to report: the engine's own clean-up may race with this
                }
            }
            owned.clear();
        }
    }

    /** The engine's exit code, or null while it runs. */
    public Integer exitCode() {
        return process.isAlive() ? null : process.exitValue();
    }

    /**
     * Stops the engine: closes its stdin (it cleans up and exits), waits up
     * to two seconds, then kills it; shuts the gateway down.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            OutputStream in = process.getOutputStream();
            in.close();
        } catch (IOException e) {
            // already gone
        }
        try {
            if (!process.waitFor(2, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(1, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        server.shutdown();
        if (!process.isAlive()) {
            removeOwned(); // at once: at JVM exit the onExit action may not get to run
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is already shutting down
        }
    }

    /**
     * Attaches to a Python program serving engines over Py4J: its callback
     * server listens at {@code address:port} and expects {@code secret}. Its
     * entry point is a factory of engines (a {@link Supplier}); each attach
     * gets an engine of its own (its own handles and shared memory), over
     * which the program's published objects are reachable.
     */
    @SuppressWarnings("unchecked")
    public static Attached attach(String address, int port, String secret, int callTimeoutMs)
            throws IOException {
        GatewayServer.turnLoggingOff(); // as a gateway would: Py4J logs at INFO otherwise
        InetAddress addr = InetAddress.getByName(address);
        CallbackClient cb = new DeadlineClient(port, addr, secret, callTimeoutMs);
        Gateway gateway = new Gateway(null, cb);
        try {
            Supplier<Engine> factory = (Supplier<Engine>) cb.getPythonServerEntryPoint(
                    gateway, new Class[] {Supplier.class});
            Engine engine = factory.get();
            if (engine == null) {
                throw new IllegalStateException("the serving program gave no engine");
            }
            return new Attached(cb, engine);
        } catch (RuntimeException e) {
            cb.shutdown();
            throw e;
        }
    }

    /** An engine of a Python program this JVM attached to; closing leaves the program running. */
    public static final class Attached implements AutoCloseable {
        private final CallbackClient client;
        private final Engine engine;
        private volatile boolean closed;

        Attached(CallbackClient client, Engine engine) {
            this.client = client;
            this.engine = engine;
        }

        public Engine engine() {
            return engine;
        }

        public boolean isClosed() {
            return closed;
        }

        /** Ends this JVM's connections to the program (its engine objects go with the GC there). */
        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                try {
                    engine.call("close", "");
                } catch (RuntimeException e) {
                    // the program is gone
                }
                client.shutdown();
            }
        }
    }

    private void closeQuietly() {
        try {
            close();
        } catch (RuntimeException e) {
            // best effort at JVM exit
        }
    }
}
