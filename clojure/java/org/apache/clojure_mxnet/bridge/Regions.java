package org.apache.clojure_mxnet.bridge;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The engine's region file as seen from the JVM: an allocator of page-aligned
 * regions, and the file's mapping.
 *
 * <p>A large {@code ->vec} result owns a region instead of a heap copy: this
 * side {@link #allocate allocates} a region, the engine copies the array into
 * it ({@code nd.read_region}, growing the file when the region ends past
 * it), and {@link #vector} wraps the region as a read-only {@link FloatVector}
 * whose {@link java.lang.ref.Cleaner} action (the Cleaner of {@link Handles})
 * {@link #free frees} the region once the vector is unreachable. Freeing is a
 * local call: no engine round trip, and nothing to do when the engine is gone.
 * The engine never chooses where to write, so a region is written exactly
 * once between its allocation and the collection of its vector: a
 * region-backed vector is a value.
 *
 * <p>Growth is bounded: a vector holds a few dozen bytes of Java heap, so a
 * loop that drops large vectors may never trigger a collection by itself.
 * Before the region space grows past {@code gcAt}, {@link #allocate} runs
 * {@link System#gc()} and waits for the Cleaner to free what it found. When
 * that frees too little (the vectors are still in use), {@code gcAt} doubles,
 * so holding many vectors costs a logarithmic number of collections. Past
 * {@code cap} (at most one 2 GiB mapping), {@link #allocate} answers -1 and
 * the caller copies into a {@code float[]} as before (a full region space is
 * collected again at most once a second).
 *
 * <p>The engine sizes the file to {@link #capacity} at the first region
 * (a sparse file: memory is used only where regions were written, up to the
 * highest region so far, {@code extent}), so that each side maps it once and
 * the page tables of reused regions stay warm. Should the file grow anyway,
 * this side maps it anew; a mapping already handed out stays valid (a vector
 * keeps its own mapping alive), also after the engine exited and removed the
 * file.
 */
public final class Regions {
    /** Region alignment. */
    public static final long PAGE = 4096;
    /** The largest region space one Java mapping can hold. */
    public static final long MAX_CAP = Integer.MAX_VALUE & ~(PAGE - 1);
    /** A full region space collects again only this long after a futile try. */
    private static final long FUTILE_NS = TimeUnit.SECONDS.toNanos(1);

    /** Free blocks below {@code top}, offset to length, coalesced. */
    private final TreeMap<Long, Long> free = new TreeMap<>();
    /** End of the highest live region. */
    private long top;
    /** Highest {@code top} so far: the part of the file already written. */
    private long extent;
    /** Bytes in live regions. */
    private long live;
    /** Growing {@code top} past this first collects dropped vectors. */
    private long gcAt;
    private final long cap;
    private long allocations;
    private long reused;
    private long frees;
    private long collections;

    /** When a collection last failed to make room below the cap. */
    private long futileAt = System.nanoTime() - 2 * FUTILE_NS;

    private String path;
    private long mapped;
    private ByteBuffer map;

    /**
     * @param gcAt bytes of region space used before a growth first runs a GC
     * @param cap  most bytes of region space; at most {@link #MAX_CAP}
     */
    public Regions(long gcAt, long cap) {
        this.cap = Math.max(0, Math.min(MAX_CAP, cap)) & ~(PAGE - 1);
        this.gcAt = Math.max(PAGE, Math.min(this.cap, gcAt));
    }

    private static long align(long n) {
        return (n + PAGE - 1) & ~(PAGE - 1);
    }

    /**
     * The region space's size: the engine sizes the (sparse) file to this on
     * the first region, so that neither side ever maps it again.
     */
    public long capacity() {
        return cap;
    }

    /**
     * A region of at least {@code nbytes}: its byte offset in the file, or -1
     * when the region space cannot hold it (the caller copies instead). May
     * collect garbage first (see the class comment).
     */
    public synchronized long allocate(long nbytes) {
        if (nbytes <= 0) {
            throw new IllegalArgumentException("a region needs a positive size, not " + nbytes);
        }
        long len = align(nbytes);
        if (len > cap) {
            return -1;
        }
        allocations++;
        long off = takeFree(len);
        if (off >= 0) {
            return off;
        }
        // gcAt and extent never exceed cap: growing past cap also grows past them.
        boolean full = top + len > cap;
        boolean grows = top + len > Math.max(extent, gcAt);
        if (grows && (!full || System.nanoTime() - futileAt > FUTILE_NS)) {
            collect(len);
            off = takeFree(len);
            if (off >= 0) {
                return off;
            }
            full = top + len > cap;
            if (full) {
                futileAt = System.nanoTime();
            } else if (top + len > gcAt) {
                // What is there is in use: let it grow before the next try.
                gcAt = Math.min(cap, Math.max(2 * gcAt, top + len));
            }
        }
        if (full) {
            allocations--;
            return -1;
        }
        off = top;
        top += len;
        if (top <= extent) {
            reused++;
        }
        extent = Math.max(extent, top);
        live += len;
        return off;
    }

    /** First fit among the free blocks, or -1. */
    private long takeFree(long len) {
        for (Iterator<Map.Entry<Long, Long>> it = free.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Long, Long> e = it.next();
            long off = e.getKey();
            long have = e.getValue();
            if (have >= len) {
                it.remove();
                if (have > len) {
                    free.put(off + len, have - len);
                }
                live += len;
                reused++;
                return off;
            }
        }
        return -1;
    }

    /** Returns region {@code [off, off + nbytes)}; called by the Cleaner, or on a failed read. */
    public synchronized void free(long off, long nbytes) {
        long len = align(nbytes);
        if (off < 0 || off + len > top || (off & (PAGE - 1)) != 0) {
            throw new IllegalArgumentException("no region at " + off + " of " + nbytes + " bytes");
        }
        Map.Entry<Long, Long> below = free.floorEntry(off);
        Map.Entry<Long, Long> above = free.ceilingEntry(off);
        if ((below != null && below.getKey() + below.getValue() > off)
                || (above != null && above.getKey() < off + len)) {
            throw new IllegalStateException("region at " + off + " of " + nbytes + " bytes freed twice");
        }
        live -= len;
        frees++;
        long start = off;
        long end = off + len;
        if (below != null && below.getKey() + below.getValue() == start) {
            start = below.getKey();
            free.remove(start);
        }
        if (above != null && above.getKey() == end) {
            end += above.getValue();
            free.remove(above.getKey());
        }
        if (end == top) {
            top = start;
        } else {
            free.put(start, end - start);
        }
        notifyAll();
    }

    /**
     * Runs a GC and waits (releasing this monitor, so that the Cleaner can
     * free) until the Cleaner has run what it found or a block of {@code len}
     * bytes is free (see {@link Collector}): deciding too early would grow the
     * space for regions that are about to be freed.
     */
    private void collect(long len) {
        collections++;
        Collector.collect(this, () -> frees, () -> fits(len));
    }

    private boolean fits(long len) {
        if (top + len <= Math.min(cap, Math.max(extent, gcAt))) {
            return true;
        }
        for (long have : free.values()) {
            if (have >= len) {
                return true;
            }
        }
        return false;
    }

    /** The file mapped, at least {@code size} bytes of it (at most the cap). */
    public ByteBuffer buffer(String path, long size) {
        return buffer(Mapper.FILES, path, size);
    }

    /**
     * The region space reached through {@code mapper} (a file over Py4J, the
     * in-process engine's memory over JPype), at least {@code size} bytes of
     * it (at most the cap).
     */
    public synchronized ByteBuffer buffer(Mapper mapper, String path, long size) {
        long want = Math.min(size, MAX_CAP);
        if (map == null || !path.equals(this.path) || want > mapped) {
            this.map = mapper.map(path, want);
            this.path = path;
            this.mapped = want;
        }
        return map;
    }

    /** The Cleaner action of a region: must not (and does not) reach the vector. */
    private static final class Release implements Runnable {
        private final Regions owner;
        private final long off;
        private final long nbytes;

        Release(Regions owner, long off, long nbytes) {
            this.owner = owner;
            this.off = off;
            this.nbytes = nbytes;
        }

        @Override
        public void run() {
            owner.free(off, nbytes);
        }
    }

    /** What a region-backed vector holds: the Cleaner watches it. */
    static final class Region {
        final long offset;
        final long nbytes;

        Region(long offset, long nbytes) {
            this.offset = offset;
            this.nbytes = nbytes;
        }
    }

    /**
     * A vector of the {@code n} floats the engine wrote at {@code off} (file
     * {@code path}, now {@code size} bytes long); the region is freed when the
     * vector (and every vector sharing it) is unreachable.
     */
    public FloatVector vector(String path, long size, long off, int n) {
        return vector(Mapper.FILES, path, size, off, n);
    }

    /** {@link #vector(String, long, long, int)} over memory reached through {@code mapper}. */
    public FloatVector vector(Mapper mapper, String path, long size, long off, int n) {
        long nbytes = 4L * n;
        if (off + nbytes > Math.min(size, MAX_CAP)) {
            throw new IllegalArgumentException("region at " + off + " of " + nbytes
                    + " bytes is past the file's end (" + size + ")");
        }
        ByteBuffer m = buffer(mapper, path, size);
        FloatBuffer fb = m.slice((int) off, (int) nbytes).order(ByteOrder.nativeOrder())
                .asFloatBuffer().asReadOnlyBuffer();
        Region region = new Region(off, nbytes);
        Handles.CLEANER.register(region, new Release(this, off, nbytes));
        return new FloatVector(fb, region);
    }

    /** Counters for tests and {@code bridge/region-stats}. */
    public synchronized Map<String, Long> stats() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("live", live);
        m.put("top", top);
        m.put("extent", extent);
        m.put("gc-at", gcAt);
        m.put("cap", cap);
        m.put("mapped", mapped);
        m.put("allocations", allocations);
        m.put("reused", reused);
        m.put("frees", frees);
        m.put("collections", collections);
        m.put("free-blocks", (long) free.size());
        return m;
    }
}
