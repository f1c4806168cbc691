(ns org.apache.clojure-mxnet.bridge.data
  "The data plane: array contents cross between the JVM and the engine
   through the engine's shared memory, never through a control call's JSON.

   Over Py4J, through the arena (one /dev/shm file: the engine copies into
   it and the JVM bulk-copies out, or the reverse; large reads are
   followed, the JVM copying out while the engine copies in) and the region
   space (a large `read-vec` result *owns* the region the engine copied
   into: no JVM copy, freed when the vector is garbage-collected). Over
   JPype, through direct buffers over the engine's own memory. `share` is
   the one function that SHARES memory with an engine array; the others COPY."
  (:require [org.apache.clojure-mxnet.bridge.calls :as calls]
            [org.apache.clojure-mxnet.bridge.connection :as connection]
            [org.apache.clojure-mxnet.bridge.errors :as errors])
  (:import (java.nio ByteBuffer)
           (java.util.concurrent Callable ExecutorService Executors ThreadFactory)
           (org.apache.clojure_mxnet.bridge Arena DirectEngine FloatVector Mapper Regions)))

(set! *warn-on-reflection* true)

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
      (let [[path size] (calls/call conn "arena" [need])]
        (arena-buffer conn path size)))))

(defn- read-floats-followed
  "Copies floats [start, start+cnt) of array `id` into dst[start..]: the
   engine call runs on another thread and publishes its progress; this
   thread allocates nothing and copies each chunk as it lands."
  [conn id ^floats dst start cnt]
  (let [buf (ensure-arena conn (* 4 (long cnt)))
        _ (Arena/resetProgress buf)
        fut (.submit call-pool ^Callable (fn [] (calls/call conn "nd.read" [id "float32" start cnt true])))]
    (try
      (Arena/followFloats buf (header conn) dst (int start) (int cnt) fut)
      (catch InterruptedException e
        (.cancel fut true)
        (throw e)))))

(declare read-floats-shm)

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
        (throw (errors/direct-error conn "nd.view" ex))))))

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
              fut (.submit call-pool ^Callable (fn [] (calls/call conn "nd.read" [id "float32" 0 first-cnt true])))
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
                    [off _ path size] (calls/call conn "nd.read" [id "float32" start cnt false])]
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
        (let [[off nbytes path size] (calls/call conn "nd.read" [id dtype 0 n false])]
          (read (arena-buffer conn path size) off nbytes))))))

(defn write-floats
  "COPIES `data` (float[]) into the arena's data area and runs `op` with
   `args`, which reads it on the engine side (e.g. nd.from_arena); returns
   op's result."
  [conn ^floats data op args]
  (locking (:arena conn)
    (let [buf (ensure-arena conn (* 4 (alength data)))]
      (Arena/writeFloats buf (header conn) data 0 (alength data))
      (calls/call conn op args))))

(defn float-vector
  "A Clojure vector over `data` (float[], owned by the vector from now on)."
  [^floats data]
  (FloatVector. data))

(def ^:private region-min-bytes
  "Vectors at least this large own a region of shared memory instead of a
   float[]."
  (bit-shift-left 1 20))

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
                                (calls/call conn "nd.read_region" [id off (.capacity r)])
                                (catch clojure.lang.ExceptionInfo e
                                  (vreset! done? (errors/engine-done? e))
                                  (throw e)))]
            (vreset! done? true)
            (errors/refusing-unsafe-files
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
  ([] (region-stats (connection/connection)))
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
        (throw (errors/direct-error conn "nd.share" ex))))
    (let [[path off nbytes] (calls/call conn "nd.share" [id])
          ^ByteBuffer m (errors/refusing-unsafe-files
                         (.map Mapper/FILES ^String path (+ (long off) (long nbytes))))]
      (-> m
          (.slice (int off) (int nbytes))
          (.order (java.nio.ByteOrder/nativeOrder))))))
