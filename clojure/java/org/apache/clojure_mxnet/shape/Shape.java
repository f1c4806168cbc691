package org.apache.clojure_mxnet.shape;

import clojure.lang.Util;

/**
 * An array's shape: a value holding its dimensions (a Clojure vector of
 * ints), printed as {@code (2,3)} and equal to another Shape with the same
 * dimensions.
 *
 * <p>A JVM class compiled with the bridge (not a Clojure {@code deftype}), so
 * that it survives reloading {@code org.apache.clojure-mxnet.shape}.
 */
public final class Shape {
    /** The dimensions, a Clojure vector of ints. */
    public final Object dims;

    public Shape(Object dims) {
        this.dims = dims;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shape && Util.equiv(dims, ((Shape) o).dims);
    }

    @Override
    public int hashCode() {
        return Util.hasheq(dims);
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("(");
        boolean first = true;
        for (Object d : (Iterable<?>) dims) {
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append(d);
        }
        return b.append(')').toString();
    }
}
