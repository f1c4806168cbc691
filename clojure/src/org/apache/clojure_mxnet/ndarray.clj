(ns org.apache.clojure-mxnet.ndarray
  "NDArray API for Clojure package.

   An NDArray here is a handle to an array living in the Python engine, with
   its shape, dtype and context cached on the JVM (asking them costs nothing).
   Every call is synchronous: it returns once the engine has done the work,
   so `wait-to-read` and `waitall` have nothing to wait for on a CPU.
   Operators run in the engine and return new arrays (`+=` and the other
   `...=` functions write into their first argument). `->vec` and its
   siblings COPY the contents out (through shared memory); `array`, `set`
   and `->ndarray` COPY them in; `slice`, `at` and `reshape` share memory
   with their source.

   Disposal is optional: the engine's array is freed when the NDArray is
   garbage-collected, or at once by `dispose` (or `.close`: an NDArray is
   AutoCloseable, so `with-open` works; closing twice does nothing),
   `dispose-deps` or a closing `org.apache.clojure-mxnet.resource-scope`.

   This file holds the NDArray type, creation and lifetimes; contents,
   copies and files are in ndarray_data.clj, the hand-written operators in
   ndarray_operators.clj, and the functions generated from the engine's
   operator table (`operator-specs`, see docs/clojure-api.md) in
   ndarray_generated.clj (same namespace)."
  (:refer-clojure :exclude [* - + > >= < <= / abs cast concat flatten identity load max
                            min repeat reverse set sort take to-array empty shuffle
                            ref])
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.spec.alpha :as s]
            [clojure.string :as string]
            [org.apache.clojure-mxnet.base :as base]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.context :as mx-context]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.resource-scope :as resource-scope]
            [org.apache.clojure-mxnet.shape :as mx-shape]
            [org.apache.clojure-mxnet.util :as util])
  (:import (java.lang.ref WeakReference)
           (java.util Base64 IdentityHashMap)
           (org.apache.clojure_mxnet.bridge Handles$Handle)
           (java.util.function BiPredicate)
           (org.apache.clojure_mxnet.context Context)
           (org.apache.clojure_mxnet.ndarray NDArray)))

(set! *warn-on-reflection* true)

;;; ------------------------------------------------------------------ the type

;; NDArray is a JVM class (org.apache.clojure_mxnet.ndarray.NDArray), so
;; arrays made before any namespace is reloaded stay usable and accepted by
;; the specs; it is AutoCloseable (close = dispose, idempotent). Its fields:
;; conn, handle, shape (a vector of ints), dtype, ctx, stype, and deps, this
;; array's dependency node: an atom of {:direct {id WeakReference} :from
;; [node ...]}, the arrays an operator read to make this one and the nodes of
;; those arrays at that moment (see `dependencies`).

(defn ->NDArray
  "The NDArray over engine handle `handle` (see `wrap`, which makes them)."
  [conn handle shape dtype ctx stype deps]
  (NDArray. conn handle shape dtype ctx stype deps))

;; clojure-mxnet's NDArray equality: same shape, same elements read as
;; float32, compared in the engine (no contents cross to the JVM).
(set! NDArray/contentsEqual
      (reify BiPredicate
        (test [_ a b]
          (boolean (bridge/call (.-conn ^NDArray a) "nd.equal"
                                [(.id ^Handles$Handle (.-handle ^NDArray a))
                                 (.id ^Handles$Handle (.-handle ^NDArray b))])))))

(defmethod print-method NDArray [a ^java.io.Writer w]
  (.write w (str "#<" a ">")))

(defn ndarray?
  "True for an NDArray."
  [x]
  (instance? NDArray x))

(s/def ::ndarray ndarray?)
(s/def ::vector vector?)
(s/def ::sequential sequential?)
(s/def ::shape-vec (s/coll-of nat-int? :kind sequential?))
(s/def ::ctx #(instance? Context %))
(s/def ::number number?)
(s/def ::num-or-ndarray (s/or :number number? :ndarray ::ndarray))

(defn- check-ndarray [x what]
  (when-not (instance? NDArray x)
    (util/invalid! (str what " must be an NDArray, got " (if (nil? x) "nil" (.getName (class x))))
                   {:value x})))

(defn- hid
  "The engine id of NDArray `a`; ex-info :invalid-argument for a non-array,
   :disposed for a disposed one."
  ^long [a]
  (check-ndarray a "the array")
  (bridge/handle-id (.-handle ^NDArray a) "NDArray"))

(def ^:private itemsize
  {"uint8" 1 "int8" 1 "float16" 2 "int32" 4 "float32" 4 "int64" 8 "float64" 8})

(defn- engine-bytes
  "The engine memory of a dense array of `shape` and dtype `dt` (a name):
   what its handle accounts for (a row_sparse array counts as dense)."
  ^long [shape dt]
  (loop [n (long (get itemsize dt 8)) s (seq shape)]
    (if s (recur (clojure.core/* n (long (first s))) (next s)) n)))

(defn wrap
  "The NDArray for an engine result `meta`: [id shape dtype dev-type dev-id stype].
   It belongs to this thread's open resource scope, if any."
  [conn [h shape dt dev-type dev-id stype]]
  (let [a (bridge/tracked conn h
                          (fn [handle]
                            (NDArray. conn handle (mapv int shape) (dtype/->dtype dt)
                                      (mx-context/->Context dev-type (long dev-id))
                                      (or stype "default")
                                      (atom {:direct {} :from []})))
                          (engine-bytes shape dt))]
    (resource-scope/track! a (.-handle ^NDArray a))))

(defn- conn-of [a]
  (check-ndarray a "the array")
  (.-conn ^NDArray a))

(defn- ctx-args [^Context ctx]
  [(mx-context/device-type ctx) (mx-context/device-id ctx)])

(defn- dtype-name [d] (str (dtype/->dtype d)))

(defn- dims
  "The dimensions of `shape-vec` (a vector of non-negative ints or a Shape)."
  [shape-vec]
  (if (instance? org.apache.clojure_mxnet.shape.Shape shape-vec)
    (mx-shape/->vec shape-vec)
    (do (util/validate! ::shape-vec shape-vec "Invalid shape")
        (mapv long shape-vec))))

(defn- create [kind shape-vec ctx dt value]
  (util/validate! ::ctx ctx "Invalid context")
  (let [shape (dims shape-vec)
        conn (bridge/connection)]
    (wrap conn (bridge/call conn "nd.create"
                            (into [kind shape]
                                  (clojure.core/concat (ctx-args ctx) [(dtype-name dt) value]))))))

;;; ------------------------------------------------------------------ dependencies

(defn- record-deps!
  "Notes that operator result `out` was made from arrays `ins` (as
   clojure-mxnet did): each input and, transitively, what it came from."
  [^NDArray out ins]
  (let [ins (filter ndarray? ins)]
    (when (seq ins)
      (reset! (.-deps out)
              {:direct (into {} (map (fn [^NDArray a] [(.id ^Handles$Handle (.-handle a)) (WeakReference. a)]))
                             ins)
               :from (mapv (fn [^NDArray a] @(.-deps a)) ins)})))
  out)

(defn dependencies
  "The arrays an operator read to make `ndarray`, and what those were made
   from, transitively: a map from engine handle id to a
   java.lang.ref.WeakReference of the array (cleared once it is collected).
   Arrays from creation functions, copies and views have none."
  [ndarray]
  (check-ndarray ndarray "the array")
  (let [seen (IdentityHashMap.)]
    (loop [todo [@(.-deps ^NDArray ndarray)] acc {}]
      (if-let [node (peek todo)]
        (if (.containsKey seen node)
          (recur (pop todo) acc)
          (do (.put seen node true)
              (recur (into (pop todo) (:from node)) (merge acc (:direct node)))))
        acc))))

(defn dispose
  "Releases the engine's array now (the GC would, later). Using it
   afterwards throws ex-info {:type :disposed}; disposing it again does
   nothing. Arrays it was made from are not disposed (see `dispose-deps`)."
  [ndarray]
  (check-ndarray ndarray "the array")
  (.dispose ^Handles$Handle (.-handle ^NDArray ndarray))
  nil)

(defn dispose-deps-except
  "Disposes the arrays `ndarray` was made from (see `dependencies`), except
   `ndarrays` and what they were made from; forgets the disposed ones and
   returns `ndarray`.
   Ex: (dispose-deps-except (+ (* a b) c) a b) disposes c and a*b."
  [ndarray & ndarrays]
  (check-ndarray ndarray "the array")
  (doseq [a ndarrays] (check-ndarray a "an array to keep"))
  (let [excepts (into #{} (mapcat (fn [^NDArray a]
                                    (cons (.id ^Handles$Handle (.-handle a)) (keys (dependencies a)))))
                      ndarrays)
        deps (dependencies ndarray)
        kept (into {} (filter (fn [[id _]] (contains? excepts id))) deps)]
    (doseq [[id ^WeakReference r] deps
            :when (not (contains? excepts id))
            :let [a (.get r)]
            :when a]
      (dispose a))
    (reset! (.-deps ^NDArray ndarray) {:direct kept :from []})
    ndarray))

(defn dispose-deps
  "Disposes every array `ndarray` was made from (see `dependencies`), which
   keeps only its own memory; returns `ndarray`.
   Ex: (dispose-deps (+ (* a b) c)) disposes a, b, c and a*b."
  [ndarray]
  (dispose-deps-except ndarray))

;;; ------------------------------------------------------------------ creation

(defn empty
  "A new array of shape `shape-vec` (dims, e.g. [2 3], or a Shape) whose
   contents are unspecified until written.
   opts: {:ctx a Context (default cpu(0)), :dtype (default float32)}"
  ([shape-vec {:keys [ctx dtype]
               :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (create "empty" shape-vec ctx dtype nil))
  ([shape-vec]
   (empty shape-vec {})))

(defn zeros
  "A new array of shape `shape-vec` (e.g. [2 3]) holding 0s.
   opts: {:ctx a Context (default cpu(0)), :dtype (default float32)}"
  ([shape-vec {:keys [ctx dtype]
               :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (create "zeros" shape-vec ctx dtype nil))
  ([shape-vec]
   (zeros shape-vec {})))

(defn ones
  "A new array of shape `shape-vec` (e.g. [2 3]) holding 1s.
   opts: {:ctx a Context (default cpu(0)), :dtype (default float32)}"
  ([shape-vec {:keys [ctx dtype]
               :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (create "ones" shape-vec ctx dtype nil))
  ([shape-vec]
   (ones shape-vec {})))

(defn full
  "A new array of shape `shape-vec` with every element `value` (a number).
   opts: {:ctx a Context (default cpu(0)), :dtype (default float32)}"
  ([shape-vec value {:keys [ctx dtype]
                     :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (util/validate! ::number value "Invalid value")
   (create "full" shape-vec ctx dtype value))
  ([shape-vec value]
   (full shape-vec value {})))

(defn- float-data
  "`source` (a float[], or a sequential collection of numbers) as a float[]."
  ^floats [source what]
  (cond
    (instance? (Class/forName "[F") source) source
    (instance? (Class/forName "[D") source) (float-array source)
    (sequential? source)
    (let [v (vec source)
          i (long (loop [i 0] (cond (== i (count v)) -1
                                    (number? (nth v i)) (recur (inc i))
                                    :else i)))]
      (when-not (neg? i)
        (util/invalid! (str what " must hold numbers only; element " i " is "
                            (pr-str (nth v i)) (some->> (nth v i) class .getName (str ", a ")))
                       {:value (nth v i) :index i}))
      (float-array v))
    :else (util/invalid! (str what " must be a vector of numbers or a float array, got "
                              (if (nil? source) "nil" (.getName (class source))))
                         {:value source})))

(defn array
  "A new array of shape `shape-vec` holding a COPY of `source-vec` (numbers
   in row-major order: a vector or a float array, exactly as many as the
   shape has elements).
   opts: {:ctx a Context (default cpu(0)), :dtype (default float32)}"
  ([source-vec shape-vec {:keys [ctx dtype]
                          :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (util/validate! ::ctx ctx "Invalid context")
   (let [shape (dims shape-vec)
         data (float-data source-vec "the source")]
     (when-not (== (alength data) (long (reduce clojure.core/* 1 shape)))
       (util/invalid! (str "source has " (alength data) " elements but shape " shape " needs "
                           (reduce clojure.core/* 1 shape))
                      {:shape shape :count (alength data)}))
     (let [conn (bridge/connection)]
       (wrap conn (bridge/write-floats conn data "nd.from_arena"
                                       (into ["float32" shape] (conj (ctx-args ctx) (dtype-name dtype))))))))
  ([source-vec shape-vec]
   (array source-vec shape-vec {})))

(defn arange
  "A new 1-d array of the numbers start, start+step, ... below `stop`, each
   repeated `repeat` times: (arange 0 3) is [0.0 1.0 2.0].
   opts: {:step 1, :repeat 1, :ctx a Context, :dtype (default float32)}"
  ([start stop {:keys [step repeat ctx dtype]
                :or {step 1.0 repeat 1 ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (let [conn (bridge/connection)]
     (wrap conn (bridge/call conn "nd.arange"
                             (into [(double start) (double stop) (double step) (long repeat)]
                                   (conj (ctx-args ctx) (dtype-name dtype)))))))
  ([start stop]
   (arange start stop {})))

(defn ->ndarray
  "A new array holding a COPY of `nd-vec`, nested vectors of numbers whose
   nesting gives the shape: [[1 2 3] [4 5 6]] has shape [2 3].
   opts: {:ctx a Context (default cpu(0)), :dtype (default float32)}
   Ex: (->ndarray [5.0 -4.0]), (->ndarray [[[1.0] [2.0]]]) of shape [1 2 1]"
  ([nd-vec {:keys [ctx dtype]
            :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (array (vec (clojure.core/flatten nd-vec))
          (util/nd-seq-shape nd-vec)
          {:ctx ctx :dtype dtype}))
  ([nd-vec] (->ndarray nd-vec {})))

;;; ------------------------------------------------------------------ properties

(defn shape
  "The array's Shape (see org.apache.clojure-mxnet.shape), e.g. (2,3)."
  [ndarray]
  (check-ndarray ndarray "the array")
  (mx-shape/->shape (.-shape ^NDArray ndarray)))

(defn shape-vec
  "The array's dimensions as a vector of ints, e.g. [2 3]."
  [ndarray]
  (check-ndarray ndarray "the array")
  (.-shape ^NDArray ndarray))

(defn- element-count ^long [^NDArray a]
  (long (reduce clojure.core/* 1 (.-shape a))))

(defn size
  "Number of elements of an NDArray (an int). Given the map `dependencies`
   returns, the number of arrays in it (clojure-mxnet's size called the
   size method of whatever it was given)."
  [ndarray]
  (if (instance? NDArray ndarray)
    (let [n (element-count ndarray)]
      (if (clojure.core/<= n Integer/MAX_VALUE) (int n) n))
    (int (count ndarray))))

(defn context
  "The Context the array lives in, e.g. cpu(0)."
  [ndarray]
  (check-ndarray ndarray "the array")
  (.-ctx ^NDArray ndarray))

(defn dtype
  "The element type: a DType (see org.apache.clojure-mxnet.dtype), equal to
   dtype/FLOAT32 and so on; (str (dtype a)) is e.g. \"float32\"."
  [ndarray]
  (check-ndarray ndarray "the array")
  (.-dtype ^NDArray ndarray))

(defn stype
  "Storage type: \"default\" (dense) or \"row_sparse\"."
  [ndarray]
  (check-ndarray ndarray "the array")
  (.-stype ^NDArray ndarray))

(defn handle
  "The engine's id for this array (a long), the key of `dependencies`."
  [ndarray]
  (hid ndarray))

(defn is-disposed
  "True once the array was disposed (by `dispose`, `dispose-deps` or a
   resource scope)."
  [ndarray]
  (check-ndarray ndarray "the array")
  (.isReleased ^Handles$Handle (.-handle ^NDArray ndarray)))

(defn wait-to-read
  "Returns once pending writes to the array are done. Calls are synchronous
   in mxkv, so this waits only for GPU work queued on the array's device."
  [ndarray]
  (bridge/call (conn-of ndarray) "nd.wait_to_read" [(hid ndarray)])
  nil)

(defn waitall
  "Returns once all pending work of the engine is done (GPU streams; CPU
   work is already done when each call returns)."
  []
  (bridge/call (bridge/connection) "nd.waitall" [])
  nil)

;;; ------------------------------------------------------------------ contents, copies, files

(clojure.core/load "ndarray_data")

;;; ------------------------------------------------------------------ operators

(clojure.core/load "ndarray_operators")

;;; ------------------------------------------------------------------ the calls other namespaces use
;; operator-call (ndarray-api, ndarray-random-api) and random-call (random).

(clojure.core/load "ndarray_training_ops")

;;; ------------------------------------------------------------------ generated operators
;; every operator of the engine's table, as clojure-mxnet names it (last:
;; a name defined by hand above keeps its own function).

(clojure.core/load "ndarray_generated")
