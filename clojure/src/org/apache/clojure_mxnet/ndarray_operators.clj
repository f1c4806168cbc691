;; The hand-written operators of org.apache.clojure-mxnet.ndarray (loaded by
;; ndarray.clj into that namespace): clojure-mxnet's Scala methods
;; (arithmetic, comparisons, `t`, `onehot-encode` ...), and `invoke`, the call
;; the generated operator functions make (ndarray_generated.clj): form
;; `[& nd-array-and-params]`, the NDArray inputs, then the operator's
;; parameters by position in MXNet's order, or a trailing map by name, e.g.
;; (sum a {:axis 1 :keepdims true}). Each result is a new array that records
;; what it was made from (see `dependencies`); the `...=` functions write into
;; their first argument instead and return it.

(in-ns 'org.apache.clojure-mxnet.ndarray)

;;; ------------------------------------------------------------------ two operands

(defn- operand [x what]
  (when-not (or (number? x) (ndarray? x))
    (util/invalid! (str "Invalid operand: " what " must be a number or an NDArray, got "
                        (if (nil? x) "nil" (.getName (class x))))
                   {:value x})))

(defn- binop
  "Engine operator `op` on `lhs` and `rhs`, one of which may be a number
   (either side). A name ending in = writes into `lhs` and returns it."
  [op lhs rhs]
  (operand lhs "the left operand")
  (operand rhs "the right operand")
  (when (and (.endsWith ^String op "=") (not (ndarray? lhs)))
    (util/invalid! (str op " writes into its first argument, which must be an NDArray")
                   {:value lhs}))
  (when-not (or (ndarray? lhs) (ndarray? rhs))
    (util/invalid! (str op " needs at least one NDArray operand") {:lhs lhs :rhs rhs}))
  (let [[a other reverse?] (if (ndarray? lhs) [lhs rhs false] [rhs lhs true])
        conn (conn-of a)
        r (bridge/call conn "nd.binop"
                       [op (hid a) (if (ndarray? other) (hid other) other) (ndarray? other) reverse?])]
    (if r
      (record-deps! (wrap conn r) [lhs rhs])
      a)))

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

(defn %
  "Element-wise remainder (sign of the divisor, as MXNet): a new NDArray."
  [ndarray num-or-ndarray]
  (binop "%" ndarray num-or-ndarray))

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

(defn %=
  "Takes the remainder in place; returns `ndarray`."
  [ndarray num-or-ndarray]
  (binop "%=" ndarray num-or-ndarray))

(defn power
  "`lhs` to the power `rhs`, element-wise: either may be a number, the
   other an NDArray; a new NDArray. (power 2 a) is 2^a, (power a 2) is a^2."
  [num-or-ndarray ndarray-or-num]
  (binop "**" num-or-ndarray ndarray-or-num))

(defn **
  "`ndarray` to the power of a number or NDArray, element-wise: a new NDArray."
  [ndarray num-or-ndarray]
  (binop "**" ndarray num-or-ndarray))

(defn **=
  "Raises `ndarray` to the power of a number or NDArray in place; returns it."
  [ndarray num-or-ndarray]
  (binop "**=" ndarray num-or-ndarray))

(defn maximum
  "Element-wise maximum of two operands, either of which may be a number:
   a new NDArray."
  [num-or-ndarray ndarray-or-num]
  (binop "maximum" num-or-ndarray ndarray-or-num))

(defn minimum
  "Element-wise minimum of two operands, either of which may be a number:
   a new NDArray."
  [num-or-ndarray ndarray-or-num]
  (binop "minimum" num-or-ndarray ndarray-or-num))

(defn equal
  "1 where `ndarray` equals the other operand (a number or NDArray), else 0:
   a new NDArray of `ndarray`'s dtype."
  [ndarray ndarray-or-num]
  (binop "==" ndarray ndarray-or-num))

(defn not-equal
  "1 where the operands differ, else 0: a new NDArray."
  [ndarray ndarray-or-num]
  (binop "!=" ndarray ndarray-or-num))

(defn >
  "1 where `ndarray` is greater than the other operand, else 0: a new NDArray."
  [ndarray ndarray-or-num]
  (binop ">" ndarray ndarray-or-num))

(defn >=
  "1 where `ndarray` is greater than or equal to the other operand, else 0."
  [ndarray ndarray-or-num]
  (binop ">=" ndarray ndarray-or-num))

(defn <
  "1 where `ndarray` is less than the other operand, else 0: a new NDArray."
  [ndarray ndarray-or-num]
  (binop "<" ndarray ndarray-or-num))

(defn <=
  "1 where `ndarray` is less than or equal to the other operand, else 0."
  [ndarray ndarray-or-num]
  (binop "<=" ndarray ndarray-or-num))

;;; ------------------------------------------------------------------ registry operators
;; The operators of the engine's table are generated (ndarray_generated.clj,
;; from gen/operators.edn); these are the calls they are built on.

(defn- param
  "A parameter value as the engine reads it: a Context as \"cpu(0)\", a
   Shape or DType by its value, a keyword by its name."
  [x]
  (cond
    (instance? org.apache.clojure_mxnet.shape.Shape x) (mx-shape/->vec x)
    (instance? org.apache.clojure_mxnet.dtype.DType x) (str x)
    (instance? Context x) (str x)
    (keyword? x) (name x)
    :else x))

(defn- named-params [m]
  (when m
    (into {} (map (fn [[k v]] [k (param v)])) (util/convert-map m))))

(defn- check-out [op-name out]
  (when-not (or (nil? out) (ndarray? out) (and (vector? out) (seq out) (every? ndarray? out)))
    (util/invalid! (str op-name ": :out must be an NDArray (or a vector of NDArrays for an "
                        "operator with several outputs), got " (.getName (class out)))
                   {:op op-name :value out})))

(defn- run-op
  "Engine operator `op-name` (MXNet's name, see nd_dispatch.py) on the
   NDArrays `arrays` with `positional` parameters (MXNet's order) and `named`
   ones (a map, kebab-case keys): a new NDArray, a vector of them for an
   operator with several outputs, or `out` (an NDArray or vector) written."
  [op-name arrays positional named out]
  (check-out op-name out)
  (let [conn (cond (seq arrays) (conn-of (first arrays))
                   (ndarray? out) (conn-of out)
                   (vector? out) (conn-of (first out))
                   :else (bridge/connection))
        r (bridge/call conn "nd.invoke"
                       [op-name (mapv hid arrays) (mapv param positional) (named-params named)
                        (cond (ndarray? out) (hid out) (vector? out) (mapv hid out))])]
    (cond
      out out
      (sequential? (first r)) (mapv #(record-deps! (wrap conn %) arrays) r)
      :else (record-deps! (wrap conn r) arrays))))

(defn- invoke
  "clojure-mxnet's generated form `[& nd-array-and-params]` of engine
   operator `op-name`: the NDArrays in `args` are its inputs (in order), the
   rest its parameters by position in MXNet's order, a trailing map its
   parameters by name (and :out, an NDArray to write into and return)."
  [op-name args]
  (let [arrays (filterv ndarray? args)
        others (remove ndarray? args)
        [positional named] (if (map? (last others)) [(butlast others) (last others)] [others nil])]
    (run-op op-name arrays positional (dissoc named :out) (:out named))))

(defn t
  "The transpose of a 2-d array (a copy)."
  [ndarray]
  (let [shape (shape-vec ndarray)]
    (when-not (= 2 (count shape))
      (util/invalid! "Only 2D matrix is allowed to be transposed" {:shape shape})))
  (invoke "transpose" [ndarray]))

(defn greater
  "1 where `ndarray` is greater than the other operand (a number or
   NDArray), else 0: a new NDArray (the Scala NDArray.greater; same as `>`)."
  [ndarray ndarray-or-num]
  (> ndarray ndarray-or-num))

(defn greater-equal
  "1 where `ndarray` is greater than or equal to the other operand, else 0
   (the Scala NDArray.greaterEqual; same as `>=`)."
  [ndarray ndarray-or-num]
  (>= ndarray ndarray-or-num))

(defn lesser
  "1 where `ndarray` is less than the other operand, else 0 (the Scala
   NDArray.lesser; same as `<`)."
  [ndarray ndarray-or-num]
  (< ndarray ndarray-or-num))

(defn lesser-equal
  "1 where `ndarray` is less than or equal to the other operand, else 0
   (the Scala NDArray.lesserEqual; same as `<=`)."
  [ndarray ndarray-or-num]
  (<= ndarray ndarray-or-num))

(defn unary--
  "The array negated, element-wise: a new NDArray (the Scala unary_-)."
  [ndarray]
  (invoke "negative" [ndarray]))

(defn equals
  "True when `other` is an NDArray of the same shape and elements (read as
   float32) as `ndarray` (the Scala equals; what `=` compares)."
  [ndarray other]
  (check-ndarray ndarray "the array")
  (= ndarray other))

(defn writable
  "True: every mxkv NDArray can be written (the Scala writable; MXNet's
   read-only arrays come from sparse views mxkv does not make)."
  [ndarray]
  (check-ndarray ndarray "the array")
  true)

(defn onehot-encode
  "Writes the one-hot encoding of `indices` (shape [n]) into `out` (shape
   [n depth]) and returns `out`."
  [indices out]
  (let [ids (hid indices)]
    (bridge/call (conn-of indices) "nd.onehot_encode" [ids (hid out)])
    out))
