(ns org.apache.clojure-mxnet.bridge.calls
  "Control calls into the engine and the handles of the objects they make.

   A call sends an operation name and JSON arguments and gets JSON back:
   handles and keys, never array contents. Every call carries a deadline
   (now + the connection's :timeout-ms); an engine object's handle frees it
   when its JVM object is garbage-collected or disposed."
  (:require [org.apache.clojure-mxnet.bridge.connection :as connection]
            [org.apache.clojure-mxnet.bridge.errors :as errors]
            [org.apache.clojure-mxnet.bridge.json :as json]
            [org.apache.clojure-mxnet.util :as util])
  (:import (java.util.concurrent.atomic AtomicLong)
           (org.apache.clojure_mxnet.bridge Deadline Engine Handles Handles$Handle)))

(set! *warn-on-reflection* true)

(defn call-json
  "Runs engine operation `op` with JSON text `args`; returns the parsed
   result. The call carries a deadline (now + the connection's :timeout-ms)
   past which the engine will not start it, and over Py4J a ticket the engine
   marks when it starts it, so a timeout error can say whether it ran
   (:may-have-run): both in the operation's name, `op@deadline#ticket`."
  [conn ^String op ^String args]
  (let [^Engine e (:engine conn)
        timeout (long (:timeout-ms conn))
        deadline (if (pos? timeout) (+ (System/currentTimeMillis) timeout) 0)
        ticket (if (:board? conn) (.incrementAndGet ^AtomicLong (:tickets conn)) 0)
        stamped (if (or (pos? deadline) (pos? ticket))
                  (let [sb (doto (StringBuilder. (+ (.length op) 32)) (.append op) (.append \@)
                                 (.append (long deadline)))]
                    (when (pos? ticket) (.append sb \#) (.append sb (long ticket)))
                    (.toString sb))
                  op)
        ^String r (try
                    ;; Over Py4J the connection it uses (set up, sent, read)
                    ;; is bounded by the deadline too (see DeadlineClient).
                    (Deadline/call e stamped args deadline)
                    (catch Exception ex
                      (throw (util/at-caller (errors/transport-error conn op ex deadline ticket)))))]
    (if (nil? r)
      (throw (util/at-caller (errors/transport-error conn op (IllegalStateException. "no answer")
                                                     deadline ticket)))
      (case (.charAt r 0)
        \o (when (> (.length r) 1) (json/parse r 1))
        \e (throw (util/at-caller (errors/engine-error op (json/parse r 1))))))))

(defn call
  "Runs engine operation `op` with `args` (Clojure data sent as JSON)."
  ([conn op] (call-json conn op "[]"))
  ([conn op args] (call-json conn op (json/->json args))))

(defn info
  "The engine's static facts: pid, backend, versions, arena."
  ([] (info (connection/connection)))
  ([conn] (json/parse (.info ^Engine (:engine conn)))))

(defn stats
  "Live handle count and call count of the engine."
  ([] (stats (connection/connection)))
  ([conn] (call conn "stats")))

(defn tracked
  "Builds a JVM object for engine object `id` with `(ctor handle)` and
   ties the engine object's life to it: the engine drops the object when the
   JVM object is garbage-collected or its handle disposed. `nbytes` is
   the engine memory the object holds: when collectable objects hold more
   than MXKV_ENGINE_GC_MB, this first runs a GC so that the engine drops
   those that are garbage (see Handles)."
  ([conn id ctor] (tracked conn id ctor 0))
  ([conn id ctor nbytes]
   (let [^Handles$Handle h (.handle ^Handles (:handles conn) (long id) (long nbytes))
         obj (ctor h)]
     (.attach h obj)
     obj)))

(defn handle-stats
  "The handle table's memory accounting for `conn` (default: the default
   connection): :live-bytes (engine bytes held by objects not yet released),
   :gc-at, :collections (GCs run because :live-bytes passed :gc-at), :released."
  ([] (handle-stats (connection/connection)))
  ([conn] (let [^Handles h (:handles conn)]
            {:live-bytes (.liveBytes h) :gc-at (.gcAt h) :collections (.collections h)
             :released (.releasedCount h)})))

(defn flush-releases!
  "Sends pending releases now."
  ([] (flush-releases! (connection/connection)))
  ([conn] (.flush ^Handles (:handles conn))))

(defn handle-id
  "The engine id behind a handle; throws if it was disposed."
  ^long [^Handles$Handle h what]
  (when (.isReleased h)
    (throw (util/at-caller (ex-info (str "this " what " was disposed") {:type :disposed}))))
  (.id h))
