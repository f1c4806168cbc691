package org.apache.clojure_mxnet.kvstore;

import org.apache.clojure_mxnet.bridge.Handles;

/**
 * A handle to a store in the engine.
 *
 * <p>A JVM class compiled with the bridge (not a Clojure {@code deftype}):
 * reloading {@code org.apache.clojure-mxnet.kvstore}, or any namespace, leaves
 * existing stores usable and accepted by the specs. {@link #close} is
 * {@code kvstore/dispose}: idempotent, so {@code with-open} works.
 */
public final class KVStore implements AutoCloseable {
    /** The connection (a Clojure map) of the engine that holds the store. */
    public final Object conn;
    public final Handles.Handle handle;
    /** The store's type string, e.g. {@code "local"}. */
    public final String kvType;

    public KVStore(Object conn, Handles.Handle handle, String kvType) {
        this.conn = conn;
        this.handle = handle;
        this.kvType = kvType;
    }

    /** Disposes the engine's store now; does nothing the second time. */
    @Override
    public void close() {
        handle.dispose();
    }

    @Override
    public String toString() {
        return "KVStore " + kvType + (handle.isReleased() ? " disposed" : "");
    }
}
