(ns org.apache.clojure-mxnet.bridge
  "The Clojure API's one door to the Python engine.

   Every namespace of the API calls the engine through this one, and this one
   only through `org.apache.clojure_mxnet.bridge.Engine`: a connection is a
   map holding an Engine plus what its transport provides (is the engine
   alive, the shared-memory arena, how to close it). The default transport is
   Py4J with the JVM first (`start-py4j`); a connection from any other
   transport can be installed with `use-connection!`.

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
           (java.util.concurrent Callable ExecutorService Executors ThreadFactory)
           (java.net SocketTimeoutException)
           (org.apache.clojure_mxnet.bridge Arena Engine FloatVector Handles Handles$Handle Json
                                            Py4JTransport Regions)))

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

(defn- env-long [name default]
  (let [v (System/getenv name)]
    (if (str/blank? v) default (long (Double/parseDouble v)))))

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

(defn python-command
  "The engine's interpreter: `MXKV_PYTHON`, else the project's .venv, else python3."
  []
  (or (not-empty (System/getenv "MXKV_PYTHON"))
      (when-let [root (project-root)]
        (let [py (io/file root ".venv" "bin" "python")]
          (when (.canExecute py) (.getPath py))))
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
           {:type (kebab-keyword (:type m))
            :python-class (:python_class m)
            :traceback (:traceback m)
            :op op}))

(defn- caused-by? [^Throwable e klass]
  (loop [e e]
    (cond (nil? e) false
          (instance? klass e) true
          :else (recur (.getCause e)))))

(defn- transport-error [conn op ^Throwable e]
  (let [alive? ((:alive? conn))
        pid (:pid conn)]
    (cond
      (not alive?)
      (ex-info (str "the mxkv engine (pid " pid ") is not running"
                    (when-let [c ((:exit-code conn))] (str " (exit code " c ")"))
                    "; " op " could not run. Objects from that engine are gone; "
                    "(org.apache.clojure-mxnet.bridge/restart!) starts a new engine.")
               {:type :engine-dead :op op :pid pid :exit-code ((:exit-code conn))} e)

      (caused-by? e SocketTimeoutException)
      (ex-info (str "the mxkv engine (pid " pid ") did not answer " op " within "
                    (:timeout-ms conn) " ms: it is frozen or overloaded (MXKV_CALL_TIMEOUT_MS)")
               {:type :engine-timeout :op op :pid pid :timeout-ms (:timeout-ms conn)} e)

      :else
      (ex-info (str "cannot reach the mxkv engine (pid " pid ") for " op ": " (.getMessage e))
               {:type :engine-unreachable :op op :pid pid} e))))

;;; ------------------------------------------------------------------ connections

(defn- regions
  "The allocator of region-backed vectors for an engine with `info`: a GC
   runs before the region space grows past MXKV_REGIONS_GC_MB (default 512,
   but at most an eighth of the shared-memory file system); it holds at most
   MXKV_REGIONS_MAX_MB (default 2047, the limit of one mapping, but at most
   half the file system; 0 turns region-backed vectors off)."
  ^Regions [info]
  (let [shm (long (or (:shm_bytes info) 0))
        mb (fn [name ^long default ^long shm-share]
             (let [v (System/getenv name)]
               (if (str/blank? v)
                 (cond-> (* default 1024 1024) (pos? shm) (min (quot shm shm-share)))
                 (* (long (Double/parseDouble v)) 1024 1024))))]
    (Regions. (mb "MXKV_REGIONS_GC_MB" 512 8) (mb "MXKV_REGIONS_MAX_MB" 2047 2))))

(defn connect
  "A connection over `engine` (an org.apache.clojure_mxnet.bridge.Engine).
   `transport` keys: :alive? (fn [] bool), :exit-code (fn [] int|nil),
   :close (fn []), :map-arena (fn [path size] ByteBuffer), :pid, :timeout-ms."
  [^Engine engine transport]
  (let [info (Json/parse (.info engine))
        arena (Arena.)
        conn (merge {:alive? (constantly true) :exit-code (constantly nil) :close (fn [])
                     :map-arena (fn [path size] (.buffer arena path size))}
                    transport
                    {:engine engine :handles (Handles. engine) :arena arena :info info
                     :regions (regions info)
                     :pid (or (:pid transport) (:pid info))})]
    ((:map-arena conn) (:arena info) (:arena_size info))
    conn))

(defn start-py4j
  "Starts an engine over Py4J (JVM first) and returns its connection.
   Options: :python (interpreter), :call-timeout-ms, :start-timeout-ms, :env."
  ([] (start-py4j {}))
  ([{:keys [python call-timeout-ms start-timeout-ms env]
     :or {call-timeout-ms (env-long "MXKV_CALL_TIMEOUT_MS" 60000)
          start-timeout-ms (env-long "MXKV_START_TIMEOUT_MS" 60000)}}]
   (let [cmd [(or python (python-command)) "-m" "mxkv.bridge"]
         ^Py4JTransport t (try
                            (Py4JTransport/start cmd (merge (engine-env) env)
                                                 (long start-timeout-ms) (int call-timeout-ms))
                            (catch IllegalStateException e
                              (throw (ex-info (.getMessage e) {:type :engine-start-failed
                                                               :command cmd} e))))]
     (connect (.engine t)
              {:alive? #(.isAlive t)
               :exit-code #(.exitCode t)
               :close #(.close t)
               :pid (.pid t)
               :timeout-ms call-timeout-ms
               :transport t}))))

(defonce ^:private current (atom nil))

(defn connection
  "The default connection, started on first use."
  []
  (or @current
      (locking current
        (or @current
            (reset! current (start-py4j))))))

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
  "Runs engine operation `op` with JSON text `args`; returns the parsed result."
  [conn ^String op ^String args]
  (let [^Engine e (:engine conn)
        ^String r (try
                    (.call e op args)
                    (catch Exception ex
                      (throw (util/at-caller (transport-error conn op ex)))))]
    (if (nil? r)
      (throw (util/at-caller (transport-error conn op (IllegalStateException. "no answer"))))
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
   Clojure object is garbage-collected or its handle disposed."
  [conn id ctor]
  (let [^Handles$Handle h (.handle ^Handles (:handles conn) (long id))
        obj (ctor h)]
    (.attach h obj)
    obj))

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

(defn read-floats
  "COPIES `n` elements of array `id` out of the engine as a new float[]
   (converting from the array's dtype); chunked through the arena. Large
   reads are followed: the JVM copies out while the engine copies in."
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
  (locking (:arena conn)
    (let [[off nbytes path size] (call conn "nd.read" [id (case kind :double "float64" :int "int32" :raw "raw") 0 n false])
          buf (arena-buffer conn path size)]
      (case kind
        :double (Arena/readDoubles buf (long off) (int n))
        :int (Arena/readInts buf (long off) (int n))
        :raw (Arena/readBytes buf (long off) (int nbytes))))))

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
   returned an error as data (the call finished), or the engine is dead."
  [e]
  (let [d (ex-data e)]
    (boolean (or (:python-class d) (= :engine-dead (:type d))))))

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
            (.vector r ^String path (long size) off n))
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
