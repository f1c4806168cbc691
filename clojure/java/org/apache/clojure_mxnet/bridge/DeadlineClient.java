package org.apache.clojure_mxnet.bridge;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import javax.net.SocketFactory;

import py4j.CallbackClient;
import py4j.CallbackConnection;
import py4j.Py4JClientConnection;
import py4j.Py4JException;
import py4j.Py4JPythonClient;

/**
 * Py4J's callback client with deadlines that hold for every thread.
 *
 * <p>Py4J's own client opens a new connection while it holds the lock that
 * every calling thread takes, and connects without a timeout: with the
 * engine frozen, threads that need a connection time out one after another
 * (a read timeout each), and one that finds the engine's listen queue full
 * waits until the engine resumes. Here each call runs under its thread's
 * deadline ({@link #call}): the lock is held only to take an idle
 * connection from the pool; a new connection is opened outside it, its
 * connect and authentication bounded by the time left; and each call's read
 * timeout is the time left, so every pending call on every thread fails by
 * its deadline. At most {@link #OPENING} connections are opened at once (a
 * thread waits its turn within its deadline): the engine's listen queue
 * holds five, and a connection refused by a full queue is retried by TCP
 * only a second later. A connection whose call failed is closed, never reused, so
 * no later call reads an answer meant for an earlier one.
 */
public final class DeadlineClient extends CallbackClient {
    /** How many connections may be being opened at once. */
    static final int OPENING = 4;

    private final Semaphore opening = new Semaphore(OPENING, true);
    private volatile boolean closed;

    /**
     * @param readTimeoutMs the read timeout of calls made without a deadline
     *                      (0: none), as Py4J's own
     */
    public DeadlineClient(int port, InetAddress address, String authToken, int readTimeoutMs) {
        // A min connection time of 0 means no idle-connection reaper thread:
        // Py4J would make it a non-daemon thread, keeping the JVM alive.
        super(port, address, authToken, 0, TimeUnit.SECONDS, SocketFactory.getDefault(), false,
              readTimeoutMs);
    }

    /** Milliseconds left before this thread's deadline (at least 1), or the read timeout when it has none. */
    private int timeLeft() throws SocketTimeoutException {
        long deadline = Deadline.current();
        if (deadline <= 0) {
            return readTimeout;
        }
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) {
            throw new SocketTimeoutException("the call's deadline passed before it could be sent");
        }
        return (int) Math.min(Integer.MAX_VALUE, left);
    }

    @Override
    protected Py4JClientConnection getConnectionLock() {
        if (closed) {
            return null;
        }
        Py4JClientConnection cc;
        lock.lock();
        try {
            cc = connections.pollLast();
        } finally {
            lock.unlock();
        }
        try {
            int left = timeLeft();
            if (cc == null) {
                return open(left);
            }
            if (cc instanceof TimedConnection) {
                ((TimedConnection) cc).timeout(left);
            }
            return cc;
        } catch (IOException e) {
            if (cc != null) {
                giveBackConnection(cc);
            }
            throw new Py4JException("cannot reach the engine: " + e.getMessage(), e);
        }
    }

    /** A new connection, opened (connected, authenticated) within {@code timeoutMs} (0: no limit). */
    private Py4JClientConnection open(int timeoutMs) throws IOException {
        long t0 = System.nanoTime();
        try {
            if (timeoutMs > 0) {
                if (!opening.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)) {
                    throw new SocketTimeoutException("no connection to the engine could be opened "
                            + "before the call's deadline");
                }
            } else {
                opening.acquire();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while opening a connection to the engine", e);
        }
        try {
            int left = timeoutMs;
            if (timeoutMs > 0) {
                left = timeoutMs - (int) TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                if (left <= 0) {
                    throw new SocketTimeoutException("the call's deadline passed while it waited "
                            + "to open a connection to the engine");
                }
            }
            TimedConnection t = new TimedConnection(port, address, authToken, left);
            t.start();
            return t;
        } finally {
            opening.release();
        }
    }

    @Override
    protected Py4JClientConnection getConnection() throws IOException {
        return new TimedConnection(port, address, authToken, readTimeout);
    }

    @Override
    public Py4JPythonClient copyWith(InetAddress pythonAddress, int pythonPort) {
        return new DeadlineClient(pythonPort, pythonAddress, authToken, readTimeout);
    }

    @Override
    public void shutdown() {
        closed = true;
        super.shutdown();
    }

    /** A connection whose read timeout can change from call to call. */
    private static final class TimedConnection extends CallbackConnection {
        private final Connector connector;

        TimedConnection(int port, InetAddress address, String authToken, int timeoutMs) {
            this(port, address, authToken, timeoutMs, new Connector(timeoutMs));
        }

        private TimedConnection(int port, InetAddress address, String authToken, int timeoutMs,
                                Connector connector) {
            super(port, address, connector, timeoutMs, authToken);
            this.connector = connector;
        }

        void timeout(int ms) throws IOException {
            Socket s = connector.socket;
            if (s != null) {
                s.setSoTimeout(ms);
            }
        }
    }

    /** Makes one connection's socket, connecting within a timeout, and keeps it. */
    private static final class Connector extends SocketFactory {
        private final int connectTimeoutMs;
        volatile Socket socket;

        Connector(int connectTimeoutMs) {
            this.connectTimeoutMs = connectTimeoutMs;
        }

        @Override
        public Socket createSocket(InetAddress host, int port) throws IOException {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), connectTimeoutMs);
            } catch (IOException e) {
                s.close();
                throw e;
            }
            socket = s;
            return s;
        }

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return createSocket(InetAddress.getByName(host), port);
        }

        @Override
        public Socket createSocket(String host, int port, InetAddress localHost, int localPort)
                throws IOException {
            return createSocket(InetAddress.getByName(host), port);
        }

        @Override
        public Socket createSocket(InetAddress address, int port, InetAddress localAddress,
                                   int localPort) throws IOException {
            return createSocket(address, port);
        }
    }
}
