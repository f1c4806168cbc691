package org.apache.clojure_mxnet.ndarray;

import java.util.function.BiPredicate;

import clojure.lang.Util;

import org.apache.clojure_mxnet.bridge.Handles;

/**
 * A handle to an array living in the engine, with its shape, dtype and
 * context cached on the JVM.
 *
 * <p>A JVM class compiled with the bridge (not a Clojure {@code deftype}):
 * reloading {@code org.apache.clojure-mxnet.ndarray}, or any namespace, leaves
 * existing arrays usable and accepted by the specs. {@link #close} is
 * {@code ndarray/dispose}: idempotent, so {@code with-open} works.
 *
 * <p>Equality is clojure-mxnet's: the same shape and the same elements read
 * as float32, compared in the engine (no contents cross to the JVM) by
 * {@link #contentsEqual}, which the ndarray namespace installs.
 */
public final class NDArray implements AutoCloseable {
    /** The connection (a Clojure map) of the engine that holds the array. */
    public final Object conn;
    public final Handles.Handle handle;
    /** Dimensions, a Clojure vector of ints. */
    public final Object shape;
    /** A {@code DType}. */
    public final Object dtype;
    /** A {@code Context}. */
    public final Object ctx;
    /** {@code "default"} or {@code "row_sparse"}. */
    public final String stype;
    /** The array's dependency node (an atom; see {@code ndarray/dependencies}). */
    public final Object deps;

    /** Compares two arrays' contents in their engine (set by the ndarray namespace). */
    public static volatile BiPredicate<NDArray, NDArray> contentsEqual;

    public NDArray(Object conn, Handles.Handle handle, Object shape, Object dtype, Object ctx,
                   String stype, Object deps) {
        this.conn = conn;
        this.handle = handle;
        this.shape = shape;
        this.dtype = dtype;
        this.ctx = ctx;
        this.stype = stype;
        this.deps = deps;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof NDArray)) {
            return false;
        }
        NDArray a = (NDArray) o;
        BiPredicate<NDArray, NDArray> eq = contentsEqual;
        return Util.equiv(shape, a.shape) && conn == a.conn && !handle.isReleased()
                && !a.handle.isReleased() && eq != null && eq.test(this, a);
    }

    @Override
    public int hashCode() {
        return Util.hasheq(shape);
    }

    /** Disposes the engine's array now; does nothing the second time. */
    @Override
    public void close() {
        handle.dispose();
    }

    @Override
    public String toString() {
        return "NDArray " + shape + " " + dtype + " " + ctx
                + ("default".equals(stype) ? "" : " " + stype)
                + (handle.isReleased() ? " disposed" : "");
    }
}
