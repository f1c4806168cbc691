(ns org.apache.clojure-mxnet.bridge.connection
  "Connections to engines: what each transport provides, and the default
   connection the API uses.

   A connection is a map holding an `org.apache.clojure_mxnet.bridge.Engine`
   plus what its transport provides (is the engine alive, the shared-memory
   arena, how to close it). Transports:

   - Py4J, JVM first (`start-py4j`): the JVM spawns `python -m mxkv.bridge`;
     array data crosses through the engine's /dev/shm files.
   - JPype, Python first (`start-jpype`): Python hosts this JVM and the
     engine lives in the same process; array data crosses through direct
     buffers over the engine's memory.
   - Py4J, Python first (`attach`): a running Python program serves engines
     (`mxkv.bridge.serve()`) and this JVM attaches with the address and
     secret from the file the program wrote."
  (:require [clojure.java.io :as io]
            [org.apache.clojure-mxnet.bridge.config :as config]
            [org.apache.clojure-mxnet.bridge.errors :as errors :refer [refusing-unsafe-files]]
            [org.apache.clojure-mxnet.bridge.json :as json])
  (:import (java.util.concurrent TimeUnit)
           (java.util.concurrent.atomic AtomicLong)
           (org.apache.clojure_mxnet.bridge Arena DirectEngine Engine Handles JPypeTransport
                                            Mapper PrivateFiles Py4JTransport
                                            Py4JTransport$Attached)))

(set! *warn-on-reflection* true)

(defn connect
  "A connection over `engine` (an org.apache.clojure_mxnet.bridge.Engine).
   `transport` keys: :kind (:py4j, :jpype, :attached), :alive? (fn [] bool),
   :exited-within? (fn [ms] bool: waits up to ms for the engine's process to
   be gone), :exit-code (fn [] int|nil), :close (fn []), :pid, :timeout-ms (the
   longest wait for an answer, and every call's deadline: 0 for none),
   :board? (calls carry tickets the engine marks on the arena's call board:
   engines in another process), and how the engine's memories are reached:
   :mapper (an org.apache.clojure_mxnet.bridge.Mapper for the region space;
   default: map its file) and :arena (an Arena; default: one mapping the
   arena's file)."
  [^Engine engine transport]
  (let [info (json/parse (.info engine))
        ^Arena arena (or (:arena transport) (Arena.))
        conn (merge {:alive? (constantly true) :exit-code (constantly nil) :close (fn [])
                     :exited-within? (fn [_] false) :timeout-ms 0 :board? false
                     :map-arena (fn [path size] (refusing-unsafe-files (.buffer arena path size)))
                     :mapper Mapper/FILES}
                    transport
                    {:engine engine :handles (Handles. engine (config/engine-gc-bytes)) :arena arena
                     :info info :regions (config/regions info) :tickets (AtomicLong.)
                     :pid (or (:pid transport) (:pid info))})]
    ((:map-arena conn) (:arena info) (:arena_size info))
    conn))

(defn start-py4j
  "Starts an engine over Py4J (JVM first) and returns its connection.
   Options: :python (interpreter), :call-timeout-ms, :start-timeout-ms, :env."
  ([] (start-py4j {}))
  ([{:keys [python call-timeout-ms start-timeout-ms env]
     :or {call-timeout-ms (config/call-timeout-ms)
          start-timeout-ms (config/start-timeout-ms)}}]
   (let [cmd [(or python (config/python-command)) "-m" "mxkv.bridge"]
         ^Py4JTransport t (try
                            (Py4JTransport/start cmd (merge (config/engine-env) env)
                                                 (long start-timeout-ms) (int call-timeout-ms))
                            (catch IllegalStateException e
                              (throw (ex-info (.getMessage e) {:type :engine-start-failed
                                                               :command cmd} e))))]
     (let [conn (connect (.engine t)
                    {:kind :py4j
                     :alive? #(.isAlive t)
                     :exited-within? #(.waitFor (.process t) (long %) TimeUnit/MILLISECONDS)
                     :exit-code #(.exitCode t)
                     :close #(.close t)
                     :pid (.pid t)
                     :timeout-ms call-timeout-ms
                     :board? true
                     :transport t})]
       (.removeWhenGone t (filterv string? [(get-in conn [:info :arena])
                                            (get-in conn [:info :regions])]))
       conn))))

(defn start-jpype
  "Starts an engine in this process over JPype and returns its connection.
   Python must host this JVM (`mxkv.jvm.start()`, `mxkv clj --transport
   jpype`); array data crosses through direct buffers over the engine's
   memory, calls are JNI calls (no socket). A call runs to its end once
   started; one that cannot start within :call-timeout-ms (default
   MXKV_CALL_TIMEOUT_MS, 60000; 0: no limit) because the engine is busy is
   dropped unrun ({:type :engine-timeout :may-have-run false})."
  ([] (start-jpype {}))
  ([{:keys [call-timeout-ms] :or {call-timeout-ms (config/call-timeout-ms)}}]
   (let [^DirectEngine e (try (JPypeTransport/start)
                              (catch IllegalStateException ex
                                (throw (ex-info (.getMessage ex) {:type :engine-start-failed
                                                                  :transport :jpype} ex))))
         open? (atom true)]
     (connect e {:kind :jpype
                 :alive? #(deref open?)
                 :close #(when (compare-and-set! open? true false) (.close e))
                 :timeout-ms call-timeout-ms
                 :arena (Arena. (Mapper/direct e "arena"))
                 :mapper (Mapper/direct e "regions")}))))

(defn attach
  "Attaches to a running Python program that serves engines over Py4J
   (`mxkv.bridge.serve()`): reads the address, port and secret from
   `attach-file` (a regular file of this user that no one else may read;
   anything else is refused with {:type :unsafe-file}), and returns a
   connection to a new engine of that program. Closing the connection leaves
   the program running. Options: :call-timeout-ms."
  ([attach-file] (attach attach-file {}))
  ([attach-file {:keys [call-timeout-ms]
                 :or {call-timeout-ms (config/call-timeout-ms)}}]
   (let [f (io/file attach-file)]
     (when-not (.exists f)
       (throw (ex-info (str "no attach file at " f ": start the Python side with "
                            "mxkv.bridge.serve() and pass the path it reports")
                       {:type :engine-unreachable :file (str f)})))
     (let [{:keys [address port secret pid]} (json/parse (refusing-unsafe-files
                                                          (PrivateFiles/read (.toPath f))))
           _ (when (config/process-gone? pid)
               (throw (ex-info (str "the program that wrote " f " (pid " pid ") is not running: "
                                    "it was killed before it could remove the file")
                               {:type :engine-dead :file (str f) :pid pid})))
           ^Py4JTransport$Attached t
           (try (Py4JTransport/attach ^String address (int port) ^String secret (int call-timeout-ms))
                (catch Exception e
                  (throw (ex-info (str "cannot attach to the mxkv engine server at " address ":"
                                       port " (pid " pid "): " (.getMessage e))
                                  {:type :engine-unreachable :file (str f) :pid pid
                                   :transport-exception e}))))
           alive? #(and (not (.isClosed t)) (not (config/process-gone? pid)))]
       (connect (.engine t) {:kind :attached
                             :alive? alive?
                             :exited-within? (config/exited-within pid)
                             :close #(.close t)
                             :pid pid
                             :timeout-ms call-timeout-ms
                             :board? true})))))

(defn start
  "Starts a new engine over `kind` (default: `config/transport`) and returns
   its connection."
  ([] (start (config/transport)))
  ([kind]
   (case kind
     :py4j (start-py4j)
     :jpype (start-jpype))))

(defn kind
  "How `conn` reaches its engine: :py4j, :jpype or :attached."
  [conn]
  (:kind conn))

;; The default connection; reloading this namespace keeps it (defonce).
(defonce ^:private current (atom nil))

(defn connection
  "The default connection, started on first use over `config/transport`."
  []
  (or @current
      (locking current
        (or @current
            (reset! current (start))))))

(defn use-connection!
  "Makes `conn` the default connection (closing none); returns it."
  [conn]
  (reset! current conn))

(defn close!
  "Closes `conn` (default: the default connection): the engine exits and
   removes its shared memory."
  ([] (when-let [c @current]
        (reset! current nil)
        (close! c)))
  ([conn]
   (.close ^Handles (:handles conn))
   ((:close conn))
   ;; An engine that was killed could not remove its shared memory: the
   ;; JVM that knows the paths does it (the mappings it holds stay valid).
   (when-not ((:alive? conn))
     (doseq [k [:arena :regions]
             :let [path (get (:info conn) k)]
             :when (string? path)]
       (.delete (java.io.File. ^String path))))))

(defn restart!
  "Closes the default engine and starts a new one. Objects of the old engine
   become unusable."
  []
  (locking current
    (close!)
    (connection)))

(defn alive?
  "True while the engine of `conn` (default: the default connection) runs."
  ([] (alive? (connection)))
  ([conn] (boolean ((:alive? conn)))))
