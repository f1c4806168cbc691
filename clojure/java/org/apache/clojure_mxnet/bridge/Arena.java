package org.apache.clojure_mxnet.bridge;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.FloatBuffer;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;

/**
 * The JVM's view of the engine's scratch arena: over Py4J one /dev/shm file
 * that the engine creates and grows, mapped once here with
 * {@link java.nio.channels.FileChannel#map}; over JPype the in-process
 * engine's memory itself, as a direct buffer (see {@link Mapper}). Mapped
 * again only when the engine reports it grew.
 *
 * <p>This is the scratch arena: the engine copies an array into it and the
 * JVM bulk-copies out of it ({@code to-array}, a small {@code ->vec}), or the
 * reverse ({@code array}). Both directions copy; nothing here shares memory
 * with a Clojure value (a large {@code ->vec} result owns a region of the
 * engine's other file instead: see {@link Regions}). Callers hold the arena's
 * monitor ({@code locking}) from the engine call that fills it until they
 * have copied out, so concurrent transfers cannot overwrite each other.
 *
 * <p>Copies above {@link #PARALLEL_BYTES} are split across a few threads:
 * one core alone does not saturate memory bandwidth. A large read can also
 * be <em>followed</em> ({@link #followFloats}): the engine publishes in the
 * arena's header how many bytes it has written so far, and the JVM copies
 * each chunk out while the engine copies the next one in.
 */
public final class Arena {
    /** Copies at least this large are split across threads. */
    public static final long PARALLEL_BYTES = 4L << 20;
    private static final int THREADS = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
    private static final ExecutorService POOL = Executors.newFixedThreadPool(THREADS, r -> {
        Thread t = new Thread(r, "mxkv-arena-copy");
        t.setDaemon(true);
        return t;
    });

    private static final VarHandle LONGS =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    /** Byte offset of the call board in the arena's header (see {@link #started}). */
    public static final int BOARD = 64;
    /** {@link #started}: the call's ticket is on the board. */
    public static final int STARTED = 1;
    /** {@link #started}: the call's slot holds an earlier ticket. */
    public static final int NOT_STARTED = 0;
    /** {@link #started}: a later call has taken the slot, or there is no board. */
    public static final int UNKNOWN = -1;

    private final Mapper mapper;
    private String path;
    private long size;
    private volatile ByteBuffer buf;

    /** The arena of an engine in another process: its /dev/shm file, mapped. */
    public Arena() {
        this(Mapper.FILES);
    }

    /** The arena reached through {@code mapper} (an in-process engine's memory). */
    public Arena(Mapper mapper) {
        this.mapper = mapper;
    }

    /** The arena, at least {@code size} bytes of the memory at {@code path}. */
    public synchronized ByteBuffer buffer(String path, long size) {
        if (buf == null || !path.equals(this.path) || size > this.size) {
            if (size > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("arena of " + size + " bytes exceeds one mapping");
            }
            this.buf = mapper.map(path, size);
            this.path = path;
            this.size = size;
        }
        return buf;
    }

    /**
     * Whether the engine started the call with {@code ticket}: when a call
     * starts, the engine writes its ticket in slot {@code ticket % slots} of
     * the call board (the int64s from byte {@link #BOARD} to {@code header})
     * before it checks the call's deadline. Read after the deadline has
     * passed, {@link #NOT_STARTED} therefore means the call never ran and
     * never will. Not synchronized: a transfer may hold this arena's monitor
     * while its own call waits on the same frozen engine.
     */
    public int started(long ticket, long header) {
        ByteBuffer b = buf;
        long slots = (header - BOARD) / 8;
        if (b == null || slots <= 0 || ticket <= 0) {
            return UNKNOWN;
        }
        long v = (long) LONGS.getVolatile(b, (int) (BOARD + 8 * (ticket % slots)));
        return v == ticket ? STARTED : v < ticket ? NOT_STARTED : UNKNOWN;
    }

    public synchronized long mappedSize() {
        return size;
    }

    public synchronized String path() {
        return path;
    }

    private static ByteBuffer region(ByteBuffer b, long off, long len) {
        return b.slice((int) off, (int) len).order(ByteOrder.nativeOrder());
    }

    private interface Part {
        void copy(int from, int to) throws Exception;
    }

    private static void split(int n, long bytes, Part part) {
        if (bytes < PARALLEL_BYTES || THREADS == 1) {
            try {
                part.copy(0, n);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return;
        }
        int per = (n + THREADS - 1) / THREADS;
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 1; t < THREADS; t++) {
            final int from = Math.min(n, t * per);
            final int to = Math.min(n, from + per);
            fs.add(POOL.submit(() -> {
                part.copy(from, to);
                return null;
            }));
        }
        try {
            part.copy(0, Math.min(n, per));
            for (Future<?> f : fs) {
                f.get();
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Zeroes the progress counter (header bytes 0..7) before a followed read. */
    public static void resetProgress(ByteBuffer b) {
        LONGS.setVolatile(b, 0, 0L);
    }

    /**
     * Copies {@code n} floats from byte offset {@code off} into
     * {@code dst[dstOff..]} while the engine is still writing them: each
     * chunk is copied as soon as the header's progress counter covers it.
     * {@code call} is the engine call doing the writing; its failure is
     * rethrown (as the {@link ExecutionException}'s cause when unchecked).
     */
    public static void followFloats(ByteBuffer b, long off, float[] dst, int dstOff, int n, Future<?> call)
            throws Exception {
        long total = 4L * n;
        if (off + total > b.capacity()) {
            throw new IllegalStateException("arena mapping too small for a followed read");
        }
        FloatBuffer fb = region(b, off, total).asFloatBuffer();
        int copied = 0;
        int idle = 0;
        while (copied < n) {
            long p = (long) LONGS.getAcquire(b, 0);
            int ready = (int) Math.min(n, p / 4);
            if (ready > copied) {
                // A backlog (the engine ran ahead while the JVM allocated)
                // is copied by several threads; single chunks by this one.
                if (4L * (ready - copied) >= PARALLEL_BYTES) {
                    readFloats(b, off + 4L * copied, dst, dstOff + copied, ready - copied);
                } else {
                    fb.get(copied, dst, dstOff + copied, ready - copied);
                }
                copied = ready;
                idle = 0;
            } else if (call.isDone()) {
                finish(call);
                if ((long) LONGS.getAcquire(b, 0) / 4 <= copied) {
                    throw new IllegalStateException("the engine returned before writing all "
                            + n + " elements (" + copied + " arrived)");
                }
            } else if (++idle < 200) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(50_000);
            }
        }
        finish(call);
    }

    private static void finish(Future<?> call) throws Exception {
        try {
            call.get();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof Exception) {
                throw (Exception) c;
            }
            throw e;
        }
    }

    /** Copies {@code n} floats at byte offset {@code off} into a new array. */
    public static float[] readFloats(ByteBuffer b, long off, int n) {
        float[] dst = new float[n];
        readFloats(b, off, dst, 0, n);
        return dst;
    }

    public static void readFloats(ByteBuffer b, long off, float[] dst, int dstOff, int n) {
        split(n, 4L * n, (from, to) ->
                region(b, off + 4L * from, 4L * (to - from)).asFloatBuffer().get(dst, dstOff + from, to - from));
    }

    public static double[] readDoubles(ByteBuffer b, long off, int n) {
        double[] dst = new double[n];
        split(n, 8L * n, (from, to) ->
                region(b, off + 8L * from, 8L * (to - from)).asDoubleBuffer().get(dst, from, to - from));
        return dst;
    }

    public static int[] readInts(ByteBuffer b, long off, int n) {
        int[] dst = new int[n];
        split(n, 4L * n, (from, to) ->
                region(b, off + 4L * from, 4L * (to - from)).asIntBuffer().get(dst, from, to - from));
        return dst;
    }

    public static byte[] readBytes(ByteBuffer b, long off, int n) {
        byte[] dst = new byte[n];
        split(n, n, (from, to) -> region(b, off + from, to - from).get(dst, from, to - from));
        return dst;
    }

    public static void writeFloats(ByteBuffer b, long off, float[] src, int srcOff, int n) {
        split(n, 4L * n, (from, to) ->
                region(b, off + 4L * from, 4L * (to - from)).asFloatBuffer().put(src, srcOff + from, to - from));
    }

    public static void writeDoubles(ByteBuffer b, long off, double[] src) {
        split(src.length, 8L * src.length, (from, to) ->
                region(b, off + 8L * from, 8L * (to - from)).asDoubleBuffer().put(src, from, to - from));
    }

    public static void writeBytes(ByteBuffer b, long off, byte[] src) {
        split(src.length, src.length, (from, to) -> region(b, off + from, to - from).put(src, from, to - from));
    }
}
