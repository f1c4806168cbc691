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

/**
 * An immutable Clojure vector of floats over a {@code float[]} it owns.
 *
 * <p>{@code ndarray/->vec} returns one: building it costs one bulk copy out of
 * shared memory, and no element is boxed until it is read. It compares, hashes
 * and prints like the vector of boxed floats clojure-mxnet returned
 * ({@code [2.0 2.0 2.0]}); {@code conj}, {@code assoc} and {@code pop} return
 * ordinary persistent vectors.
 */
public final class FloatVector extends APersistentVector implements IObj, IReduce {
    private static final long serialVersionUID = 1L;
    private final float[] data;
    private final IPersistentMap meta;

    /** Takes ownership of {@code data}: the caller must not change it afterwards. */
    public FloatVector(float[] data) {
        this(data, null);
    }

    private FloatVector(float[] data, IPersistentMap meta) {
        this.data = data;
        this.meta = meta;
    }

    @Override
    public int count() {
        return data.length;
    }

    @Override
    public Object nth(int i) {
        if (i < 0 || i >= data.length) {
            throw new IndexOutOfBoundsException();
        }
        return data[i];
    }

    /** The element at {@code i} as a primitive float. */
    public float getFloat(int i) {
        return data[i];
    }

    /** A copy of the elements. */
    public float[] toFloatArray() {
        return data.clone();
    }

    private PersistentVector boxed() {
        Object[] a = new Object[data.length];
        for (int i = 0; i < data.length; i++) {
            a[i] = data[i];
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
        if (data.length == 0) {
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
        return m == meta ? this : new FloatVector(data, m);
    }

    @Override
    public Object reduce(IFn f) {
        if (data.length == 0) {
            return f.invoke();
        }
        Object acc = data[0];
        for (int i = 1; i < data.length; i++) {
            acc = f.invoke(acc, data[i]);
            if (RT.isReduced(acc)) {
                return ((Reduced) acc).deref();
            }
        }
        return acc;
    }

    @Override
    public Object reduce(IFn f, Object start) {
        Object acc = start;
        for (int i = 0; i < data.length; i++) {
            acc = f.invoke(acc, data[i]);
            if (RT.isReduced(acc)) {
                return ((Reduced) acc).deref();
            }
        }
        return acc;
    }
}
