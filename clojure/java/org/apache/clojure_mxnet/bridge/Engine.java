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
     * @param op   the operation's name, for example {@code "kv.push"}
     * @param args the operation's arguments as one JSON value (usually an array)
     * @return {@code "o"} for success without a value, {@code "o" + JSON} for a
     *         value, or {@code "e" + JSON} for an error map with the keys
     *         {@code type}, {@code message}, {@code python_class} and
     *         {@code traceback}. Engine errors are returned, never thrown, so
     *         that the caller can build structured errors from them.
     */
    String call(String op, String args);

    /**
     * {@link #call(String, String)} with a deadline: the engine does not
     * start the call once {@code deadline} has passed (it answers an
     * {@code engine-timeout} error map with {@code may_have_run} false
     * instead), so a caller that gave up on a call can retry it without
     * applying it twice.
     *
     * @param deadline the wall-clock time, in milliseconds since the epoch,
     *                 after which the call must not start; 0 for none
     * @param ticket   a positive number unique among this caller's calls, or
     *                 0: when the call starts the engine first writes it on
     *                 the call board (a slot of the arena's header, see
     *                 {@link Arena#started}), where a caller whose wait
     *                 timed out can read whether it started; a ticket
     *                 delivered twice runs once
     */
    String call(String op, String args, long deadline, long ticket);

    /**
     * Static facts about the engine, as a JSON map: {@code pid},
     * {@code version}, {@code python}, {@code arena} (path) and
     * {@code arena_size}.
     */
    String info();
}
