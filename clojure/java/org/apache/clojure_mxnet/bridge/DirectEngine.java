package org.apache.clojure_mxnet.bridge;

import java.nio.ByteBuffer;

/**
 * An {@link Engine} living in this process (the JPype transport: Python hosts
 * the JVM), whose memory the JVM reaches directly.
 *
 * <p>A method returning a buffer reports an engine error by throwing an
 * exception whose message holds {@code "mxkv-engine-error:"} and then the
 * error map of {@link Engine#call} as JSON.
 *
 * <p>The buffers returned are direct {@link ByteBuffer}s over the engine's
 * own (numpy) memory, not copies: no /dev/shm file, no {@code byte[]}. Each
 * buffer keeps the memory it covers alive while the buffer is reachable,
 * whatever the engine does meanwhile. Their byte order is unspecified: set
 * {@link java.nio.ByteOrder#nativeOrder()} before reading numbers.
 */
public interface DirectEngine extends Engine {

    /**
     * The engine's scratch arena ({@code "arena"}) or region space
     * ({@code "regions"}), at its current size (at most 2 GiB - 1 byte).
     */
    ByteBuffer memory(String name);

    /**
     * The memory of CPU array {@code id} itself: writes through the buffer
     * change the array and the array's changes are seen through it. Fails for
     * arrays that do not live in host memory.
     */
    ByteBuffer share(long id);

    /**
     * The contents of array {@code id} as {@code dtype} ({@code "float32"},
     * {@code "float64"}, {@code "int32"}, or {@code "raw"} for its own): the
     * array's own memory when it is a CPU array of that dtype, else a
     * converted copy that the buffer owns. For reading; a write may or may
     * not reach the array (use {@link #share} to write).
     */
    ByteBuffer view(long id, String dtype);

    /** Drops every object of this engine and frees its memory; later calls fail. */
    void close();
}
