(ns org.apache.clojure-mxnet.generated-ops-test
  "The conventions of the functions generated from the engine's operator
   table (gen/operators.edn): forms, arities, :out, several outputs, errors
   naming what is at fault, docs."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.ndarray-api :as api]
            [org.apache.clojure-mxnet.ndarray-random-api :as rapi]
            [org.apache.clojure-mxnet.random :as random]))

(defn- error-of [f]
  (try (f) nil (catch clojure.lang.ExceptionInfo e [(:type (ex-data e)) (ex-message e)])))

(deftest a-generated-function-takes-positions-a-map-and-out
  (let [a (nd/array [1 5 2 4 3 6] [2 3])]
    (is (= [8.0 13.0] (nd/->vec (nd/sum a 1))))
    (is (= [8.0 13.0] (nd/->vec (nd/sum a {:axis 1}))))
    (is (= [[2 1]] [(nd/shape-vec (nd/sum a 1 true))]))
    (let [out (nd/zeros [2])]
      (is (identical? out (nd/sum a {:axis 1 :out out})))
      (is (= [8.0 13.0] (nd/->vec out))))
    (testing "an alias is its own function, the same operator"
      (is (= (nd/->vec (nd/broadcast-add a a)) (nd/->vec (nd/broadcast-plus a a)))))))

(deftest several-outputs-come-as-a-vector-and-can-be-written-into-a-vector
  (let [a (nd/array [1 5 2 4 3 6] [2 3])
        [v i] (nd/topk a {:k 2 :ret-typ "both"})]
    (is (= [5.0 2.0 6.0 4.0] (nd/->vec v)))
    (is (= [1.0 2.0 2.0 0.0] (nd/->vec i)))
    (let [outs [(nd/zeros [2 1]) (nd/zeros [2 1]) (nd/zeros [2 1])]]
      (is (= outs (nd/split a {:num-outputs 3 :out outs})))
      (is (= [5.0 3.0] (nd/->vec (second outs)))))))

(deftest errors-name-the-argument-at-fault
  (let [a (nd/ones [2 3])]
    (is (= :invalid-argument (first (error-of #(nd/broadcast-add 1 2)))))
    (is (re-find #"broadcast-add needs an NDArray argument \(its inputs: lhs, rhs\)"
                 (second (error-of #(nd/broadcast-add 1 2)))))
    (is (= [:mxnet-error "dot takes 2 array(s) (lhs, rhs), got 1"] (error-of #(nd/dot a))))
    (is (re-find #"topk: invalid parameter format for k" (second (error-of #(nd/topk a {:k "x"})))))
    (is (re-find #"sum: unexpected argument\(s\) \['axes'\]" (second (error-of #(nd/sum a {:axes 1})))))
    (is (= :invalid-argument (first (error-of #(nd/sum a {:out 3})))))
    (is (re-find #"fully-connected: argument :num-hidden is required"
                 (second (error-of #(api/fully-connected {:data a :weight a :no-bias true})))))
    (is (re-find #"unknown argument :axes" (second (error-of #(api/sum {:data a :axes 1})))))))

(deftest ndarray-api-arities-follow-upstreams-generator
  (let [a (nd/array [1 5 2 4 3 6] [2 3])]
    ;; two or more required arguments: by position, or a map
    (is (= '([data a-min a-max] [opts]) (:arglists (meta #'api/clip))))
    (is (= [2.0 3.0 2.0 3.0 3.0 3.0] (nd/->vec (api/clip a 2 3))))
    ;; exactly one: the map alone
    (is (= '([opts]) (:arglists (meta #'api/relu))))
    ;; none (a random draw): () is {}
    (is (= '([] [opts]) (:arglists (meta #'rapi/exponential))))
    (random/seed 3)
    (let [x (rapi/exponential {:lam 2 :shape [4]})]
      (random/seed 3)
      (is (= x (rapi/exponential {:lam 2 :shape [4]}))))
    (is (= [2 4] (nd/shape-vec (rapi/normal-like {:mu (nd/zeros [2]) :sigma (nd/ones [2])
                                                 :shape [4]}))))
    (is (re-find #"MXNet's clip" (:doc (meta #'api/clip))))
    (is (re-find #"`a-min`: float, required" (:doc (meta #'nd/clip))))))

(deftest an-update-operator-writes-the-weight-in-place-through-out
  (let [w (nd/array [1 2 3] [3])
        g (nd/array [10 10 10] [3])]
    (is (identical? w (nd/sgd-update w g {:lr 0.1 :out w})))
    (is (= [0.0 1.0 2.0] (nd/->vec w)))
    (let [fresh (api/sgd-update {:weight w :grad g :lr 0.1})]
      (is (= [-1.0 0.0 1.0] (nd/->vec fresh)))
      (is (= [0.0 1.0 2.0] (nd/->vec w)) "without :out the weight is left as it was"))))
