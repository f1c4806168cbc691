(ns org.apache.clojure-mxnet.ndarray-api
  "NDArray operators in clojure-mxnet's ndarray-api form, for the operators
   mxkv implements: each takes one map of arguments by name (kebab-case,
   with an optional `:out` NDArray to write into and return), and, when the
   operator has two or more required arguments, those by position too.
   Ex:
     (reshape {:data a :shape [2 -1]})
     (cast a \"int32\")            (cast {:data a :dtype \"int32\" :out b})
     (one-hot labels 10)          (slice-axis a 1 0 2)

   The operators run in the engine and give new arrays (copies). A key the
   operator does not take is refused, naming the keys it does take.
   Results match MXNet 1.9.1's (tests/golden/clj_ops.json), except that a
   `reshape` to a shape of another size is refused (MXNet reads past the
   array) and softmax's `length` input is not supported."
  (:refer-clojure :exclude [abs cast concat flatten max min])
  (:require [clojure.string :as string]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.util :as util]))

(set! *warn-on-reflection* true)

(defn- check-keys [fname m accepted]
  (when-not (map? m)
    (util/invalid! (str fname " takes a map of arguments by name, got "
                        (if (nil? m) "nil" (.getName (class m))))
                   {:value m}))
  (let [unknown (remove (clojure.core/set accepted) (keys m))]
    (when (seq unknown)
      (util/invalid! (str fname ": unknown argument " (string/join ", " unknown)
                          "; it takes " (string/join ", " accepted))
                     {:keys (vec unknown) :accepted (vec accepted)}))))

(defn call-op
  "Runs MXNet operator `op-name` for function `fname` on the argument map
   `m`: `inputs` are the keys of its NDArray inputs (in order; a nil
   optional input is left out), `params` those of its parameters,
   `required` the keys that must be present. An input may be a vector of
   arrays (concat's :data)."
  [fname op-name inputs params required m]
  (check-keys fname m (clojure.core/concat inputs params [:out]))
  (doseq [k required
          ;; softmax's length input may only be nil; a required parameter
          ;; may be nil where MXNet allows None (slice-axis's :end)
          :when (not= k :length)
          :when (if (some #{k} inputs) (nil? (get m k)) (not (contains? m k)))]
    (util/invalid! (str fname ": argument " k " is required") {:key k :args (vec (keys m))}))
  (ndarray/operator-call op-name
                         ;; an input may be a vector of arrays (concat's :data)
                         (vec (clojure.core/mapcat #(let [v (get m %)] (if (sequential? v) v (when v [v])))
                                      inputs))
                         []
                         ;; nil means None for a required parameter (slice-axis's
                         ;; :end), and "not given" for an optional one
                         (into {} (filter (fn [[k v]] (or (some? v) (some #{k} required))))
                               (select-keys m params))
                         (:out m)))

(defmacro ^:private defop
  "Defines `fname` calling MXNet operator `op-name`: inputs, parameters and
   the required keys, in MXNet's order."
  [fname op-name doc inputs params required]
  (let [syms (mapv (comp symbol name) required)
        map-arity `([m#] (call-op ~(name fname) ~op-name ~inputs ~params ~required m#))]
    (if (= 1 (count required))
      `(defn ~fname ~doc ~map-arity)
      `(defn ~fname ~doc
         (~syms (~fname ~(zipmap required syms)))
         ~map-arity))))

(def ^:private reduce-params [:axis :keepdims :exclude])

(defop activation "Activation"
  "Activation function `act-type` element-wise: relu, sigmoid, tanh,
   softrelu (log(1+e^x)) or softsign (x/(1+|x|)).
   (activation data act-type) or {:data :act-type :out}"
  [:data] [:act-type] [:data :act-type])
(defop relu "relu" "max(x, 0) element-wise. {:data :out}" [:data] [] [:data])
(defop sigmoid "sigmoid" "1/(1+e^-x) element-wise. {:data :out}" [:data] [] [:data])
(defop tanh "tanh" "tanh(x) element-wise. {:data :out}" [:data] [] [:data])
(defop softmax "softmax"
  "Softmax along `:axis` (default -1). (softmax data length) with length
   nil, or {:data :axis :temperature :dtype :out}."
  [:data :length] [:axis :temperature :dtype :use-length] [:data :length])
(defop log-softmax "log_softmax"
  "Log of softmax along `:axis` (default -1).
   (log-softmax data length) with length nil, or {:data :axis :temperature :dtype :out}."
  [:data :length] [:axis :temperature :dtype :use-length] [:data :length])
(defop argmax "argmax"
  "Indices of the largest elements. {:data :axis :keepdims :out}"
  [:data] [:axis :keepdims] [:data])
(defop one-hot "one_hot"
  "One-hot rows for indices. (one-hot indices depth) or
   {:indices :depth :on-value :off-value :dtype :out}"
  [:indices] [:depth :on-value :off-value :dtype] [:indices :depth])
(defop reshape "reshape"
  "The array in another shape (a copy); `:shape` may use MXNet's special
   dims 0 (copy), -1 (infer), -2 (the rest), -3 (merge two), -4 (split one
   into the next two). {:data :shape :reverse :out}"
  [:data] [:shape :reverse :target-shape :keep-highest] [:data])
(defop flatten "flatten"
  "The array as 2-d: the first axis kept, the rest merged. {:data :out}"
  [:data] [] [:data])
(defop expand-dims "expand_dims"
  "A new axis of length 1 at `axis`. (expand-dims data axis) or {:data :axis :out}"
  [:data] [:axis] [:data :axis])
(defop slice-axis "slice_axis"
  "Elements [begin, end) along `axis` (end nil: to the end).
   (slice-axis data axis begin end) or {:data :axis :begin :end :out}"
  [:data] [:axis :begin :end] [:data :axis :begin :end])
(defop cast "cast"
  "The array converted to `dtype` (floats to ints truncate toward zero).
   (cast data dtype) or {:data :dtype :out}"
  [:data] [:dtype] [:data :dtype])
(defop transpose "transpose"
  "The axes reversed, or permuted by `:axes`. {:data :axes :out}" [:data] [:axes] [:data])
(defop dot "dot"
  "Matrix product. (dot lhs rhs) or {:lhs :rhs :transpose-a :transpose-b :out}"
  [:lhs :rhs] [:transpose-a :transpose-b :forward-stype] [:lhs :rhs])
(defop broadcast-add "broadcast_add"
  "lhs + rhs, dimensions of length 1 broadcast. (broadcast-add lhs rhs) or {:lhs :rhs :out}"
  [:lhs :rhs] [] [:lhs :rhs])
(defop broadcast-sub "broadcast_sub"
  "lhs - rhs, dimensions of length 1 broadcast. (broadcast-sub lhs rhs) or {:lhs :rhs :out}"
  [:lhs :rhs] [] [:lhs :rhs])
(defop broadcast-mul "broadcast_mul"
  "lhs * rhs, dimensions of length 1 broadcast. (broadcast-mul lhs rhs) or {:lhs :rhs :out}"
  [:lhs :rhs] [] [:lhs :rhs])
(defop broadcast-div "broadcast_div"
  "lhs / rhs, dimensions of length 1 broadcast. (broadcast-div lhs rhs) or {:lhs :rhs :out}"
  [:lhs :rhs] [] [:lhs :rhs])
(defop sum "sum" "Sum over `:axis` (all by default). {:data :axis :keepdims :exclude :out}"
  [:data] reduce-params [:data])
(defop mean "mean" "Mean over `:axis` (all by default). {:data :axis :keepdims :exclude :out}"
  [:data] reduce-params [:data])
(defop max "max" "Maximum over `:axis`. {:data :axis :keepdims :exclude :out}"
  [:data] reduce-params [:data])
(defop min "min" "Minimum over `:axis`. {:data :axis :keepdims :exclude :out}"
  [:data] reduce-params [:data])
(defop norm "norm" "The L1 or L2 norm. {:data :ord :axis :out-dtype :keepdims :out}"
  [:data] [:ord :axis :out-dtype :keepdims] [:data])
(defop clip "clip"
  "Elements clipped into [a-min, a-max]. (clip data a-min a-max) or {:data :a-min :a-max :out}"
  [:data] [:a-min :a-max] [:data :a-min :a-max])
(defop exp "exp" "e^x element-wise. {:data :out}" [:data] [] [:data])
(defop log "log" "Natural logarithm element-wise. {:data :out}" [:data] [] [:data])
(defop sqrt "sqrt" "Square root element-wise. {:data :out}" [:data] [] [:data])
(defop rsqrt "rsqrt" "1/sqrt(x) element-wise. {:data :out}" [:data] [] [:data])
(defop square "square" "x^2 element-wise. {:data :out}" [:data] [] [:data])
(defop abs "abs" "|x| element-wise. {:data :out}" [:data] [] [:data])
(defop sign "sign" "The sign (-1, 0, 1) element-wise. {:data :out}" [:data] [] [:data])
(defop round "round" "Rounded, halves away from zero. {:data :out}" [:data] [] [:data])
(defop ceil "ceil" "Ceiling element-wise. {:data :out}" [:data] [] [:data])
(defop floor "floor" "Floor element-wise. {:data :out}" [:data] [] [:data])
(defop cos "cos" "Cosine element-wise. {:data :out}" [:data] [] [:data])
(defop sin "sin" "Sine element-wise. {:data :out}" [:data] [] [:data])
(defop arccos "arccos" "Inverse cosine element-wise. {:data :out}" [:data] [] [:data])
(defop arcsin "arcsin" "Inverse sine element-wise. {:data :out}" [:data] [] [:data])
(defop arctan "arctan" "Inverse tangent element-wise. {:data :out}" [:data] [] [:data])
(defop argmax-channel "argmax_channel"
  "Index of the largest element along axis 1, as floats. {:data :out}" [:data] [] [:data])
(defop argmin "argmin"
  "Indices of the smallest elements. {:data :axis :keepdims :out}"
  [:data] [:axis :keepdims] [:data])
(defop swap-axis "SwapAxis"
  "The array with axes `dim1` and `dim2` exchanged (a copy). {:data :dim1 :dim2 :out}"
  [:data] [:dim1 :dim2] [:data])
(defop concat "concat"
  "The arrays of `data` (a vector) joined along `:dim` (default 1); `num-args`
   is their count. (concat data num-args) or {:data :num-args :dim :out}"
  [:data] [:num-args :dim] [:data :num-args])
(defop embedding "Embedding"
  "Rows of `weight` (shape [input-dim output-dim]) picked by the indices in
   `data`: shape (shape data) + [output-dim].
   (embedding data weight input-dim output-dim) or
   {:data :weight :input-dim :output-dim :dtype :out}"
  [:data :weight] [:input-dim :output-dim :dtype :sparse-grad]
  [:data :weight :input-dim :output-dim])
(defop softmax-activation "SoftmaxActivation"
  "Softmax of each instance (`:mode` \"instance\", the rows flattened) or
   along axis 1 (\"channel\"). {:data :mode :out}"
  [:data] [:mode] [:data])
(defop softmax-output "SoftmaxOutput"
  "The forward pass of MXNet's SoftmaxOutput: the softmax of each row of
   `data` (`label` only shapes the backward pass, which mxkv does not run).
   (softmax-output data label) or {:data :label :multi-output :preserve-shape ... :out}"
  [:data :label]
  [:grad-scale :ignore-label :multi-output :use-ignore :preserve-shape :normalization
   :out-grad :smooth-alpha]
  [:data :label])
