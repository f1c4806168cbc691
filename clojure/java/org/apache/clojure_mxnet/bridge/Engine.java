package org.apache.clojure_mxnet.bridge;

/**
 * The one interface between the Clojure API and the Python engine.
 *
 * <p>The engine lives in Python (python/mxkv/bridge); the JVM holds integer
 * handles to the NDArray and KVStore objects it keeps there. Every transport
 * (Py4J with the JVM as host, JPype with Python as host) hands the Clojure
 * side an object implementing this interface, and the Clojure namespaces use
 * nothing else.
 *
 * <p>Arguments and results are compact JSON text: strings cross every
 * transport cheaply, whereas Java arrays handed to a Py4J callback become
 * remote proxies whose every element costs a round trip. Array contents never
 * travel through this interface; they cross through the shared-memory arena
 * that the {@code arena} and {@code read} operations describe.
 */
public interface Engine {

    /**
     * Runs one engine operation.
     *
     * @param op   the operation's name, for example {@code "kv.push"}, optionally
     *             followed by its deadline and ticket: {@code "kv.push@D"} or
     *             {@code "kv.push@D#T"}. The engine does not start the call once
     *             the deadline D (wall-clock milliseconds since the epoch) has
     *             passed: it answers an {@code engine-timeout} error map with
     *             {@code may_have_run} false instead, so a caller that gave up
     *             on the call can retry it without applying it twice. When it
     *             starts the call it first writes the ticket T (a positive
     *             number unique among the caller's calls) on the call board
     *             (the arena's header, see {@link Arena#started}), where a
     *             caller whose wait timed out reads whether the call started;
     *             a ticket delivered twice runs once. (In the name rather than
     *             as arguments: two more arguments cost a JPype call 1.5 us.)
     * @param args the operation's arguments as one JSON value (usually an array)
     * @return {@code "o"} for success without a value, {@code "o" + JSON} for a
     *         value, or {@code "e" + JSON} for an error map with the keys
     *         {@code type}, {@code message}, {@code python_class} and
     *         {@code traceback}. Engine errors are returned, never thrown, so
     *         that the caller can build structured errors from them.
     */
    String call(String op, String args);

    /**
     * Static facts about the engine, as a JSON map with the keys
     * <ul>
     * <li>{@code pid}: the engine's process id;</li>
     * <li>{@code backend}: the Python module it runs ({@code "mxkv"}, or
     *     {@code "mxnet"} for parity runs);</li>
     * <li>{@code version}: that module's version;</li>
     * <li>{@code python}, {@code numpy}: the interpreter's and numpy's versions;</li>
     * <li>{@code arena}: the call arena's path ({@code "mem:..."} when it is
     *     anonymous memory), {@code arena_size} its bytes, {@code arena_header}
     *     the bytes before its data area;</li>
     * <li>{@code regions}: the region space's path, {@code shm_bytes} the size
     *     of the shared-memory file system it lives on;</li>
     * <li>{@code follow}: whether the JVM may read a copy while the engine
     *     writes it (x86 only);</li>
     * <li>{@code memory}: whether arena and regions are anonymous memory
     *     (in-process JPype) rather than files;</li>
     * <li>{@code engine_id}: the id the host gave this engine, or null.</li>
     * </ul>
     */
    String info();
}
