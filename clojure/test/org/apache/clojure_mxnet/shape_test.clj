(ns org.apache.clojure-mxnet.shape-test
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.base :as base]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.shape :as mx-shape]
            [org.apache.clojure-mxnet.util :as util]))

(deftest shape-round-trips
  (let [s (mx-shape/->shape [2 3])]
    (is (= [2 3] (mx-shape/->vec s)))
    (is (= 2 (mx-shape/length s)))
    (is (= 6 (mx-shape/product s)))
    (is (= s (mx-shape/->shape [2 3])))
    (is (not= s (mx-shape/->shape [3 2])))
    (is (= "(2,3)" (str s)))
    (is (= "#<Shape (2,3)>" (pr-str s)))))

(deftest shape-dims-are-ints-as-clojure-mxnet
  (let [s (mx-shape/->shape [2 3])]
    (is (every? #(instance? Integer %) (mx-shape/->vec s)))
    (is (instance? Integer (mx-shape/length s)))
    (is (instance? Integer (mx-shape/product s)))))

(deftest dtypes-are-named-values
  (is (= dtype/FLOAT32 base/MX_REAL_TYPE))
  (is (= ["uint8" "int32" "float16" "float32" "float64"]
         (map str [dtype/UINT8 dtype/INT32 dtype/FLOAT16 dtype/FLOAT32 dtype/FLOAT64])))
  (is (= "float32" (name dtype/FLOAT32)))
  (is (= "#<DType int8>" (pr-str dtype/INT8)))
  (is (identical? dtype/INT32 (dtype/->dtype "Int32")))
  (is (= [dtype/INT64 dtype/UINT8 dtype/FLOAT16] (map dtype/->dtype [:int64 'uint8 dtype/FLOAT16])))
  (is (not= dtype/FLOAT32 dtype/FLOAT64))
  (let [e (is (thrown? clojure.lang.ExceptionInfo (dtype/->dtype :complex64)))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"unknown dtype :complex64; expected one of float16, float32" (ex-message e)))))

(deftest util-helpers
  (is (= [2 3] (util/nd-seq-shape [[1 2 3] [4 5 6]])))
  (is (= {"foo_bar" 1} (util/convert-map {:foo-bar 1})))
  (is (= "foo_bar" (util/keyword->snake-case :foo-bar)))
  (let [e (is (thrown? clojure.lang.ExceptionInfo
                       (binding [*out* (java.io.StringWriter.)] (util/validate! string? 1 "Invalid thing"))))]
    (is (= "Invalid thing: the argument must be a string, got 1" (ex-message e)))
    (is (contains? (ex-data e) :clojure.spec.alpha/problems))))
