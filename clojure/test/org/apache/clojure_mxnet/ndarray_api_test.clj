(ns org.apache.clojure-mxnet.ndarray-api-test
  "The operators a training step calls, in each Clojure form (ndarray's
   positional one, ndarray-api's and ndarray-random-api's maps), against
   MXNet 1.9.1's results recorded in tests/golden/clj_ops.json (see
   tools/golden_clj_ops.py); then the forms' own rules: closed maps, :out,
   arities."
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.ndarray-api :as api]
            [org.apache.clojure-mxnet.ndarray-random-api :as rapi])
  (:import (org.apache.clojure_mxnet.bridge Json)))

(def ^:private golden
  (delay
    (let [here (io/file (.toURI (io/resource "org/apache/clojure_mxnet/ndarray_api_test.clj")))
          ;; <root>/clojure/test/org/apache/clojure_mxnet/ndarray_api_test.clj
          root (-> here .getParentFile .getParentFile .getParentFile .getParentFile
                   .getParentFile .getParentFile)]
      (Json/parse (slurp (io/file root "tests" "golden" "clj_ops.json"))))))

(def ^:private namespaces
  {"ndarray" 'org.apache.clojure-mxnet.ndarray
   "ndarray-api" 'org.apache.clojure-mxnet.ndarray-api
   "ndarray-random-api" 'org.apache.clojure-mxnet.ndarray-random-api})

(defn- resolve-fn [qualified]
  (let [[ns-alias fname] (.split ^String qualified "/")]
    (or (ns-resolve (get namespaces ns-alias) (symbol fname))
        (throw (ex-info (str "no function " qualified) {})))))

(defn- with-inputs
  "`form`'s arguments with each {:input i} replaced by the i-th array."
  [x arrays]
  (cond
    (and (map? x) (= [:input] (keys x))) (nth arrays (:input x))
    (map? x) (into {} (map (fn [[k v]] [k (with-inputs v arrays)])) x)
    (vector? x) (mapv #(with-inputs % arrays) x)
    :else x))

(defn- close? [want got]
  (and (= (count want) (count got))
       (every? true? (map (fn [w g]
                            (let [w (double w) g (double g)]
                              (or (== w g)
                                  (<= (Math/abs (- w g)) (+ 1e-6 (* 1e-5 (Math/abs w)))))))
                          want got))))

(defn- quiet [f] (binding [*out* (java.io.StringWriter.)] (f)))

(deftest every-clojure-form-gives-mxnets-result
  (let [cases (:operators @golden)
        forms (atom 0)]
    (is (< 60 (count cases)))
    (doseq [{:keys [name inputs clojure mxnet]} cases
            [fname args] clojure]
      (swap! forms inc)
      (let [arrays (mapv (fn [{:keys [values dtype shape]}]
                           (nd/array (vec values) shape {:dtype dtype}))
                         inputs)
            call #(apply (resolve-fn fname) (with-inputs args arrays))]
        (if-let [msg (:error mxnet)]
          (is (thrown? clojure.lang.ExceptionInfo (quiet call))
              (str name " " fname ": MXNet refused it (" msg ")"))
          (let [r (call)]
            (is (= (:shape mxnet) (nd/shape-vec r)) (str name " " fname " shape"))
            (is (= (:dtype mxnet) (str (nd/dtype r))) (str name " " fname " dtype"))
            (is (close? (:values mxnet) (nd/->double-vec r))
                (str name " " fname ": " (nd/->double-vec r) " vs " (:values mxnet)))))))
    (is (< 90 @forms))))

(deftest random-forms-have-mxnets-shape-dtype-and-range
  (doseq [{:keys [name clojure mxnet]} (:random @golden)
          [fname args] clojure]
    (let [r (apply (resolve-fn fname) args)
          v (nd/->double-vec r)]
      (is (= (:shape mxnet) (nd/shape-vec r)) (str name " " fname))
      (is (= (:dtype mxnet) (str (nd/dtype r))) (str name " " fname))
      (when-let [[lo hi] (:range mxnet)]
        (is (every? #(and (<= lo %) (< % hi)) v) (str name " " fname ": " v)))
      (is (< 1 (count (distinct v))) (str name " " fname " drew equal numbers")))))

(deftest upstream-ndarray-api-calls-work
  (let [data (nd/array [2 1 0 -1 -2] [1 5])
        out (nd/zeros [1 5])]
    (is (= [2.0 1.0 0.0 0.0 0.0] (nd/->vec (api/activation data "relu"))))
    (is (identical? out (api/activation {:data data :act-type "relu" :out out})))
    (is (= [2.0 1.0 0.0 0.0 0.0] (nd/->vec out))))
  (let [nda1 (nd/array [0.9 1.3] [2])
        out (nd/zeros [2] {:dtype dtype/INT32})]
    (api/cast {:data nda1 :dtype (str dtype/INT32) :out out})
    (is (= [0.0 1.0] (nd/->vec out)))
    (is (= [0.0 1.0] (nd/->vec (api/cast nda1 (str dtype/INT32))))))
  (let [y (nd/array (vec (range 24)) [2 3 4])]
    (is (= [4 3 2] (nd/shape-vec (api/reshape {:data y :shape [4 0 2]}))))
    (is (= [2 1 3 4] (nd/shape-vec (api/reshape {:data y :shape [2 -4 -1 3 -2]}))))))

(deftest ndarray-forms-clojure-mxnet-code-uses
  (let [img (nd/ones [3 4 4])
        pred (nd/array [0.1 0.7 0.2 0.6 0.3 0.1] [2 3])]
    (is (= [1 3 4 4] (nd/shape-vec (nd/expand-dims img 0))))
    (is (= [1 0] (nd/->int-vec (nd/argmax pred 1))))
    (is (= [2 10] (nd/shape-vec (nd/one-hot (nd/array [1 2] [2]) 10))))
    (is (= [2 1] (nd/shape-vec (nd/slice-axis pred 1 1 2))))
    (is (= [2 3] (nd/shape-vec (nd/random-uniform 0 9 "(2,3)"))))))

(deftest a-map-with-an-unknown-key-is-refused-naming-what-is-accepted
  (let [a (nd/ones [2 2])
        e (try (api/reshape {:data a :shap [4]}) nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"reshape: unknown argument :shap; it takes :data, :shape" (ex-message e)))
    (is (= [:shap] (:keys (ex-data e)))))
  (let [e (try (rapi/uniform {:lo 0}) nil (catch clojure.lang.ExceptionInfo e e))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"uniform: unknown argument :lo; it takes :low, :high" (ex-message e)))))

(deftest a-missing-required-argument-is-refused
  (let [e (try (api/one-hot {:indices (nd/ones [2])}) nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"one-hot: argument :depth is required" (ex-message e)))))

(deftest out-of-another-shape-is-refused-and-left-alone
  (let [out (nd/full [3] 7)
        e (try (api/relu {:data (nd/ones [2]) :out out}) nil
               (catch clojure.lang.ExceptionInfo e e))]
    ;; the engine's check (the table's function), naming out and both shapes
    (is (= :mxnet-error (:type (ex-data e))))
    (is (re-find #"relu: out has shape \(3,\), the result has shape \(2,\)" (ex-message e)))
    (is (= [7.0 7.0 7.0] (nd/->vec out)))))

(deftest random-api-writes-into-out-and-takes-a-context
  (let [out (nd/zeros [2 2])]
    (is (identical? out (rapi/normal {:loc 5 :scale 0.01 :out out})))
    (is (every? #(< 4.9 % 5.1) (nd/->vec out))))
  (is (= [3] (nd/shape-vec (rapi/uniform {:shape [3] :ctx (org.apache.clojure-mxnet.context/cpu 0)}))))
  (is (= "int32" (str (nd/dtype (rapi/randint 0 5))))))
