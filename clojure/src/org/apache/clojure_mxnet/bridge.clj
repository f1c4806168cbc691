(ns org.apache.clojure-mxnet.bridge
  "The Clojure API's one door to the Python engine.

   Every namespace of the API calls the engine through this one, and this one
   only through `org.apache.clojure_mxnet.bridge.Engine`: a connection is a
   map holding an Engine plus what its transport provides (is the engine
   alive, the shared-memory arena, how to close it). Transports:

   - Py4J, JVM first (`start-py4j`): the JVM spawns `python -m mxkv.bridge`;
     array data crosses through the engine's /dev/shm files.
   - JPype, Python first (`start-jpype`): Python hosts this JVM
     (`mxkv.jvm.start()`, `mxkv clj --transport jpype`) and the engine lives
     in the same process; array data crosses through direct buffers over the
     engine's memory.
   - Py4J, Python first (`attach`): a running Python program serves engines
     (`mxkv.bridge.serve()`) and this JVM attaches with the address and
     secret from the file the program wrote.

   `transport` names the one the default connection uses; `start` starts a
   connection over it; `use-connection!` installs any connection.

   Control calls (`call`) send an operation name and JSON arguments and get
   JSON back: handles and keys, never array contents. Array contents cross
   through the engine's shared memory (`read-array`, `write-floats`,
   `read-vec`): the engine copies into it and the JVM bulk-copies out, or the
   reverse, except that a large `read-vec` result *owns* the region of shared
   memory the engine copied into (no JVM copy; freed when the vector is
   garbage-collected). No Clojure value shares memory with an engine array.

   Errors: an engine-side exception becomes `ex-info` with the engine's
   message and `{:type :mxnet-error :python-class .. :traceback .. :op ..}`
   (the Python class in :python-class, its stack in :traceback), its stack
   trace starting at the API's caller; a dead engine gives `:type :engine-dead`, a frozen
   one `:engine-timeout` after `MXKV_CALL_TIMEOUT_MS` (default 60000; 0 waits
   forever)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [org.apache.clojure-mxnet.util :as util])
  (:import (java.io File)
           (java.nio ByteBuffer)
           (java.util.concurrent Callable ExecutorService Executors ThreadFactory TimeUnit)
           (java.util.concurrent.atomic AtomicLong)
           (java.net SocketTimeoutException)
           (org.apache.clojure_mxnet.bridge Arena DirectEngine Engine FloatVector Handles
                                            Handles$Handle JPypeTransport Json Mapper
                                            PrivateFiles PrivateFiles$UnsafeFileException
                                            Py4JTransport Py4JTransport$Attached Regions)))

(set! *warn-on-reflection* true)

;;; ------------------------------------------------------------------ JSON out

(declare write-json)

(defn- write-str [^StringBuilder sb ^String s]
  (.append sb \")
  (dotimes [i (.length s)]
    (let [c (.charAt s i)]
      (case c
        \" (.append sb "\\\"")
        \\ (.append sb "\\\\")
        \newline (.append sb "\\n")
        \return (.append sb "\\r")
        \tab (.append sb "\\t")
        (if (< (int c) 0x20)
          (.append sb (format "\\u%04x" (int c)))
          (.append sb c)))))
  (.append sb \"))

(defn- write-seq [^StringBuilder sb xs]
  (.append sb \[)
  (loop [xs (seq xs) first? true]
    (when xs
      (when-not first? (.append sb \,))
      (write-json sb (first xs))
      (recur (next xs) false)))
  (.append sb \]))

(defn- write-json [^StringBuilder sb x]
  (cond
    (nil? x) (.append sb "null")
    (string? x) (write-str sb x)
    (instance? Long x) (.append sb (long x))
    (instance? Integer x) (.append sb (int x))
    (integer? x) (.append sb (str (bigint x)))
    (number? x) (.append sb (double x))
    (boolean? x) (.append sb (if x "true" "false"))
    (keyword? x) (write-str sb (name x))
    (map? x) (do (.append sb \{)
                 (loop [kvs (seq x) first? true]
                   (when kvs
                     (when-not first? (.append sb \,))
                     (let [[k v] (first kvs)]
                       (write-str sb (if (keyword? k) (name k) (str k)))
                       (.append sb \:)
                       (write-json sb v))
                     (recur (next kvs) false)))
                 (.append sb \}))
    (or (sequential? x) (set? x)) (write-seq sb x)
    :else (throw (ex-info (str "cannot send a " (class x) " to the engine") {:type :invalid-argument
                                                                              :value x}))))

(defn ->json
  "Compact JSON text for Clojure data (maps, sequentials, strings, keywords,
   numbers, booleans, nil)."
  ^String [x]
  (let [sb (StringBuilder. 64)]
    (write-json sb x)
    (.toString sb)))

;;; ------------------------------------------------------------------ config

(defn project-root
  "The mxkv checkout these sources come from (`MXKV_HOME` overrides), or nil
   when they are not loaded from files."
  ^File []
  (if-let [home (System/getenv "MXKV_HOME")]
    (io/file home)
    (when-let [url (io/resource "org/apache/clojure_mxnet/bridge.clj")]
      (when (= "file" (.getProtocol ^java.net.URL url))
        ;; <root>/clojure/src/org/apache/clojure_mxnet/bridge.clj
        (some-> (io/file (.toURI ^java.net.URL url))
                .getParentFile .getParentFile .getParentFile .getParentFile .getParentFile
                .getParentFile)))))

(defn- package-python
  "The interpreter of the Python installation whose mxkv package holds the
   jar these sources were loaded from
   (<prefix>/lib/pythonX.Y/site-packages/mxkv/_clojure/mxkv.jar -> <prefix>/bin/python3),
   or nil."
  []
  (when-let [url (io/resource "org/apache/clojure_mxnet/bridge.clj")]
    (when (= "jar" (.getProtocol ^java.net.URL url))
      (let [spec (.getPath ^java.net.URL url)
            jar (io/file (java.net.URI. (subs spec 0 (.indexOf spec "!"))))
            site (some-> jar .getParentFile .getParentFile .getParentFile)]
        (when (and site (#{"site-packages" "dist-packages"} (.getName ^File site)))
          (let [prefix (some-> site .getParentFile .getParentFile .getParentFile)]
            (some (fn [exe] (let [f (io/file prefix "bin" exe)]
                              (when (.canExecute f) (.getPath f))))
                  ["python3" "python"])))))))

(defn python-command
  "The engine's interpreter: `MXKV_PYTHON`, else the JVM property
   `mxkv.python`, else the checkout's .venv, else the Python whose mxkv
   package holds the jar on the classpath, else python3."
  []
  (or (not-empty (System/getenv "MXKV_PYTHON"))
      (not-empty (System/getProperty "mxkv.python"))
      (when-let [root (project-root)]
        (let [py (io/file root ".venv" "bin" "python")]
          (when (.canExecute py) (.getPath py))))
      (package-python)
      "python3"))

(defn- engine-env []
  (let [root (project-root)
        src (when root (io/file root "python"))
        pp (System/getenv "PYTHONPATH")]
    (cond-> {}
      (and src (.isDirectory ^File src))
      (assoc "PYTHONPATH" (if (str/blank? pp) (.getPath ^File src) (str (.getPath ^File src) File/pathSeparator pp))))))

;;; ------------------------------------------------------------------ errors

(defn- kebab-keyword [s]
  (keyword (str/replace (str s) "_" "-")))

(defn- engine-error [op m]
  (ex-info (str (:message m))
           (cond-> {:type (kebab-keyword (:type m))
                    :python-class (:python_class m)
                    :traceback (:traceback m)
                    :op op}
             (contains? m :may_have_run) (assoc :may-have-run (boolean (:may_have_run m))))))

(defn- caused-by? [^Throwable e klass]
  (loop [e e]
    (cond (nil? e) false
          (instance? klass e) true
          :else (recur (.getCause e)))))

(defn- call-started
  "After call `ticket` with `deadline` timed out: :started, :not-started or
   :unknown, from the engine's call board (see Arena/started). Read only once
   the deadline has passed (by a margin), so that :not-started is final: the
   engine checks the deadline after it marks a call started."
  [conn deadline ticket]
  (let [^Arena a (:arena conn)
        wait (- (+ (long deadline) 2) (System/currentTimeMillis))]
    (if (or (not (:board? conn)) (not (pos? (long ticket))) (not (pos? (long deadline))))
      :unknown
      (do (when (pos? wait) (Thread/sleep wait))
          (condp = (.started a (long ticket) (long (get-in conn [:info :arena_header])))
            Arena/STARTED :started
            Arena/NOT_STARTED :not-started
            :unknown)))))

(defn- transport-error
  "The ex-info for call `op` that failed in the transport with `e`. Whether the
   engine is dead is decided from its process: a call failing otherwise than
   by a timeout waits (up to a second) for the process to finish exiting, as a
   killed engine's sockets close before the JVM sees it exit."
  [conn op ^Throwable e deadline ticket]
  (let [timeout? (caused-by? e SocketTimeoutException)
        pid (:pid conn)
        dead? (or (not ((:alive? conn)))
                  (and (not timeout?) ((:exited-within? conn) 1000)))]
    (cond
      dead?
      (ex-info (str "the mxkv engine (pid " pid ") is not running"
                    (when-let [c ((:exit-code conn))] (str " (exit code " c ")"))
                    "; " op " could not run. Objects from that engine are gone; "
                    "(org.apache.clojure-mxnet.bridge/restart!) starts a new engine.")
               {:type :engine-dead :op op :pid pid :exit-code ((:exit-code conn))
                :may-have-run false} e)

      timeout?
      (let [started (call-started conn deadline ticket)]
        (ex-info (str "the mxkv engine (pid " pid ") did not answer " op " within "
                      (:timeout-ms conn) " ms: it is frozen or overloaded (MXKV_CALL_TIMEOUT_MS); "
                      (case started
                        :not-started "the call had not started and will not run (it is safe to retry)"
                        :started "the call had started and may still complete (retrying may apply it twice)"
                        :unknown "the call may still run"))
                 {:type :engine-timeout :op op :pid pid :timeout-ms (:timeout-ms conn)
                  :may-have-run (not= started :not-started)} e))

      :else
      (ex-info (str "cannot reach the mxkv engine (pid " pid ") for " op ": " (.getMessage e))
               {:type :engine-unreachable :op op :pid pid :may-have-run true} e))))

(defn- process-gone?
  "True when process `pid` no longer runs (absent, or a zombie)."
  [pid]
  (let [stat (io/file "/proc" (str pid) "stat")]
    (if (.exists stat)
      ;; (slurp fails on /proc files: they report no size)
      (try (= "Z" (second (re-find #"\) (\S)" (String. (java.nio.file.Files/readAllBytes
                                                         (.toPath stat))))))
           (catch java.io.IOException _ (not (.exists stat))))
      (not (.isPresent (java.lang.ProcessHandle/of (long pid)))))))

(defn- exited-within
  "A fn [ms] that waits up to ms for process `pid` to be gone; true if it is."
  [pid]
  (fn [ms]
    (let [deadline (+ (System/currentTimeMillis) (long ms))]
      (loop []
        (cond (process-gone? pid) true
              (> (System/currentTimeMillis) deadline) false
              :else (do (Thread/sleep 5) (recur)))))))

(defmacro ^:private refusing-unsafe-files
  "Runs `body`; a file that PrivateFiles refused (a link, another user's, or
   readable by others) becomes ex-info {:type :unsafe-file :path ..}."
  [& body]
  `(try ~@body
        (catch PrivateFiles$UnsafeFileException e#
          (throw (util/at-caller (ex-info (.getMessage e#) {:type :unsafe-file :path (.path e#)}
                                          e#))))))

;;; ------------------------------------------------------------------ connections

(defn- regions
  "The allocator of region-backed vectors for an engine with `info`: a GC
   runs before the region space grows past MXKV_REGIONS_GC_MB (default 512,
   but at most an eighth of the shared-memory file system); it holds at most
   MXKV_REGIONS_MAX_MB (default 2047, the limit of one mapping, but at most
   half the file system; 0 turns region-backed vectors off)."
  ^Regions [info]
  (let [shm (long (or (:shm_bytes info) 0))
        mb (fn [var-name ^long default ^long shm-share]
             (if-let [v (util/env-long var-name nil 0)]
               (* (long v) 1024 1024)
               (cond-> (* default 1024 1024) (pos? shm) (min (quot shm shm-share)))))]
    (Regions. (mb "MXKV_REGIONS_GC_MB" 512 8) (mb "MXKV_REGIONS_MAX_MB" 2047 2))))

(defn- engine-gc-bytes
  "Engine bytes that collectable arrays may hold before the JVM runs a GC to
   free those that are garbage: MXKV_ENGINE_GC_MB (default 128; 0 turns it
   off)."
  []
  (let [mb (util/env-long "MXKV_ENGINE_GC_MB" 128 0)]
    (if (pos? mb) (* mb 1024 1024) Long/MAX_VALUE)))

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
  (let [info (Json/parse (.info engine))
        ^Arena arena (or (:arena transport) (Arena.))
        conn (merge {:alive? (constantly true) :exit-code (constantly nil) :close (fn [])
                     :exited-within? (fn [_] false) :timeout-ms 0 :board? false
                     :map-arena (fn [path size] (refusing-unsafe-files (.buffer arena path size)))
                     :mapper Mapper/FILES}
                    transport
                    {:engine engine :handles (Handles. engine (engine-gc-bytes)) :arena arena :info info
                     :regions (regions info) :tickets (AtomicLong.)
                     :pid (or (:pid transport) (:pid info))})]
    ((:map-arena conn) (:arena info) (:arena_size info))
    conn))

(defn start-py4j
  "Starts an engine over Py4J (JVM first) and returns its connection.
   Options: :python (interpreter), :call-timeout-ms, :start-timeout-ms, :env."
  ([] (start-py4j {}))
  ([{:keys [python call-timeout-ms start-timeout-ms env]
     :or {call-timeout-ms (util/env-long "MXKV_CALL_TIMEOUT_MS" 60000 0)
          start-timeout-ms (util/env-long "MXKV_START_TIMEOUT_MS" 60000 0)}}]
   (let [cmd [(or python (python-command)) "-m" "mxkv.bridge"]
         ^Py4JTransport t (try
                            (Py4JTransport/start cmd (merge (engine-env) env)
                                                 (long start-timeout-ms) (int call-timeout-ms))
                            (catch IllegalStateException e
                              (throw (ex-info (.getMessage e) {:type :engine-start-failed
                                                               :command cmd} e))))]
     (connect (.engine t)
              {:kind :py4j
               :alive? #(.isAlive t)
               :exited-within? #(.waitFor (.process t) (long %) TimeUnit/MILLISECONDS)
               :exit-code #(.exitCode t)
               :close #(.close t)
               :pid (.pid t)
               :timeout-ms call-timeout-ms
               :board? true
               :transport t}))))

(defn start-jpype
  "Starts an engine in this process over JPype and returns its connection.
   Python must host this JVM (`mxkv.jvm.start()`, `mxkv clj --transport
   jpype`); array data crosses through direct buffers over the engine's
   memory, calls are JNI calls (no socket). A call runs to its end once
   started; one that cannot start within :call-timeout-ms (default
   MXKV_CALL_TIMEOUT_MS, 60000; 0: no limit) because the engine is busy is
   dropped unrun ({:type :engine-timeout :may-have-run false})."
  ([] (start-jpype {}))
  ([{:keys [call-timeout-ms] :or {call-timeout-ms (util/env-long "MXKV_CALL_TIMEOUT_MS" 60000 0)}}]
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
                 :or {call-timeout-ms (util/env-long "MXKV_CALL_TIMEOUT_MS" 60000 0)}}]
   (let [f (io/file attach-file)]
     (when-not (.exists f)
       (throw (ex-info (str "no attach file at " f ": start the Python side with "
                            "mxkv.bridge.serve() and pass the path it reports")
                       {:type :engine-unreachable :file (str f)})))
     (let [{:keys [address port secret pid]} (Json/parse (refusing-unsafe-files
                                                          (PrivateFiles/read (.toPath f))))
           _ (when (process-gone? pid)
               (throw (ex-info (str "the program that wrote " f " (pid " pid ") is not running: "
                                    "it was killed before it could remove the file")
                               {:type :engine-dead :file (str f) :pid pid})))
           ^Py4JTransport$Attached t
           (try (Py4JTransport/attach ^String address (int port) ^String secret (int call-timeout-ms))
                (catch Exception e
                  (throw (ex-info (str "cannot attach to the mxkv engine server at " address ":"
                                       port " (pid " pid "): " (.getMessage e))
                                  {:type :engine-unreachable :file (str f) :pid pid} e))))
           alive? #(and (not (.isClosed t)) (not (process-gone? pid)))]
       (connect (.engine t) {:kind :attached
                             :alive? alive?
                             :exited-within? (exited-within pid)
                             :close #(.close t)
                             :pid pid
                             :timeout-ms call-timeout-ms
                             :board? true})))))

(defn transport
  "The transport a new default connection uses: the JVM property
   `mxkv.transport`, else the environment variable `MXKV_TRANSPORT`
   (`py4j` or `jpype`), else :jpype when Python hosts this JVM and :py4j
   otherwise."
  []
  (let [v (or (not-empty (System/getProperty "mxkv.transport"))
              (not-empty (System/getenv "MXKV_TRANSPORT")))]
    (case (some-> v str/trim str/lower-case)
      nil (if (JPypeTransport/isHosted) :jpype :py4j)
      "py4j" :py4j
      "jpype" :jpype
      (throw (ex-info (str "unknown mxkv transport " (pr-str v) ": expected py4j or jpype")
                      {:type :invalid-argument :transport v})))))

(defn start
  "Starts a new engine over `kind` (default: `transport`) and returns its
   connection."
  ([] (start (transport)))
  ([kind]
   (case kind
     :py4j (start-py4j)
     :jpype (start-jpype))))

(defn kind
  "How `conn` reaches its engine: :py4j, :jpype or :attached."
  [conn]
  (:kind conn))

(defonce ^:private current (atom nil))

(defn connection
  "The default connection, started on first use over `transport`."
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
  ([] (alive? (connection)))
  ([conn] (boolean ((:alive? conn)))))

;;; ------------------------------------------------------------------ calls

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
                    (.call e stamped args)
                    (catch Exception ex
                      (throw (util/at-caller (transport-error conn op ex deadline ticket)))))]
    (if (nil? r)
      (throw (util/at-caller (transport-error conn op (IllegalStateException. "no answer")
                                              deadline ticket)))
      (case (.charAt r 0)
        \o (when (> (.length r) 1) (Json/parse r 1))
        \e (throw (util/at-caller (engine-error op (Json/parse r 1))))))))

(defn call
  "Runs engine operation `op` with `args` (Clojure data sent as JSON)."
  ([conn op] (call-json conn op "[]"))
  ([conn op args] (call-json conn op (->json args))))

(defn info
  "The engine's static facts: pid, backend, versions, arena."
  ([] (info (connection)))
  ([conn] (Json/parse (.info ^Engine (:engine conn)))))

(defn stats
  "Live handle count and call count of the engine."
  ([] (stats (connection)))
  ([conn] (call conn "stats")))

;;; ------------------------------------------------------------------ handles

(defn tracked
  "Builds a Clojure object for engine object `id` with `(ctor handle)` and
   ties the engine object's life to it: the engine drops the object when the
   Clojure object is garbage-collected or its handle disposed. `nbytes` is
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
  ([] (handle-stats (connection)))
  ([conn] (let [^Handles h (:handles conn)]
            {:live-bytes (.liveBytes h) :gc-at (.gcAt h) :collections (.collections h)
             :released (.releasedCount h)})))

(defn flush-releases!
  "Sends pending releases now."
  ([] (flush-releases! (connection)))
  ([conn] (.flush ^Handles (:handles conn))))

(defn handle-id
  "The engine id behind a handle; throws if it was disposed."
  ^long [^Handles$Handle h what]
  (when (.isReleased h)
    (throw (util/at-caller (ex-info (str "this " what " was disposed") {:type :disposed}))))
  (.id h))

;;; ------------------------------------------------------------------ data plane

(def ^:private max-chunk-bytes (bit-shift-left 1 30))

(def ^:private follow-min-bytes
  "Reads at least this large are followed (copied out while copied in)."
  (bit-shift-left 4 20))

(defonce ^:private ^ExecutorService call-pool
  (Executors/newCachedThreadPool
   (reify ThreadFactory
     (newThread [_ r] (doto (Thread. ^Runnable r "mxkv-engine-call") (.setDaemon true))))))

(defn- arena-buffer ^ByteBuffer [conn path size]
  ((:map-arena conn) path size))

(defn- header ^long [conn]
  (long (or (get-in conn [:info :arena_header]) 0)))

(defn- ensure-arena
  "The arena, mapped, with room for `nbytes` of data after the header."
  ^ByteBuffer [conn nbytes]
  (let [^Arena a (:arena conn)
        need (+ (header conn) (long nbytes))]
    (if (>= (.mappedSize a) need)
      (arena-buffer conn (.path a) (.mappedSize a))
      (let [[path size] (call conn "arena" [need])]
        (arena-buffer conn path size)))))

(defn- read-floats-followed
  "Copies floats [start, start+cnt) of array `id` into dst[start..]: the
   engine call runs on another thread and publishes its progress; this
   thread allocates nothing and copies each chunk as it lands."
  [conn id ^floats dst start cnt]
  (let [buf (ensure-arena conn (* 4 (long cnt)))
        _ (Arena/resetProgress buf)
        fut (.submit call-pool ^Callable (fn [] (call conn "nd.read" [id "float32" start cnt true])))]
    (try
      (Arena/followFloats buf (header conn) dst (int start) (int cnt) fut)
      (catch InterruptedException e
        (.cancel fut true)
        (throw e)))))

(declare read-floats-shm)

(def ^:private direct-error-prefix
  "An in-process engine's method that returns a buffer reports an engine
   error as a Java exception with this message prefix, then the error map as
   JSON."
  "mxkv-engine-error:")

(defn- direct-error
  "The ex-info for exception `ex` thrown by an in-process engine's method."
  [conn op ^Exception ex]
  (let [m (str (.getMessage ex))
        i (.indexOf m ^String direct-error-prefix)]
    (if (>= i 0)
      (engine-error op (Json/parse (subs m (+ i (count direct-error-prefix)))))
      (transport-error conn op ex 0 0))))

(defn- direct
  "The in-process engine of `conn` (JPype), or nil."
  ^DirectEngine [conn]
  (let [e (:engine conn)]
    (when (instance? DirectEngine e) e)))

(defn- direct-view
  "Over JPype: `n` elements of array `id` as `dtype` (float32, float64,
   int32 or raw), a native-order buffer over the array's own memory when it
   has that dtype, else over a converted copy the engine made for it."
  ^ByteBuffer [conn id dtype]
  (let [^DirectEngine e (direct conn)]
    (try
      (.order (.view e (long id) ^String dtype) (java.nio.ByteOrder/nativeOrder))
      (catch Exception ex
        (throw (direct-error conn "nd.view" ex))))))

(defn read-floats
  "COPIES `n` elements of array `id` out of the engine as a new float[]
   (converting from the array's dtype). Over JPype one copy out of the
   array's own memory (a direct buffer over it); else chunked through the
   arena, large reads followed: the JVM copies out while the engine copies
   in."
  ^floats [conn id n]
  (if (direct conn)
    (Arena/readFloats (direct-view conn id "float32") 0 (int n))
    (read-floats-shm conn id n)))

(defn- read-floats-shm
  ^floats [conn id n]
  (let [n (int n)
        chunk (quot max-chunk-bytes 4)
        follow? (and (get-in conn [:info :follow]) (>= (* 4 n) (long follow-min-bytes)))]
    (locking (:arena conn)
      (if follow?
        ;; The engine starts copying before the JVM allocates the result.
        (let [first-cnt (min chunk n)
              buf (ensure-arena conn (* 4 (long first-cnt)))
              _ (Arena/resetProgress buf)
              fut (.submit call-pool ^Callable (fn [] (call conn "nd.read" [id "float32" 0 first-cnt true])))
              dst (float-array n)]
          (Arena/followFloats buf (header conn) dst 0 (int first-cnt) fut)
          (loop [start (long first-cnt)]
            (when (< start n)
              (let [cnt (long (min chunk (- n start)))]
                (read-floats-followed conn id dst start cnt)
                (recur (+ start cnt)))))
          dst)
        (let [dst (float-array n)]
          (loop [start 0]
            (when (< start n)
              (let [cnt (long (min chunk (- n start)))
                    [off _ path size] (call conn "nd.read" [id "float32" start cnt false])]
                (Arena/readFloats (arena-buffer conn path size) (long off) dst (int start) (int cnt))
                (recur (+ start cnt)))))
          dst)))))

(defn read-array
  "COPIES the contents of array `id` (`n` elements) out of the engine as a
   primitive array: `kind` is :double (double[]), :int (int[]) or :raw (the
   array's own bytes, byte[])."
  [conn id n kind]
  (let [dtype (case kind :double "float64" :int "int32" :raw "raw")
        read (fn [^ByteBuffer buf off nbytes]
               (case kind
                 :double (Arena/readDoubles buf (long off) (int n))
                 :int (Arena/readInts buf (long off) (int n))
                 :raw (Arena/readBytes buf (long off) (int nbytes))))]
    (if (direct conn)
      (let [buf (direct-view conn id dtype)]
        (read buf 0 (.capacity buf)))
      (locking (:arena conn)
        (let [[off nbytes path size] (call conn "nd.read" [id dtype 0 n false])]
          (read (arena-buffer conn path size) off nbytes))))))

(defn write-floats
  "COPIES `data` (float[]) into the arena's data area and runs `op` with
   `args`, which reads it on the engine side (e.g. nd.from_arena); returns
   op's result."
  [conn ^floats data op args]
  (locking (:arena conn)
    (let [buf (ensure-arena conn (* 4 (alength data)))]
      (Arena/writeFloats buf (header conn) data 0 (alength data))
      (call conn op args))))

(defn float-vector
  "A Clojure vector over `data` (float[], owned by the vector from now on)."
  [^floats data]
  (FloatVector. data))

(def ^:private region-min-bytes
  "Vectors at least this large own a region of shared memory instead of a
   float[]."
  (bit-shift-left 1 20))

(defn- engine-done?
  "True when the call that failed with `e` can no longer write: the engine
   returned an error as data (the call finished), the engine is dead, or the
   call never started and never will (:may-have-run false)."
  [e]
  (let [d (ex-data e)]
    (boolean (or (:python-class d) (= :engine-dead (:type d)) (false? (:may-have-run d))))))

(defn read-vec
  "The `n` elements of array `id` (converted to float32) as a FloatVector.
   Below 1 MiB the vector owns a float[] copied out of the arena
   (`read-floats`); from 1 MiB on it owns a region of the engine's region
   file: the engine copies the array into a region this side allocated, and
   the vector is a read-only view of it (no JVM copy), freed when the vector
   is garbage-collected. When the region space is full (see `regions`) it
   falls back to the copy."
  [conn id n]
  (let [n (int n)
        nbytes (* 4 (long n))
        ^Regions r (:regions conn)
        off (if (and r (>= nbytes (long region-min-bytes))) (.allocate r nbytes) -1)]
    (if (neg? off)
      (FloatVector. ^floats (read-floats conn id n))
      (let [done? (volatile! false)]
        (try
          (let [[_ path size] (try
                                (call conn "nd.read_region" [id off (.capacity r)])
                                (catch clojure.lang.ExceptionInfo e
                                  (vreset! done? (engine-done? e))
                                  (throw e)))]
            (vreset! done? true)
            (refusing-unsafe-files
             (.vector r ^Mapper (:mapper conn) ^String path (long size) off n)))
          (catch Throwable e
            ;; A region is returned only once the engine is known to be done
            ;; with it; after a timeout it may still write there, so it stays
            ;; allocated (leaks) rather than be handed to another vector.
            (when @done? (.free r off nbytes))
            (throw e)))))))

(defn region-stats
  "The region allocator's counters for `conn` (default: the default
   connection): :live bytes, :top, :extent, :gc-at, :cap, :mapped,
   :allocations, :reused, :frees, :collections, :free-blocks."
  ([] (region-stats (connection)))
  ([conn] (into {} (map (fn [[k v]] [(keyword k) v])) (.stats ^Regions (:regions conn)))))

;;; ------------------------------------------------------------------ shared memory

(defn share
  "SHARES the memory of CPU array `id`: a native-order ByteBuffer over the
   engine array's own bytes, so that a write on either side is seen on the
   other, without a copy. Over JPype any dense CPU array; across processes
   (Py4J) only arrays made in shared memory (`nd.create_shared`), whose file
   this JVM maps. The buffer stays valid after the array is dropped."
  ^ByteBuffer [conn id]
  (if-let [^DirectEngine e (direct conn)]
    (try
      (.order (.share e (long id)) (java.nio.ByteOrder/nativeOrder))
      (catch Exception ex
        (throw (direct-error conn "nd.share" ex))))
    (let [[path off nbytes] (call conn "nd.share" [id])
          ^ByteBuffer m (refusing-unsafe-files
                         (.map Mapper/FILES ^String path (+ (long off) (long nbytes))))]
      (-> m
          (.slice (int off) (int nbytes))
          (.order (java.nio.ByteOrder/nativeOrder))))))
