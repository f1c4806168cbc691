;; The operators of org.apache.clojure-mxnet.ndarray (loaded by ndarray.clj
;; into that namespace): arithmetic, comparisons, element-wise math,
;; reductions, products. Each result is a new array that records what it was
;; made from (see `dependencies`); the `...=` functions write into their
;; first argument instead and return it.
;;
;; The operators clojure-mxnet generated from MXNet's registry keep its form
;; `[& nd-array-and-params]`: the NDArray inputs, then the operator's
;; parameters by position in MXNet's order; mxkv also takes a trailing map of
;; parameters by name, e.g. (sum a {:axis 1 :keepdims true}).

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

(defn- param
  "A parameter value as the engine reads it."
  [x]
  (cond
    (instance? org.apache.clojure_mxnet.shape.Shape x) (mx-shape/->vec x)
    (instance? org.apache.clojure_mxnet.dtype.DType x) (str x)
    (keyword? x) (name x)
    :else x))

(defn- invoke
  "Engine operator `op-name` (MXNet's name) on `args`: the NDArrays are its
   inputs, the rest its parameters by position, a trailing map its
   parameters by name. A new NDArray."
  [op-name args]
  (let [arrays (filterv ndarray? args)
        others (remove ndarray? args)
        [positional named] (if (map? (last others)) [(butlast others) (last others)] [others nil])]
    (when (empty? arrays)
      (util/invalid! (str op-name " needs an NDArray argument") {:args (vec args)}))
    (let [conn (conn-of (first arrays))
          r (bridge/call conn "nd.invoke"
                         [op-name (mapv hid arrays) (mapv param positional)
                          (when named (into {} (map (fn [[k v]] [k (param v)])) (util/convert-map named)))])]
      (record-deps! (wrap conn r) arrays))))

(defn sqrt
  "Element-wise square root: (sqrt ndarray)."
  [& nd-array-and-params]
  (invoke "sqrt" nd-array-and-params))

(defn rsqrt
  "Element-wise 1/sqrt(x): (rsqrt ndarray)."
  [& nd-array-and-params]
  (invoke "rsqrt" nd-array-and-params))

(defn square
  "Element-wise x^2: (square ndarray)."
  [& nd-array-and-params]
  (invoke "square" nd-array-and-params))

(defn abs
  "Element-wise absolute value: (abs ndarray)."
  [& nd-array-and-params]
  (invoke "abs" nd-array-and-params))

(defn sign
  "Element-wise sign (-1, 0 or 1): (sign ndarray)."
  [& nd-array-and-params]
  (invoke "sign" nd-array-and-params))

(defn round
  "Element-wise rounding to the nearest integer, halves away from zero
   (2.5 gives 3.0, -2.5 gives -3.0): (round ndarray)."
  [& nd-array-and-params]
  (invoke "round" nd-array-and-params))

(defn ceil
  "Element-wise ceiling: (ceil ndarray)."
  [& nd-array-and-params]
  (invoke "ceil" nd-array-and-params))

(defn floor
  "Element-wise floor: (floor ndarray)."
  [& nd-array-and-params]
  (invoke "floor" nd-array-and-params))

(defn exp
  "Element-wise e^x: (exp ndarray)."
  [& nd-array-and-params]
  (invoke "exp" nd-array-and-params))

(defn log
  "Element-wise natural logarithm: (log ndarray)."
  [& nd-array-and-params]
  (invoke "log" nd-array-and-params))

(defn cos
  "Element-wise cosine (radians): (cos ndarray)."
  [& nd-array-and-params]
  (invoke "cos" nd-array-and-params))

(defn sin
  "Element-wise sine (radians): (sin ndarray)."
  [& nd-array-and-params]
  (invoke "sin" nd-array-and-params))

(defn clip
  "Element-wise clipping into [a-min, a-max]: (clip ndarray a-min a-max)."
  [& nd-array-and-params]
  (invoke "clip" nd-array-and-params))

(defn sum
  "Sum of the elements: (sum ndarray) over all axes (a shape-[1] array), or
   (sum ndarray axis keepdims exclude), e.g. (sum a 1) or (sum a {:axis 1})."
  [& nd-array-and-params]
  (invoke "sum" nd-array-and-params))

(defn max
  "Maximum of the elements: (max ndarray) over all axes (a shape-[1] array),
   or (max ndarray axis keepdims exclude)."
  [& nd-array-and-params]
  (invoke "max" nd-array-and-params))

(defn min
  "Minimum of the elements: (min ndarray) over all axes (a shape-[1] array),
   or (min ndarray axis keepdims exclude)."
  [& nd-array-and-params]
  (invoke "min" nd-array-and-params))

(defn norm
  "The L2 norm of all elements, a shape-[1] array: (norm ndarray); or
   (norm ndarray ord axis out-dtype keepdims) with ord 1 or 2."
  [& nd-array-and-params]
  (invoke "norm" nd-array-and-params))

(defn transpose
  "The array with its axes reversed: (transpose ndarray), or permuted:
   (transpose ndarray [0 2 1]). A copy."
  [& nd-array-and-params]
  (invoke "transpose" nd-array-and-params))

(defn t
  "The transpose of a 2-d array (a copy)."
  [ndarray]
  (let [shape (shape-vec ndarray)]
    (when-not (= 2 (count shape))
      (util/invalid! "Only 2D matrix is allowed to be transposed" {:shape shape})))
  (invoke "transpose" [ndarray]))

(defn dot
  "Matrix product (the last axis of lhs against the first of rhs; two 1-d
   arrays give a shape-[1] array): (dot lhs rhs), or
   (dot lhs rhs transpose-a transpose-b)."
  [& nd-array-and-params]
  (invoke "dot" nd-array-and-params))

(defn argmax-channel
  "Index of the largest element along axis 1 (each row's channel) of a 2-d
   or larger array, as floats: [[1 2] [4 3]] gives [1.0 0.0]."
  [& nd-array-and-params]
  (invoke "argmax_channel" nd-array-and-params))

(defn choose-element-0index
  "For each row i of `data`, the element at index (index i), indices
   clipped into range: (choose-element-0index data index)."
  [& nd-array-and-params]
  (invoke "choose_element_0index" nd-array-and-params))

(defn onehot-encode
  "Writes the one-hot encoding of `indices` (shape [n]) into `out` (shape
   [n depth]) and returns `out`."
  [indices out]
  (let [ids (hid indices)]
    (bridge/call (conn-of indices) "nd.onehot_encode" [ids (hid out)])
    out))
