(ns org.apache.clojure-mxnet.context-test
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.context :as context]))

(deftest cpu-and-gpu-contexts
  (is (= "cpu" (context/device-type (context/cpu))))
  (is (= 0 (context/device-id (context/cpu))))
  (is (= 3 (context/device-id (context/cpu 3))))
  (is (= "gpu" (context/device-type (context/gpu 1))))
  (is (= 0 (context/device-id (context/gpu)))))

(deftest default-context-is-cpu-0
  (is (= (context/cpu 0) (context/default-context)))
  (is (= (context/cpu 0) (context/cpu-context))))

(deftest contexts-are-values
  (is (= (context/cpu 1) (context/cpu 1)))
  (is (not= (context/cpu 1) (context/gpu 1)))
  (is (= 1 (count (set [(context/cpu 2) (context/cpu 2)]))))
  (is (= "#<Context cpu(2)>" (pr-str (context/cpu 2))))
  (is (= "gpu(0)" (str (context/gpu)))))

(deftest device-ids-are-ints-and-checked
  (is (instance? Integer (context/device-id (context/cpu 2))))
  (doseq [bad [-1 "0" 1.5 nil]]
    (let [e (is (thrown? clojure.lang.ExceptionInfo (context/cpu bad)))]
      (is (= :invalid-argument (:type (ex-data e))))
      (is (re-find #"non-negative integer" (ex-message e))))))
