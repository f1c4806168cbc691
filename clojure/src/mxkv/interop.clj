(ns mxkv.interop
  "One live store, two languages: objects handed between a Python program
   and Clojure, and array memory both sides share.

   A Python program that hosts this JVM (JPype: `mxkv.jvm.publish`) or
   serves it (Py4J: `mxkv.bridge.serve().publish`) names its NDArrays and
   KVStores; `published` gives the Clojure object for one: a handle to the
   same engine object, so a push from Clojure is seen by the Python loop's
   next pull, and an in-place change on either side is the same memory.

   Copy or share, explicitly: `ndarray/->vec` COPIES; `as-buffer` SHARES
   (a ByteBuffer over the array's own bytes: a write on either side is seen
   on the other)."
  (:require [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray])
  (:import (java.nio ByteBuffer FloatBuffer)
           (org.apache.clojure_mxnet.bridge Json)
           (org.apache.clojure_mxnet.kvstore KVStore)
           (org.apache.clojure_mxnet.ndarray NDArray)))

(set! *warn-on-reflection* true)

(defn wrap
  "The Clojure object for an engine object described by `desc` (a map with
   :kind \"ndarray\" and :meta, or :kind \"kvstore\", :id and :type) on
   connection `conn`."
  [conn desc]
  (case (:kind desc)
    "ndarray" (ndarray/wrap conn (:meta desc))
    "kvstore" (bridge/tracked conn (:id desc) #(KVStore. conn % (:type desc)))
    (throw (ex-info (str "cannot wrap an engine object of kind " (pr-str (:kind desc)))
                    {:type :invalid-argument :desc desc}))))

(defn wrap-json
  "`wrap` over the default connection, with `desc` as JSON text (what a
   hosting Python process sends)."
  [^String desc]
  (wrap (bridge/connection) (Json/parse desc)))

(defn published
  "The NDArray or KVStore the Python program published as `name` (a string)
   on `conn` (default: the default connection): the same engine object, not
   a copy."
  ([name] (published (bridge/connection) name))
  ([conn name]
   (wrap conn (bridge/call conn "obj.published" [name]))))

(defn published-names
  "The names the Python program published."
  ([] (published-names (bridge/connection)))
  ([conn] (bridge/call conn "obj.names")))

(defn- conn-and-id [x]
  (cond
    (instance? NDArray x) [(.-conn ^NDArray x) (ndarray/handle x)]
    (instance? KVStore x) [(.-conn ^KVStore x)
                           (bridge/handle-id (.-handle ^KVStore x) "KVStore")]
    :else (throw (ex-info (str "not an NDArray or KVStore: " (class x))
                          {:type :invalid-argument :value x}))))

(defn engine-ref
  "Which engine object `x` (an NDArray or KVStore) is: {:engine <the
   engine's :engine_id, JPype only> :id <handle id>}, as JSON text, for the
   hosting Python process to find the object behind it."
  ^String [x]
  (let [[conn id] (conn-and-id x)]
    (bridge/->json {:engine (get-in conn [:info :engine_id]) :id id})))

(defn as-buffer
  "SHARES `nd`'s memory: a native-order ByteBuffer over the engine array's
   own bytes (no copy; a write on either side is seen on the other). Over
   JPype any dense CPU array; across processes (Py4J) only arrays made with
   `shared-array`. The buffer stays valid after `nd` is dropped."
  ^ByteBuffer [nd]
  (let [[conn id] (conn-and-id nd)]
    (bridge/share conn id)))

(defn as-float-buffer
  "`as-buffer` of a float32 array, as a FloatBuffer (shares, as `as-buffer`)."
  ^FloatBuffer [nd]
  (when-not (= "float32" (name (ndarray/dtype nd)))
    (throw (ex-info (str "as-float-buffer needs a float32 array, not " (name (ndarray/dtype nd)))
                    {:type :invalid-argument :dtype (ndarray/dtype nd)})))
  (.asFloatBuffer (as-buffer nd)))

(defn shared-array
  "A zero-filled array on cpu_shared(0) whose memory this JVM can share
   (`as-buffer`) even when the engine is another process (Py4J): it lives in
   a shared-memory file. `dtype` defaults to :float32."
  ([shape] (shared-array shape :float32))
  ([shape dtype]
   (let [conn (bridge/connection)]
     (ndarray/wrap conn (bridge/call conn "nd.create_shared" [(vec shape) (name dtype)])))))
