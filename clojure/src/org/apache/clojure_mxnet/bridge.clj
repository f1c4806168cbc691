(ns org.apache.clojure-mxnet.bridge
  "The Clojure API's one door to the Python engine.

   Every namespace of the API calls the engine through this one, and this one
   only through `org.apache.clojure_mxnet.bridge.Engine`. This namespace is a
   facade: each function is defined in one of the bridge's namespaces, one
   concern each, and re-exported here unchanged:

   - `bridge.json`        the JSON both ways (one codec, `bridge.Json`)
   - `bridge.config`      where the engine comes from; settings; transport
   - `bridge.errors`      how a failed call becomes ex-info, by :type
   - `bridge.connection`  Py4J (JVM first), JPype, attach; the default
                          connection; close!, restart!
   - `bridge.calls`       control calls and the handles of engine objects
   - `bridge.data`        array contents through shared memory

   A connection is a map holding an Engine plus what its transport provides.
   `transport` names the one the default connection uses; `start` starts a
   connection over it; `use-connection!` installs any connection.

   Control calls (`call`) send an operation name and JSON arguments and get
   JSON back: handles and keys, never array contents. Array contents cross
   through the engine's shared memory (`read-array`, `write-floats`,
   `read-vec`): the engine copies into it and the JVM bulk-copies out, or the
   reverse, except that a large `read-vec` result *owns* the region of shared
   memory the engine copied into (no JVM copy; freed when the vector is
   garbage-collected). No Clojure value shares memory with an engine array
   (`share` excepted, which says so).

   Errors: an engine-side exception becomes `ex-info` with the engine's
   message and `{:type :mxnet-error :python-class .. :traceback .. :op ..}`
   (the Python class in :python-class, its stack in :traceback), its stack
   trace starting at the API's caller; a dead engine gives `:type :engine-dead`, a frozen
   one `:engine-timeout` after `MXKV_CALL_TIMEOUT_MS` (default 60000; 0 waits
   forever)."
  (:require [org.apache.clojure-mxnet.bridge.calls]
            [org.apache.clojure-mxnet.bridge.config]
            [org.apache.clojure-mxnet.bridge.connection]
            [org.apache.clojure-mxnet.bridge.data]
            [org.apache.clojure-mxnet.bridge.json]))

(defmacro ^:private export
  "Defines, for each namespace-qualified symbol, a var of that name here
   holding the same function, with its doc string and arglists (so type
   hints, primitive ones included, work at call sites through the facade)."
  [& syms]
  `(do ~@(for [s syms
               :let [v (resolve s)
                     m (select-keys (meta v) [:doc :arglists :tag])]]
           `(def ~(with-meta (symbol (name s)) (into {} (map (fn [[k x]] [k (list 'quote x)])) m))
              ~s))))

(export org.apache.clojure-mxnet.bridge.json/->json

        org.apache.clojure-mxnet.bridge.config/project-root
        org.apache.clojure-mxnet.bridge.config/python-command
        org.apache.clojure-mxnet.bridge.config/transport

        org.apache.clojure-mxnet.bridge.connection/connect
        org.apache.clojure-mxnet.bridge.connection/start-py4j
        org.apache.clojure-mxnet.bridge.connection/start-jpype
        org.apache.clojure-mxnet.bridge.connection/attach
        org.apache.clojure-mxnet.bridge.connection/start
        org.apache.clojure-mxnet.bridge.connection/kind
        org.apache.clojure-mxnet.bridge.connection/connection
        org.apache.clojure-mxnet.bridge.connection/use-connection!
        org.apache.clojure-mxnet.bridge.connection/close!
        org.apache.clojure-mxnet.bridge.connection/restart!
        org.apache.clojure-mxnet.bridge.connection/alive?

        org.apache.clojure-mxnet.bridge.calls/call-json
        org.apache.clojure-mxnet.bridge.calls/call
        org.apache.clojure-mxnet.bridge.calls/info
        org.apache.clojure-mxnet.bridge.calls/stats
        org.apache.clojure-mxnet.bridge.calls/tracked
        org.apache.clojure-mxnet.bridge.calls/handle-stats
        org.apache.clojure-mxnet.bridge.calls/flush-releases!
        org.apache.clojure-mxnet.bridge.calls/handle-id

        org.apache.clojure-mxnet.bridge.data/read-floats
        org.apache.clojure-mxnet.bridge.data/read-array
        org.apache.clojure-mxnet.bridge.data/write-floats
        org.apache.clojure-mxnet.bridge.data/float-vector
        org.apache.clojure-mxnet.bridge.data/read-vec
        org.apache.clojure-mxnet.bridge.data/region-stats
        org.apache.clojure-mxnet.bridge.data/share)
