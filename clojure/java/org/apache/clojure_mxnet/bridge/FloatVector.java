package org.apache.clojure_mxnet.bridge;

import clojure.lang.APersistentVector;
import clojure.lang.IFn;
import clojure.lang.IObj;
import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentStack;
import clojure.lang.IPersistentVector;
import clojure.lang.IReduce;
import clojure.lang.LazilyPersistentVector;
import clojure.lang.PersistentVector;
import clojure.lang.RT;
import clojure.lang.Reduced;

import java.lang.ref.Reference;
import java.nio.FloatBuffer;

/**
 * An immutable Clojure vector of floats over a {@code float[]} it owns, or
 * over a read-only region of the engine's shared memory that it owns.
 *
 * <p>{@code ndarray/->vec} returns one: a small result is one bulk copy out of
 * shared memory into a {@code float[]}; a large one is the region of the
 * engine's region file the engine copied the array into (see
 * {@link Regions}): nothing is copied on the JVM, and the region is returned
 * to the allocator by a {@link java.lang.ref.Cleaner} once this vector, and
 * every vector sharing its region (metadata variants), is unreachable.
 * Nothing writes the region meanwhile, so both kinds are values. No element
 * is boxed until it is read. Both compare, hash and print like the vector of
 * boxed floats clojure-mxnet returned ({@code [2.0 2.0 2.0]}); {@code conj},
 * {@code assoc} and {@code pop} return ordinary persistent vectors.
 * Serializing one writes a {@code float[]}-backed copy.
 */
public final class FloatVector extends APersistentVector implements IObj, IReduce {
    private static final long serialVersionUID = 1L;
    /** The heap backing, or null. */
    private final float[] data;
    /** The shared-memory backing (read-only, native order), or null. */
    private final transient FloatBuffer buf;
    /** Keeps {@link #buf}'s region allocated while this vector is reachable. */
    private final transient Object region;
    private final int n;
    private final IPersistentMap meta;

    /** Takes ownership of {@code data}: the caller must not change it afterwards. */
    public FloatVector(float[] data) {
        this(data, null, null, data.length, null);
    }

    /**
     * A vector over {@code buf} (all of it, from index 0), which nothing may
     * write while {@code region} is reachable: the vector keeps
     * {@code region} reachable for as long as it is.
     */
    FloatVector(FloatBuffer buf, Object region) {
        this(null, buf, region, buf.capacity(), null);
    }

    private FloatVector(float[] data, FloatBuffer buf, Object region, int n, IPersistentMap meta) {
        this.data = data;
        this.buf = buf;
        this.region = region;
        this.n = n;
        this.meta = meta;
    }

    /** True when the elements live in the engine's shared memory rather than a {@code float[]}. */
    public boolean isMapped() {
        return data == null;
    }

    @Override
    public int count() {
        return n;
    }

    @Override
    public Object nth(int i) {
        if (i < 0 || i >= n) {
            throw new IndexOutOfBoundsException();
        }
        return getFloat(i);
    }

    /** The element at {@code i} as a primitive float. */
    public float getFloat(int i) {
        if (data != null) {
            return data[i];
        }
        try {
            return buf.get(i);
        } finally {
            // The region must outlive the read, not just the buffer object.
            Reference.reachabilityFence(this);
        }
    }

    /** A copy of the elements. */
    public float[] toFloatArray() {
        if (data != null) {
            return data.clone();
        }
        float[] out = new float[n];
        try {
            buf.get(0, out, 0, n);
        } finally {
            Reference.reachabilityFence(this);
        }
        return out;
    }

    private PersistentVector boxed() {
        Object[] a = new Object[n];
        for (int i = 0; i < n; i++) {
            a[i] = getFloat(i);
        }
        return (PersistentVector) LazilyPersistentVector.createOwning(a);
    }

    @Override
    public IPersistentVector assocN(int i, Object val) {
        return boxed().assocN(i, val);
    }

    @Override
    public IPersistentVector cons(Object o) {
        return boxed().cons(o);
    }

    @Override
    public IPersistentVector empty() {
        return (IPersistentVector) PersistentVector.EMPTY.withMeta(meta);
    }

    @Override
    public IPersistentStack pop() {
        if (n == 0) {
            throw new IllegalStateException("Can't pop empty vector");
        }
        return boxed().pop();
    }

    @Override
    public IPersistentMap meta() {
        return meta;
    }

    @Override
    public FloatVector withMeta(IPersistentMap m) {
        return m == meta ? this : new FloatVector(data, buf, region, n, m);
    }

    @Override
    public Object reduce(IFn f) {
        if (n == 0) {
            return f.invoke();
        }
        try {
            Object acc = getFloat(0);
            for (int i = 1; i < n; i++) {
                acc = f.invoke(acc, getFloat(i));
                if (RT.isReduced(acc)) {
                    return ((Reduced) acc).deref();
                }
            }
            return acc;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public Object reduce(IFn f, Object start) {
        try {
            Object acc = start;
            for (int i = 0; i < n; i++) {
                acc = f.invoke(acc, getFloat(i));
                if (RT.isReduced(acc)) {
                    return ((Reduced) acc).deref();
                }
            }
            return acc;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Serialization writes a heap copy: a mapping cannot travel. */
    private Object writeReplace() {
        return data != null ? this : new FloatVector(toFloatArray(), null, null, n, meta);
    }
}
