package org.apache.clojure_mxnet.bridge;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Frees engine objects when the JVM no longer needs them.
 *
 * <p>Each Clojure NDArray or KVStore holds a {@link Handle}. When the Clojure
 * object becomes unreachable, {@link Cleaner} queues its id; a daemon thread
 * sends the queued ids to the engine in one {@code release} call. Explicit
 * {@code dispose} goes through the same path, so an id is released exactly
 * once whichever comes first.
 */
public final class Handles {
    /** The bridge's one Cleaner thread: engine handles here, arena regions in {@link Regions}. */
    static final Cleaner CLEANER = Cleaner.create();

    private final Engine engine;
    private final LinkedBlockingQueue<Long> pending = new LinkedBlockingQueue<>();
    private final AtomicLong released = new AtomicLong();
    private final Thread flusher;
    private volatile boolean closed;

    public Handles(Engine engine) {
        this.engine = engine;
        this.flusher = new Thread(this::flushLoop, "mxkv-handle-release");
        this.flusher.setDaemon(true);
        this.flusher.start();
    }

    /** One engine object's id, released once: by dispose or by the GC. */
    public static final class Handle implements Runnable {
        private final long id;
        private final Handles owner;
        private final AtomicBoolean done = new AtomicBoolean();
        private volatile Cleaner.Cleanable cleanable;

        private Handle(long id, Handles owner) {
            this.id = id;
            this.owner = owner;
        }

        public long id() {
            return id;
        }

        public boolean isReleased() {
            return done.get();
        }

        /** Cleaner action; must not (and does not) reach the tracked object. */
        @Override
        public void run() {
            if (done.compareAndSet(false, true)) {
                owner.pending.offer(id);
            }
        }

        /** Frees the engine object when {@code owner} becomes unreachable; returns this. */
        public Handle attach(Object owner) {
            if (cleanable != null) {
                throw new IllegalStateException("handle " + id + " is already attached");
            }
            cleanable = CLEANER.register(owner, this);
            return this;
        }

        /** Releases now: the engine has dropped the object when this returns. */
        public void dispose() {
            if (done.compareAndSet(false, true)) {
                owner.sendNow(id);
            }
            Cleaner.Cleanable c = cleanable;
            if (c != null) {
                c.clean(); // unregisters; run() does nothing now
            }
        }
    }

    /**
     * A handle for engine object {@code id}; call {@link Handle#attach} with
     * the Clojure object that holds it, so that the GC can free it.
     */
    public Handle handle(long id) {
        return new Handle(id, this);
    }

    /** {@link #handle} and {@link Handle#attach} in one step. */
    public Handle track(Object owner, long id) {
        return handle(id).attach(owner);
    }

    /**
     * Releases many handles now, with one engine call per engine (a resource
     * scope closing): as {@link Handle#dispose} on each, but batched. The
     * engines have dropped the objects when this returns.
     */
    public static void disposeAll(Iterable<Handle> handles) {
        Map<Handles, List<Long>> byOwner = new IdentityHashMap<>();
        for (Handle h : handles) {
            if (h.done.compareAndSet(false, true)) {
                byOwner.computeIfAbsent(h.owner, o -> new ArrayList<>()).add(h.id);
            }
            Cleaner.Cleanable c = h.cleanable;
            if (c != null) {
                c.clean();
            }
        }
        for (Map.Entry<Handles, List<Long>> e : byOwner.entrySet()) {
            synchronized (e.getKey()) {
                e.getKey().send(e.getValue());
            }
        }
    }

    /** Ids released so far (sent to the engine). */
    public long releasedCount() {
        return released.get();
    }

    /** Ids waiting to be sent. */
    public int pendingCount() {
        return pending.size();
    }

    /** Sends every queued id now, on the calling thread. */
    public synchronized void flush() {
        List<Long> ids = new ArrayList<>();
        pending.drainTo(ids);
        send(ids);
    }

    private synchronized void sendNow(long id) {
        List<Long> ids = new ArrayList<>(1);
        ids.add(id);
        send(ids);
    }

    private void send(List<Long> ids) {
        if (ids.isEmpty() || closed) {
            return;
        }
        StringBuilder b = new StringBuilder(ids.size() * 8 + 2).append('[');
        for (int i = 0; i < ids.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(ids.get(i).longValue());
        }
        b.append(']');
        try {
            engine.call("release", b.toString());
            released.addAndGet(ids.size());
        } catch (RuntimeException e) {
            // The engine is gone: its objects went with it.
        }
    }

    private void flushLoop() {
        while (!closed) {
            try {
                Long first = pending.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                // Let a burst of collections gather into one call.
                Thread.sleep(20);
                List<Long> ids = new ArrayList<>();
                ids.add(first);
                pending.drainTo(ids);
                synchronized (this) {
                    send(ids);
                }
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Stops the release thread; queued ids are dropped with the engine. */
    public void close() {
        closed = true;
        flusher.interrupt();
    }
}
