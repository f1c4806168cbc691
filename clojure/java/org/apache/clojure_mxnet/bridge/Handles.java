package org.apache.clojure_mxnet.bridge;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Frees engine objects when the JVM no longer needs them.
 *
 * <p>Each Clojure NDArray or KVStore holds a {@link Handle}. When the Clojure
 * object becomes unreachable, {@link Cleaner} queues its id; a daemon thread
 * sends the queued ids to the engine in one {@code release} call. Explicit
 * {@code dispose} goes through the same path, so an id is released exactly
 * once whichever comes first.
 *
 * <p>Engine memory is bounded: each handle carries the bytes of the engine
 * object it holds (an array's size), and this side keeps the sum over the
 * handles not yet released. A Clojure NDArray is a few dozen bytes of heap
 * however large its engine array, so a loop that drops large arrays may
 * never make the JVM collect by itself; when the sum passes {@code gcAt} the
 * creating thread runs a GC, waits for the Cleaner (see {@link Collector}),
 * and sends the releases before it goes on. Then {@code gcAt} becomes twice
 * what is still held, and never less than the budget: held arrays cost a
 * logarithmic number of collections.
 */
public final class Handles {
    /** The bridge's one Cleaner thread: engine handles here, arena regions in {@link Regions}. */
    static final Cleaner CLEANER = Cleaner.create();

    /**
     * Set once the JVM starts to exit: releases are no longer sent, and the
     * exit waits (up to a second) for those being sent. In a JVM that Python
     * hosts (JPype), a thread still inside Python when the process exits
     * crashes it; and every engine goes with the JVM anyway.
     */
    private static volatile boolean exiting;
    private static final AtomicInteger SENDING = new AtomicInteger();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            exiting = true;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (SENDING.get() > 0 && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "mxkv-exiting"));
    }

    private final Engine engine;
    private final LinkedBlockingQueue<Long> pending = new LinkedBlockingQueue<>();
    private final AtomicLong released = new AtomicLong();
    /** Engine bytes held by handles not yet released (queued ones excluded). */
    private final AtomicLong liveBytes = new AtomicLong();
    /** Handles the Cleaner has queued so far (what {@link Collector} watches). */
    private final AtomicLong cleaned = new AtomicLong();
    private final Object collecting = new Object();
    private final long budget;
    private volatile long gcAt;
    private volatile long collections;
    private final Thread flusher;
    private volatile boolean closed;

    /** Handles without a memory budget (the GC alone frees engine objects). */
    public Handles(Engine engine) {
        this(engine, Long.MAX_VALUE);
    }

    /**
     * @param budget engine bytes held by collectable handles before a GC is
     *               run to free those that are garbage (Long.MAX_VALUE: never)
     */
    public Handles(Engine engine, long budget) {
        this.engine = engine;
        this.budget = Math.max(1, budget);
        this.gcAt = this.budget;
        this.flusher = new Thread(this::flushLoop, "mxkv-handle-release");
        this.flusher.setDaemon(true);
        this.flusher.start();
    }

    /** One engine object's id, released once: by dispose or by the GC. */
    public static final class Handle implements Runnable {
        private final long id;
        private final long nbytes;
        private final Handles owner;
        private final AtomicBoolean done = new AtomicBoolean();
        private volatile Cleaner.Cleanable cleanable;

        private Handle(long id, long nbytes, Handles owner) {
            this.id = id;
            this.nbytes = nbytes;
            this.owner = owner;
        }

        /** The engine bytes this handle holds (an array's size; 0 when unknown). */
        public long nbytes() {
            return nbytes;
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
                owner.liveBytes.addAndGet(-nbytes);
                owner.pending.offer(id);
                owner.cleaned.incrementAndGet();
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
                owner.liveBytes.addAndGet(-nbytes);
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
        return handle(id, 0);
    }

    /**
     * A handle for engine object {@code id} holding {@code nbytes} of engine
     * memory. When the bytes held pass the budget, first collects the
     * handles that are garbage (see the class comment).
     */
    public Handle handle(long id, long nbytes) {
        long nb = Math.max(0, nbytes);
        if (nb > 0 && liveBytes.addAndGet(nb) > gcAt) {
            collect();
        }
        return new Handle(id, nb, this);
    }

    /** {@link #handle} and {@link Handle#attach} in one step. */
    public Handle track(Object owner, long id) {
        return handle(id).attach(owner);
    }

    /**
     * Runs a GC, waits for the Cleaner and sends the releases it queued, so
     * that the engine has dropped every garbage object when this returns;
     * one thread at a time (the others wait for its result).
     */
    private void collect() {
        synchronized (collecting) {
            if (liveBytes.get() <= gcAt || closed) {
                return; // another thread collected meanwhile
            }
            collections++;
            Collector.collect(null, cleaned::get, () -> false);
            flush();
            long held = liveBytes.get();
            gcAt = Math.max(budget, held > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : 2 * held);
        }
    }

    /** Engine bytes held by handles not yet released. */
    public long liveBytes() {
        return liveBytes.get();
    }

    /** The bytes held past which the next handle first runs a GC. */
    public long gcAt() {
        return gcAt;
    }

    /** GCs run because the bytes held passed {@link #gcAt}. */
    public long collections() {
        return collections;
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
                h.owner.liveBytes.addAndGet(-h.nbytes);
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
        SENDING.incrementAndGet();
        try {
            if (!exiting) {
                sendRelease(ids);
            }
        } finally {
            SENDING.decrementAndGet();
        }
    }

    private void sendRelease(List<Long> ids) {
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

    /**
     * Stops the release thread and waits (up to a second) until it has left
     * any call it was in; queued ids are dropped with the engine.
     */
    public void close() {
        closed = true;
        flusher.interrupt();
        if (Thread.currentThread() != flusher) {
            try {
                flusher.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
