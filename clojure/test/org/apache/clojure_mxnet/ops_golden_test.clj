(ns org.apache.clojure-mxnet.ops-golden-test
  "Every operator case MXNet 1.9.1 recorded in tests/golden/ops.json.gz (the
   records tests/test_ops_golden.py replays in Python), called through the
   GENERATED function of org.apache.clojure-mxnet.ndarray in clojure-mxnet's
   form: the NDArray inputs, then a map of the parameters by name. Shape,
   dtype and values must be MXNet's (bit for bit, or within float tolerance
   for the operators test_ops_golden.py lists as TOLERANT), and a case MXNet
   refused must be refused. Cases of MXNet's Python wrappers (`add`,
   `split_v2`, ...), which clojure-mxnet has no generated function for, are
   counted apart. The layer operators' records (tests/golden/nn_ops.json.gz,
   which tests/test_nn_ops_golden.py replays) likewise, their inputs drawn
   in the engine from the same seeded streams as tests/nn_golden_inputs.py.
   Also: how many of clojure-mxnet's names each namespace has
   (tests/golden/clj_names.json)."
  (:require [clojure.java.io :as io]
            [clojure.set :as set]
            [clojure.string :as string]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.ndarray-api]
            [org.apache.clojure-mxnet.ndarray-random-api]
            [org.apache.clojure-mxnet.random :as random])
  (:import (java.nio ByteBuffer ByteOrder)
           (java.util Base64)
           (java.util.zip GZIPInputStream)
           (org.apache.clojure_mxnet.bridge Json)))

(def ^:private root
  (delay
    (let [here (io/file (.toURI (io/resource "org/apache/clojure_mxnet/ops_golden_test.clj")))]
      ;; <root>/clojure/test/org/apache/clojure_mxnet/ops_golden_test.clj
      (nth (iterate #(.getParentFile ^java.io.File %) here) 6))))

(defn- golden [& path]
  (let [f (apply io/file @root "tests" "golden" path)]
    (Json/parse (if (.endsWith (str f) ".gz")
                  (with-open [in (GZIPInputStream. (io/input-stream f))] (slurp in))
                  (slurp f)))))

;; tests/test_ops_golden.py's TOLERANT and DEVIATIONS (the same policy: which
;; operators' floats are compared within tolerance, and the documented cases
;; where mxkv deliberately differs from MXNet)
(def ^:private tolerant
  #{"exp" "expm1" "log" "log10" "log2" "log1p" "sin" "cos" "tan" "arcsin" "arccos" "arctan"
    "sinh" "cosh" "tanh" "arcsinh" "arccosh" "arctanh" "sqrt" "rsqrt" "cbrt" "rcbrt" "sigmoid"
    "softsign" "erf" "erfinv" "gamma" "gammaln" "degrees" "radians" "hard_sigmoid" "smooth_l1"
    "broadcast_power" "broadcast_hypot" "power" "reciprocal" "mean" "sum" "nansum" "prod"
    "nanprod" "norm" "moments" "sum_axis" "dot" "batch_dot" "khatri_rao" "cumsum" "add_n"
    "ElementWiseSum" "broadcast_div" "divide" "true_divide" "elemwise_div" "Correlation"})

(def ^:private rtol {"float16" 2e-3 "float32" 2e-5 "float64" 1e-10})

(def ^:private deviations
  (into {["reshape" "(5, 5)"] :raises ["stack" "bad_shapes"] :raises
         ["cumsum" "dtype"] :returns ["norm" "out_dtype"] :returns ["erfinv" "int32"] :returns
         ["amp_multicast" ""] :returns ["amp_multicast" "narrow"] :returns}
        (for [op ["sum" "mean" "prod" "nansum" "nanprod"]] [[op "empty"] :returns])))

(defn- exact-array
  "A new array holding `values` exactly in `dtype`: float64 values as the sum
   of three float32 parts (the JVM sends floats), which is exact."
  [values shape dtype]
  (if (not= "float64" dtype)
    (nd/array (vec values) shape {:dtype dtype})
    (let [vs (mapv double values)
          hi (mapv #(double (float %)) vs)
          mid (mapv #(double (float (- %1 %2))) vs hi)
          lo (mapv #(double (float (- (- %1 %2) %3))) vs hi mid)
          part #(nd/array % shape {:dtype "float64"})]
      (nd/+ (nd/+ (part hi) (part mid)) (part lo)))))

(defn- input [a]
  (cond
    (and (map? a) (contains? a :nd)) (exact-array (:nd a) (vec (:shape a)) (:dtype a))
    (and (sequential? a) (seq a) (every? #(and (map? %) (contains? % :nd)) a)) (mapv input a)
    :else a))

(defn- spec-of
  "The operator spec (nd/operator-specs) of MXNet operator name `op` (a
   name or an alias; \"linalg.det\" is linalg_det), or nil."
  [op]
  (let [mx-name (string/replace op "." "_")]
    (first (filter #(or (= mx-name (:op %)) (some #{mx-name} (:aliases %))) nd/operator-specs))))

(defn- generated-fn
  "The generated ndarray function for MXNet operator `op`: the one named
   after `op` itself (an alias keeps its own name), else any of the
   operator's; nil when it has none (not a registry operator, or every name
   is defined by hand, as `reshape`, clojure-mxnet's Scala method)."
  [op]
  (when-let [spec (spec-of op)]
    (let [mine (str (nd/clojure-case (string/replace op "." "_")))
          gen? #(when-let [v (ns-resolve 'org.apache.clojure-mxnet.ndarray (symbol %))]
                  (when (= (:op spec) (:mxnet-op (meta v))) v))]
      (or (gen? mine) (some gen? (:ndarray spec))))))

(def ^:private scala-derived
  "MXNet's Python wrappers of two operands and the clojure-mxnet function of
   the same meaning (from its Scala NDArray methods), called (f lhs rhs)."
  {"add" "+" "subtract" "-" "multiply" "*" "divide" "div" "true_divide" "div" "modulo" "%"
   "power" "power" "maximum" "maximum" "minimum" "minimum" "equal" "equal"
   "not_equal" "not-equal" "greater" "greater" "greater_equal" "greater-equal"
   "lesser" "lesser" "lesser_equal" "lesser-equal"})

(defn- kebab [k] (keyword (string/replace (name k) "_" "-")))

(defn- tolerant? [op]
  (or (contains? tolerant op) (string/starts-with? op "linalg")))

(defn- same? [op want-dtype w g]
  (let [w (double w) g (double g)]
    (or (== w g)
        (and (Double/isNaN w) (Double/isNaN g))
        (and (tolerant? op) (string/starts-with? want-dtype "float")
             (let [t (double (rtol want-dtype))]
               (<= (Math/abs (- w g)) (+ t (* t (Math/abs w)))))))))

(defn- check-result [op where want got]
  (cond
    (contains? want :list)
    (and (is (vector? got) (str where ": several outputs"))
         (is (= (count (:list want)) (count got)) (str where ": output count"))
         (every? true? (map-indexed #(check-result op (str where "[" %1 "]") %2 (nth got %1))
                                    (:list want))))
    :else
    (let [shape (vec (or (not-empty (:shape want)) [1]))
          vals (nd/->double-vec got)]
      (and (is (= shape (nd/shape-vec got)) (str where ": shape"))
           (is (= (:dtype want) (str (nd/dtype got))) (str where ": dtype"))
           (is (and (= (count (:values want)) (count vals))
                    (every? true? (map #(same? op (:dtype want) %1 %2) (:values want) vals)))
               (str where ": values " (vec (take 8 vals)) " MXNet " (vec (take 8 (:values want)))))))))

(defn- replay
  "One case through its generated Clojure function: :exact, :tolerance,
   :error, :deviation, or :no-function."
  [{:keys [op tag args kwargs method mxnet]}]
  (let [two (when (and (scala-derived op) (= 2 (count args)) (empty? kwargs)
                        ;; a number first: only power, maximum and minimum take one
                        (or (map? (first args)) (#{"power" "maximum" "minimum"} op)))
              (ns-resolve 'org.apache.clojure-mxnet.ndarray (symbol (scala-derived op))))
        f (or (generated-fn op) two)
        where (str op "[" (if (string/blank? tag) "default" tag) "]" (when method " method")
                   (when two (str " as ndarray/" (scala-derived op))))]
    (if-not f
      :no-function
      (let [args (mapv input args)
            arrays (into [] (mapcat #(cond (nd/ndarray? %) [%]
                                           (and (vector? %) (every? nd/ndarray? %)) %
                                           :else [])) args)
            positional (remove #(or (nd/ndarray? %) (and (vector? %) (every? nd/ndarray? %)))
                               args)
            named (into {} (map (fn [[k v]] [(kebab k) (input v)])) kwargs)
            call (if two
                   #(f (first args) (second args))
                   #(apply f (concat arrays positional (when (seq named) [named]))))
            deviation (get deviations [op tag])]
        (cond
          (= :raises deviation)
          (do (is (thrown? clojure.lang.ExceptionInfo (call)) where) :deviation)
          deviation
          (do (is (some? (call)) where) :deviation)
          (contains? mxnet :error)
          (do (is (thrown? clojure.lang.ExceptionInfo (call))
                  (str where ": MXNet refused it (" (:error mxnet) ")"))
              :error)
          :else
          (do (check-result op where mxnet (call))
              (if (tolerant? op) :tolerance :exact)))))))

(deftest every-recorded-case-through-the-generated-functions
  (let [cases (:cases (golden "ops.json.gz"))
        counts (frequencies (map replay cases))
        ops-without (sort (distinct (keep #(when (nil? (generated-fn (:op %))) (:op %)) cases)))
        registry-without (filter spec-of ops-without)]
    (println "ops-golden (clojure, over" (name (org.apache.clojure-mxnet.bridge/transport)) "):"
             (into (sorted-map) counts) "cases;" (count cases) "in all; operators without a"
             "generated function:" (string/join " " ops-without))
    (is (< 700 (count cases)))
    (is (< 600 (+ (:exact counts 0) (:tolerance counts 0) (:error counts 0))))
    ;; a registry operator without one has every name taken: defined by hand
    ;; (reshape, slice: clojure-mxnet's Scala methods) or by another operator
    ;; of the same clojure-case (MakeLoss and make_loss)
    (is (every? (fn [op] (every? #(nil? (:mxnet-op (meta (ns-resolve 'org.apache.clojure-mxnet.ndarray
                                                                      (symbol %)))))
                                 (:ndarray (spec-of op))))
                registry-without)
        (str "registry operators without a generated function: " (vec registry-without)))))

;;; ------------------------------------------------------------------ layer operators

(defn- rand-input
  "tests/nn_golden_inputs.py's {:rand [seed shape dtype kind]}: numpy's legacy
   stream of `seed`, drawn by the engine after random/seed (its mx.random is
   numpy's generator), then cast."
  [[seed shape dtype kind]]
  (random/seed seed)
  (let [shape (vec shape)
        a (case kind
            "normal" (nd/random-normal {:loc 0 :scale 1 :shape shape :dtype "float64"})
            "wide" (nd/random-normal {:loc 0 :scale 4 :shape shape :dtype "float64"})
            "pos" (nd/random-uniform {:low 0.5 :high 1.5 :shape shape :dtype "float64"})
            "int" (nd/random-randint {:low 0 :high 10 :shape shape :dtype "int64"}))]
    (if (= dtype (str (nd/dtype a))) a (nd/as-type a dtype))))

(defn- half->double
  "An IEEE half-precision value (its 16 bits) as a double."
  [^long bits]
  (let [sign (if (zero? (bit-and bits 0x8000)) 1.0 -1.0)
        e (bit-and (bit-shift-right bits 10) 0x1f)
        m (bit-and bits 0x3ff)]
    (* sign (cond (zero? e) (* m (Math/pow 2 -24))
                  (= e 31) (if (zero? m) Double/POSITIVE_INFINITY Double/NaN)
                  :else (* (+ 1.0 (/ m 1024.0)) (Math/pow 2 (- e 15)))))))

(defn- decode
  "A recorded output {:b64 :dtype :shape} as its values (doubles)."
  [{:keys [b64 dtype]}]
  (let [bb (.order (ByteBuffer/wrap (.decode (Base64/getDecoder) ^String b64))
                   ByteOrder/LITTLE_ENDIAN)]
    (case dtype
      "float32" (vec (repeatedly (quot (.remaining bb) 4) #(double (.getFloat bb))))
      "float64" (vec (repeatedly (quot (.remaining bb) 8) #(.getDouble bb)))
      "float16" (vec (repeatedly (quot (.remaining bb) 2)
                                 #(half->double (bit-and (long (.getShort bb)) 0xffff))))
      "int32" (vec (repeatedly (quot (.remaining bb) 4) #(double (.getInt bb))))
      "int64" (vec (repeatedly (quot (.remaining bb) 8) #(double (.getLong bb))))
      "uint8" (vec (repeatedly (.remaining bb) #(double (bit-and (long (.get bb)) 0xff))))
      "int8" (vec (repeatedly (.remaining bb) #(double (.get bb)))))))

(defn- nn-tolerance [dtypes]
  (cond (some #{"float16"} dtypes) 1e-2
        (some #{"float32"} dtypes) 1e-4
        :else 1e-6))

(defn- nn-replay
  "One layer case through its generated function: :compared, :error,
   :no-function, or :training (BatchNorm's training form, which MXNet's
   imperative call gives only inside autograd: no Clojure call asks for it)."
  [{:keys [op inputs params mxnet train] :as c}]
  (let [f (generated-fn op)]
    (cond
      train :training
      (nil? f) :no-function
      :else
      (let [arrays (mapv #(if (contains? % :rand) (rand-input (:rand %))
                              (exact-array (:values %) (vec (:shape %)) (:dtype %)))
                         inputs)
            named (into {} (map (fn [[k v]] [(kebab k) v])) params)
            call #(apply f (concat arrays [named]))
            where (str op " " (:name c))]
        (if (contains? mxnet :error)
          (do (is (thrown? clojure.lang.ExceptionInfo (call))
                  (str where ": MXNet refused it (" (:error mxnet) ")"))
              :error)
          (let [got (call)
                outs (if (vector? got) got [got])
                tol (nn-tolerance (concat (map :dtype (:outputs mxnet))
                                          (map #(str (nd/dtype %)) arrays)))]
            (is (= (boolean (:list mxnet)) (vector? got)) (str where ": several outputs"))
            (is (= (count outs) (+ (count (:outputs mxnet)) (:unset_outputs mxnet 0)))
                (str where ": output count"))
            (doseq [[i o rec] (map vector (range) outs (:outputs mxnet))
                    :let [w (decode rec)
                          g (nd/->double-vec o)]]
              (is (= (vec (:shape rec)) (nd/shape-vec o)) (str where "[" i "]: shape"))
              (is (= (:dtype rec) (str (nd/dtype o))) (str where "[" i "]: dtype"))
              (is (and (= (count w) (count g))
                       (every? true? (map (fn [a b] (or (== a b) (and (Double/isNaN a) (Double/isNaN b))
                                                         (<= (Math/abs (- a b))
                                                             (+ tol (* tol (Math/abs a))))))
                                          w g)))
                  (str where "[" i "]: values " (vec (take 6 g)) " MXNet " (vec (take 6 w)))))
            :compared))))))

(deftest every-layer-case-through-the-generated-functions
  (let [cases (:cases (golden "nn_ops.json.gz"))
        counts (frequencies (map nn-replay cases))]
    (println "nn-golden (clojure, over" (name (org.apache.clojure-mxnet.bridge/transport)) "):"
             (into (sorted-map) counts) "of" (count cases) "cases")
    (is (< 300 (count cases)))
    (is (< 300 (+ (:compared counts 0) (:error counts 0))))
    ;; only an operator whose clojure-case another one owns (Crop: `crop` is
    ;; slice's alias, as in clojure-mxnet) has no function
    (is (every? #(empty? (:ndarray (spec-of %)))
                (distinct (keep #(when (and (not (:train %)) (nil? (generated-fn (:op %))))
                                   (:op %))
                                cases))))))

(defn- publics [ns] (set (map str (keys (ns-publics ns)))))

(deftest clojure-mxnets-names-are-present
  (let [names (golden "clj_names.json")
        ;; out of scope, as for Python (docs/ndarray.md): custom operators, RNN/CTC,
        ;; the spatial samplers, the *Output loss layers, autograd's regularizer
        excluded #{"custom" "rnn" "ctc-loss" "bilinear-sampler" "grid-generator"
                   "spatial-transformer" "softmax-output" "linear-regression-output"
                   "logistic-regression-output" "mae-regression-output" "svm-output"
                   "identity-attach-kl-sparse-reg"}
        report (into (sorted-map)
                     (for [[k ns] [[:ndarray 'org.apache.clojure-mxnet.ndarray]
                                   [:ndarray-api 'org.apache.clojure-mxnet.ndarray-api]
                                   [:ndarray-random-api 'org.apache.clojure-mxnet.ndarray-random-api]
                                   [:random 'org.apache.clojure-mxnet.random]]]
                       (let [scope (set/difference (set (get names k)) excluded)
                             have (set/intersection scope (publics ns))]
                         [k {:present (count have) :in-scope (count scope)
                             :missing (sort (set/difference scope have))}])))]
    (doseq [[k {:keys [present in-scope missing]}] report]
      (println "clojure names:" (name k) present "/" in-scope "present; missing:"
               (string/join " " missing)))
    (is (= 221 (count (:ndarray-api names))))
    (is (<= 0.9 (/ (:present (:ndarray report)) (:in-scope (:ndarray report)))))
    (is (<= 0.85 (/ (:present (:ndarray-api report)) (:in-scope (:ndarray-api report)))))
    (is (= 24 (:present (:ndarray-random-api report))))
    (is (= 3 (:present (:random report))))))
