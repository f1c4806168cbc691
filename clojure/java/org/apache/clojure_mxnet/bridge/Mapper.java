package org.apache.clojure_mxnet.bridge;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * How the JVM reaches one of the engine's memories (the scratch arena, the
 * region space): over Py4J by mapping the engine's /dev/shm file
 * ({@link #FILES}); over JPype by asking the in-process engine for a direct
 * buffer over its memory ({@link #direct}).
 */
public interface Mapper {

    /**
     * At least {@code size} bytes of the memory the engine calls
     * {@code path}, as a native-order buffer starting at its byte 0.
     */
    ByteBuffer map(String path, long size);

    /**
     * Maps the file at {@code path} read-write, once {@link PrivateFiles}
     * found it to be this user's private regular file (not a link).
     */
    Mapper FILES = (path, size) -> {
        try (FileChannel ch = PrivateFiles.open(Path.of(path))) {
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
            m.order(ByteOrder.nativeOrder());
            return m;
        } catch (IOException e) {
            throw new IllegalStateException("cannot map the engine's memory " + path + ": " + e, e);
        }
    };

    /** The in-process engine's memory {@code name} ("arena" or "regions"). */
    static Mapper direct(DirectEngine engine, String name) {
        return (path, size) -> {
            ByteBuffer b = engine.memory(name);
            if (b.capacity() < Math.min(size, Integer.MAX_VALUE)) {
                throw new IllegalStateException("the engine's " + name + " holds " + b.capacity()
                        + " bytes, " + size + " were expected");
            }
            return b.order(ByteOrder.nativeOrder());
        };
    }
}
