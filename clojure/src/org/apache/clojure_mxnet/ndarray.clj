(ns org.apache.clojure-mxnet.ndarray
  "NDArray API for Clojure package.

   An NDArray here is a handle to an array living in the Python engine, with
   its shape, dtype and context cached on the JVM (asking them costs nothing).
   Arithmetic runs in the engine. `->vec` and its siblings COPY the contents
   out (through shared memory); `array` and `->ndarray` COPY them in. The
   engine's array is freed when the NDArray is garbage-collected or
   `dispose`d."
  (:refer-clojure :exclude [* - + > >= < <= / cast concat flatten identity load max
                            min repeat reverse set sort take to-array empty shuffle
                            ref])
  (:require [clojure.spec.alpha :as s]
            [org.apache.clojure-mxnet.base :as base]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.context :as mx-context]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.shape :as mx-shape]
            [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.bridge Handles$Handle)
           (org.apache.clojure_mxnet.context Context)))

(set! *warn-on-reflection* true)

(deftype NDArray [conn ^Handles$Handle handle shape dtype ctx stype]
  Object
  (equals [this o]
    (or (identical? this o)
        (and (instance? NDArray o)
             (= shape (.-shape ^NDArray o))
             (= dtype (.-dtype ^NDArray o))
             (boolean (bridge/call conn "nd.equal"
                                   [(bridge/handle-id handle "NDArray")
                                    (bridge/handle-id (.-handle ^NDArray o) "NDArray")])))))
  (hashCode [_] (hash [shape dtype]))
  (toString [_]
    (str "NDArray " shape " " (name dtype) " " ctx
         (when-not (= "default" stype) (str " " stype))
         (when (.isReleased handle) " disposed"))))

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

(defn- hid ^long [^NDArray a]
  (bridge/handle-id (.-handle a) "NDArray"))

(defn wrap
  "The NDArray for an engine result `meta`: [id shape dtype dev-type dev-id stype]."
  [conn [h shape dt dev-type dev-id stype]]
  (bridge/tracked conn h
                  (fn [handle]
                    (NDArray. conn handle (vec shape) (keyword dt)
                              (mx-context/->Context dev-type (long dev-id))
                              (or stype "default")))))

(defn- conn-of [^NDArray a] (.-conn a))

(defn- ctx-args [^Context ctx]
  [(mx-context/device-type ctx) (mx-context/device-id ctx)])

(defn- dtype-name [d] (name (dtype/->dtype d)))

(defn- create [kind shape-vec ctx dt value]
  (util/validate! ::shape-vec (mx-shape/->vec shape-vec) "Invalid shape")
  (util/validate! ::ctx ctx "Invalid context")
  (let [conn (bridge/connection)]
    (wrap conn (bridge/call conn "nd.create"
                            (into [kind (mx-shape/->vec shape-vec)]
                                  (clojure.core/concat (ctx-args ctx) [(dtype-name dt) value]))))))

;;; ------------------------------------------------------------------ creation

(defn empty
  "Create an empty uninitialized new NDArray, with specified shape.
   opts: {:ctx context, :dtype dtype}"
  ([shape-vec {:keys [ctx dtype]
               :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (create "empty" shape-vec ctx dtype nil))
  ([shape-vec]
   (empty shape-vec {})))

(defn zeros
  "Create a new NDArray filled with 0, with specified shape.
   opts: {:ctx context, :dtype dtype}"
  ([shape-vec {:keys [ctx dtype]
               :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (create "zeros" shape-vec ctx dtype nil))
  ([shape-vec]
   (zeros shape-vec {})))

(defn ones
  "Create a new NDArray filled with 1, with specified shape.
   opts: {:ctx context, :dtype dtype}"
  ([shape-vec {:keys [ctx dtype]
               :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (create "ones" shape-vec ctx dtype nil))
  ([shape-vec]
   (ones shape-vec {})))

(defn full
  "Create a new NDArray filled with given value, with specified shape.
   opts: {:ctx context, :dtype dtype}"
  ([shape-vec value {:keys [ctx dtype]
                     :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (util/validate! ::number value "Invalid value")
   (create "full" shape-vec ctx dtype value))
  ([shape-vec value]
   (full shape-vec value {})))

(defn array
  "Create a new NDArray that COPIES content from source vector, with the
   given shape. opts: {:ctx context, :dtype dtype}"
  ([source-vec shape-vec {:keys [ctx dtype]
                          :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (util/validate! ::shape-vec (mx-shape/->vec shape-vec) "Invalid shape")
   (util/validate! ::ctx ctx "Invalid context")
   (let [^floats data (if (instance? (Class/forName "[F") source-vec) source-vec (float-array source-vec))
         shape (mx-shape/->vec shape-vec)]
     (when-not (== (alength data) (mx-shape/product shape))
       (throw (ex-info (str "source has " (alength data) " elements but shape " shape " needs "
                            (mx-shape/product shape))
                       {:type :invalid-argument :shape shape :count (alength data)})))
     (let [conn (bridge/connection)]
       (wrap conn (bridge/write-floats conn data "nd.from_arena"
                                       (into ["float32" shape] (conj (ctx-args ctx) (dtype-name dtype))))))))
  ([source-vec shape-vec]
   (array source-vec shape-vec {})))

(defn arange
  "Returns evenly spaced values within a given interval.
   Values are generated within the half-open interval [`start`, `stop`). In other
   words, the interval includes `start` but excludes `stop`.
   opts: {:step 1, :repeat 1, :ctx context, :dtype dtype}"
  ([start stop {:keys [step repeat ctx dtype]
                :or {step 1.0 repeat 1 ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (let [conn (bridge/connection)]
     (wrap conn (bridge/call conn "nd.arange"
                             (into [(double start) (double stop) (double step) (long repeat)]
                                   (conj (ctx-args ctx) (dtype-name dtype)))))))
  ([start stop]
   (arange start stop {})))

(defn ->ndarray
  "Creates a new NDArray based on the given n-dimenstional vector
   of numbers.
    `nd-vec`: n-dimensional vector with numbers.
    `opts-map` {
       `ctx`: Context of the output ndarray, will use default context if unspecified.
    }
    returns: `ndarray` with the given values and matching the shape of the input vector.
   Ex:
    (->ndarray [5.0 -4.0])
    (->ndarray [5 -4] {:ctx (context/cpu)})
    (->ndarray [[1 2 3] [4 5 6]])
    (->ndarray [[[1.0] [2.0]]]"
  ([nd-vec {:keys [ctx dtype]
            :or {ctx (mx-context/default-context) dtype base/MX_REAL_TYPE}}]
   (array (vec (clojure.core/flatten nd-vec))
          (util/nd-seq-shape nd-vec)
          {:ctx ctx :dtype dtype}))
  ([nd-vec] (->ndarray nd-vec {})))

;;; ------------------------------------------------------------------ properties

(defn shape
  "The array's Shape (see org.apache.clojure-mxnet.shape)."
  [^NDArray ndarray]
  (mx-shape/->shape (.-shape ndarray)))

(defn shape-vec
  "The array's dimensions as a vector, e.g. [2 3]."
  [^NDArray ndarray]
  (.-shape ndarray))

(defn size
  "Number of elements."
  [^NDArray ndarray]
  (reduce clojure.core/* 1 (.-shape ndarray)))

(defn context
  "The Context the array lives in."
  [^NDArray ndarray]
  (.-ctx ndarray))

(defn dtype
  "The element type, e.g. :float32 (see org.apache.clojure-mxnet.dtype)."
  [^NDArray ndarray]
  (.-dtype ndarray))

(defn stype
  "Storage type: \"default\" (dense) or \"row_sparse\"."
  [^NDArray ndarray]
  (.-stype ndarray))

(defn handle
  "The engine's id for this array."
  [^NDArray ndarray]
  (hid ndarray))

(defn is-disposed
  "True once the array was disposed."
  [^NDArray ndarray]
  (.isReleased ^Handles$Handle (.-handle ndarray)))

(defn dispose
  "Release the engine's array now (the GC would, later).
   The object shall never be used after it is disposed."
  [^NDArray ndarray]
  (.dispose ^Handles$Handle (.-handle ndarray))
  nil)

;;; ------------------------------------------------------------------ arithmetic

(defn- binop [op ^NDArray ndarray other]
  (util/validate! ::ndarray ndarray "Invalid ndarray")
  (util/validate! ::num-or-ndarray other "Invalid operand")
  (let [conn (conn-of ndarray)
        args (if (ndarray? other)
               [op (hid ndarray) (hid other) true]
               [op (hid ndarray) other false])
        r (bridge/call conn "nd.binop" args)]
    (if r (wrap conn r) ndarray)))

(defn +
  "Element-wise sum of an NDArray and a number or NDArray: a new NDArray."
  [ndarray num-or-ndarray]
  (binop "+" ndarray num-or-ndarray))

(defn -
  "Element-wise difference: a new NDArray."
  [ndarray num-or-ndarray]
  (binop "-" ndarray num-or-ndarray))

(defn *
  "Element-wise product: a new NDArray."
  [ndarray num-or-ndarray]
  (binop "*" ndarray num-or-ndarray))

(defn div
  "Element-wise quotient: a new NDArray."
  [ndarray num-or-ndarray]
  (binop "/" ndarray num-or-ndarray))

(defn /
  "Element-wise quotient: a new NDArray (same as div)."
  [ndarray num-or-ndarray]
  (div ndarray num-or-ndarray))

(defn +=
  "Adds in place; returns `ndarray`."
  [ndarray num-or-ndarray]
  (binop "+=" ndarray num-or-ndarray))

(defn -=
  "Subtracts in place; returns `ndarray`."
  [ndarray num-or-ndarray]
  (binop "-=" ndarray num-or-ndarray))

(defn *=
  "Multiplies in place; returns `ndarray`."
  [ndarray num-or-ndarray]
  (binop "*=" ndarray num-or-ndarray))

(defn div=
  "Divides in place; returns `ndarray`."
  [ndarray num-or-ndarray]
  (binop "/=" ndarray num-or-ndarray))

;;; ------------------------------------------------------------------ contents out (copies)

(defn to-array
  "COPIES the contents into a new float[] (converted to float32)."
  ^floats [^NDArray ndarray]
  (bridge/read-floats (conn-of ndarray) (hid ndarray) (size ndarray)))

(defn ->vec
  "Converts a nd-array to a vector (one dimensional) of floats.
   COPIES the contents (a large array's copy lives in shared memory, owned by
   the vector); no element is boxed until read."
  [ndarray]
  (util/validate! ::ndarray ndarray "Invalid input array")
  (bridge/read-vec (conn-of ndarray) (hid ndarray) (size ndarray)))

(defn ->float-vec
  "The contents as a vector of floats (a copy)."
  [ndarray]
  (->vec ndarray))

(defn ->double-vec
  "The contents as a vector of doubles (a copy)."
  [^NDArray ndarray]
  (vec (bridge/read-array (conn-of ndarray) (hid ndarray) (size ndarray) :double)))

(defn ->int-vec
  "The contents as a vector of ints (a copy; fractions truncated)."
  [^NDArray ndarray]
  (vec (bridge/read-array (conn-of ndarray) (hid ndarray) (size ndarray) :int)))

(defn ->raw
  "The contents' bytes in the array's own dtype, native byte order (a copy)."
  ^bytes [^NDArray ndarray]
  (bridge/read-array (conn-of ndarray) (hid ndarray) (size ndarray) :raw))

(defn ->byte-vec
  "The contents as a vector of bytes (a copy; converted through int32)."
  [ndarray]
  (mapv byte (->int-vec ndarray)))

(s/def ::shape-vec-match-vec
  (fn [[v vec-shape]] (= (count v) (reduce clojure.core/* 1 vec-shape))))

(defn- vec->nd-vec
  "Convert a vector `v` into a n-dimensional vector given the `shape-vec`
   Ex:
    (vec->nd-vec [1 2 3] [1 1 3])       ;[[[1 2 3]]]
    (vec->nd-vec [1 2 3 4 5 6] [2 3 1]) ;[[[1] [2] [3]] [[4] [5] [6]]]
    (vec->nd-vec [1 2 3 4 5 6] [1 2 3]) ;[[[1 2 3]] [4 5 6]]]
    (vec->nd-vec [1 2 3 4 5 6] [3 1 2]) ;[[[1 2]] [[3 4]] [[5 6]]]
    (vec->nd-vec [1 2 3 4 5 6] [3 2])   ;[[1 2] [3 4] [5 6]]"
  [v [s1 & ss :as shape-vec]]
  (util/validate! ::sequential v "Invalid input vector `v`")
  (util/validate! ::sequential shape-vec "Invalid input vector `shape-vec`")
  (util/validate! ::shape-vec-match-vec
                  [v shape-vec]
                  "Mismatch between vector `v` and vector `shape-vec`")
  (if-not (seq ss)
    (vec v)
    (->> v
         (partition (clojure.core/quot (count v) s1))
         vec
         (mapv #(vec->nd-vec % ss)))))

(defn ->nd-vec
  "Convert an ndarray `ndarray` into a n-dimensional Clojure vector.
  Ex:
    (->nd-vec (array [1] [1 1 1]))           ;[[[1.0]]]
    (->nd-vec (array [1 2 3] [3 1 1]))       ;[[[1.0]] [[2.0]] [[3.0]]]
    (->nd-vec (array [1 2 3 4 5 6]) [3 1 2]) ;[[[1.0 2.0]] [[3.0 4.0]] [[5.0 6.0]]]"
  [ndarray]
  (util/validate! ::ndarray ndarray "Invalid input array")
  (vec->nd-vec (->vec ndarray) (shape-vec ndarray)))

;;; ------------------------------------------------------------------ new arrays from arrays

(defn- unary [op ^NDArray ndarray & args]
  (util/validate! ::ndarray ndarray "Invalid ndarray")
  (let [conn (conn-of ndarray)]
    (wrap conn (bridge/call conn op (into [(hid ndarray)] args)))))

(defn slice
  "Return a sliced NDArray that shares memory with current one:
   rows [i, i+1) or [start, stop) of the first axis."
  ([ndarray i]
   (slice ndarray i (inc (long i))))
  ([ndarray start stop]
   (unary "nd.slice" ndarray (long start) (long stop))))

(defn reshape
  "A reshaped NDArray (shares memory when the engine can) with the given
   shape (a vector or Shape)."
  [ndarray shape-vec-or-shape]
  (unary "nd.reshape" ndarray (mx-shape/->vec shape-vec-or-shape)))

(defn copy
  "A copy of the array, in the same context."
  [ndarray]
  (unary "nd.copy" ndarray))

(defn copy-to
  "Copy the content of current array to other (an NDArray); returns other."
  [source-ndarray target-ndarray]
  (util/validate! ::ndarray source-ndarray "Invalid ndarray")
  (util/validate! ::ndarray target-ndarray "Invalid target ndarray")
  (bridge/call (conn-of source-ndarray) "nd.copyto" [(hid source-ndarray) (hid target-ndarray)])
  target-ndarray)

(defn as-in-context
  "Return an `NDArray` that lives in the target context. If the array
   is already in that context, `self` is returned. Otherwise, a copy is made."
  [^NDArray ndarray ctx]
  (util/validate! ::ctx ctx "Invalid context")
  (if (= ctx (.-ctx ndarray))
    ndarray
    (apply unary "nd.as_in_context" ndarray (ctx-args ctx))))

(defn as-type
  "Return a copied array of current array with specified type."
  [ndarray dtype]
  (unary "nd.astype" ndarray (dtype-name dtype)))

(defn tostype
  "A copy of the array with storage type `stype` (\"default\" or \"row_sparse\")."
  [ndarray stype]
  (unary "nd.tostype" ndarray (name stype)))

(defn concatenate
  "Joins arrays along an axis (0 when no options are given, as clojure-mxnet).
   opts: {:axis 1, :always-copy true}"
  ([ndarrays {:keys [axis always-copy] :or {axis 1 always-copy true}}]
   (util/validate! (s/coll-of ::ndarray :kind sequential? :min-count 1) ndarrays "Invalid ndarrays")
   (let [conn (conn-of (first ndarrays))]
     (wrap conn (bridge/call conn "nd.concat" [(mapv hid ndarrays) (long axis)]))))
  ([ndarrays]
   (concatenate ndarrays {:axis 0})))

;;; ------------------------------------------------------------------ files

(defn save
  "Save a map of name -> NDArray (or a vector of NDArrays) to a file in
   MXNet's format."
  [fname map-of-name-to-ndarray]
  (let [m map-of-name-to-ndarray
        names (when (map? m) (mapv name (keys m)))
        arrays (if (map? m) (vals m) m)
        conn (conn-of (first arrays))]
    (bridge/call conn "nd.save" [fname names (mapv hid arrays)])
    nil))

(defn- load* [filename]
  (let [conn (bridge/connection)
        {:keys [names arrays]} (bridge/call conn "nd.load" [filename])]
    [names (mapv #(wrap conn %) arrays)]))

(defn load
  "Takes a filename and returns back a map of ndarray-name to ndarray"
  [filename]
  (let [[names ndarrays] (load* filename)]
    (into {} (map (fn [n a] [(str n) a]) (or names (map str (range))) ndarrays))))

(defn save-to-file
  "Save one ndarray to a file"
  [fname ndarray]
  (save fname {"default" ndarray}))

(defn load-from-file
  "Load one ndarry from a file"
  [fname]
  (first (second (load* fname))))
