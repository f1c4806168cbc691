package org.apache.clojure_mxnet.dtype;

import clojure.lang.Named;

/**
 * An element type, named like numpy's dtype: {@code (name dtype/FLOAT32)} and
 * {@code (str dtype/FLOAT32)} are {@code "float32"}; equal to another DType of
 * the same name.
 *
 * <p>A JVM class compiled with the bridge (not a Clojure {@code deftype}), so
 * that the dtype of an array made before {@code org.apache.clojure-mxnet.dtype}
 * was reloaded still equals the reloaded constants.
 */
public final class DType implements Named {
    /** The name, e.g. {@code "float32"}. */
    public final String nm;

    public DType(String nm) {
        this.nm = nm;
    }

    @Override
    public String getName() {
        return nm;
    }

    @Override
    public String getNamespace() {
        return null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DType && nm.equals(((DType) o).nm);
    }

    @Override
    public int hashCode() {
        return nm.hashCode();
    }

    @Override
    public String toString() {
        return nm;
    }
}
