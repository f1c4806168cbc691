;; The operators of org.apache.clojure-mxnet.ndarray a training step calls
;; (loaded by ndarray.clj into that namespace): random-uniform,
;; random-normal, expand-dims, argmax, softmax, log-softmax, slice-axis,
;; one-hot. They keep clojure-mxnet's generated form
;; `[& nd-array-and-params]`: the NDArray inputs, then the operator's
;; parameters by position in MXNet's order, or a trailing map by name.
;;
;; Also the two calls org.apache.clojure-mxnet.random, .ndarray-api and
;; .ndarray-random-api are built on (`operator-call`, `random-call`).

(in-ns 'org.apache.clojure-mxnet.ndarray)

(defn- engine-param
  "A parameter value as the engine reads it: a Context as \"cpu(0)\", a
   Shape or DType by its value, a keyword by its name."
  [x]
  (if (instance? Context x) (str x) (param x)))

(defn- named-params [m]
  (when m
    (into {} (map (fn [[k v]] [k (engine-param v)])) (util/convert-map m))))

(defn operator-call
  "Runs engine operator `op-name` (MXNet's name) on the NDArrays `arrays`
   with `positional` parameters (MXNet's order) and `named` ones (a map,
   kebab-case keys); a new NDArray, or, when `out` is an NDArray, the result
   copied into `out`, which is returned. What ndarray-api is built on."
  [op-name arrays positional named out]
  (doseq [a arrays] (check-ndarray a (str op-name "'s input")))
  (when (empty? arrays)
    (util/invalid! (str op-name " needs an NDArray argument") {:op op-name}))
  (when (and (some? out) (not (ndarray? out)))
    (util/invalid! (str op-name ": :out must be an NDArray, got " (.getName (class out)))
                   {:op op-name :value out}))
  (let [conn (conn-of (first arrays))
        r (record-deps! (wrap conn (bridge/call conn "nd.invoke"
                                                [op-name (mapv hid arrays)
                                                 (mapv engine-param positional)
                                                 (named-params named)]))
                        arrays)]
    (if out
      (let [got (shape-vec r)]
        (when-not (= got (shape-vec out))
          (dispose r)
          (util/invalid! (str op-name ": :out has shape " (shape-vec out)
                              " but the result has shape " got)
                         {:op op-name :shape (shape-vec out) :result-shape got}))
        (bridge/call conn "nd.copyto" [(hid r) (hid out)])
        (dispose r)
        out)
      r)))

(defn random-call
  "Runs random engine operation `op` (\"random.draw\", \"random.invoke\")
   with `args`; a new NDArray, `out` (an NDArray) written in place, or nil
   for an operation that returns nothing. What the random namespaces are
   built on."
  [op args out]
  (when (and (some? out) (not (ndarray? out)))
    (util/invalid! (str ":out must be an NDArray, got " (.getName (class out))) {:value out}))
  (let [conn (if out (conn-of out) (bridge/connection))
        r (bridge/call conn op (mapv engine-param args))]
    (cond out out
          r (wrap conn r))))

(defn- random-op [op-name params]
  (let [[positional named] (if (map? (last params)) [(butlast params) (last params)] [params nil])
        out (:out named)]
    (random-call "random.invoke"
                 [op-name (mapv engine-param positional) (named-params (dissoc named :out))
                  (when out (hid out))]
                 out)))

(defn random-uniform
  "Samples from U[low, high): (random-uniform low high shape) with shape a
   vector or MXNet's text form \"(2,3)\", then optionally ctx (a Context or
   \"cpu(0)\") and dtype; or by name: (random-uniform {:low 0 :high 1
   :shape [2 3]}). Drawn by the engine's mx.random (see random/seed)."
  [& params]
  (random-op "random_uniform" params))

(defn random-normal
  "Samples from N(loc, scale^2): (random-normal loc scale shape [ctx dtype]),
   or by name: (random-normal {:loc 0 :scale 1 :shape [2 3]})."
  [& params]
  (random-op "random_normal" params))

(defn expand-dims
  "A copy of the array with a new axis of length 1 inserted at `axis`
   (-ndim-1 .. ndim): (expand-dims a 0) makes shape [2 3] into [1 2 3]."
  [& nd-array-and-params]
  (invoke "expand_dims" nd-array-and-params))

(defn argmax
  "Indices of the largest elements (as the array's dtype; ties take the
   first): (argmax a) over the flattened array (shape [1]), (argmax a axis)
   or (argmax a axis keepdims)."
  [& nd-array-and-params]
  (invoke "argmax" nd-array-and-params))

(defn softmax
  "exp(x)/sum(exp(x)) along an axis (the last by default): (softmax a), or
   by name (softmax a {:axis 0 :temperature 2.0 :dtype \"float64\"})."
  [& nd-array-and-params]
  (invoke "softmax" nd-array-and-params))

(defn log-softmax
  "log(softmax(x)) along an axis (the last by default), computed stably:
   (log-softmax a) or (log-softmax a {:axis 0})."
  [& nd-array-and-params]
  (invoke "log_softmax" nd-array-and-params))

(defn slice-axis
  "A copy of elements [begin, end) along `axis`: (slice-axis a axis begin
   end); negative begin/end count from the end, an end of nil means the
   end of the axis."
  [& nd-array-and-params]
  (invoke "slice_axis" nd-array-and-params))

(defn one-hot
  "One-hot rows for `indices`: (one-hot indices depth) has shape
   (shape indices) + [depth]; then optionally on-value (1), off-value (0)
   and dtype (\"float32\"). An index outside [0, depth) gives a row of
   off-value."
  [& nd-array-and-params]
  (invoke "one_hot" nd-array-and-params))
