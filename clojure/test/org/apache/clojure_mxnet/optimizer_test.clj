(ns org.apache.clojure-mxnet.optimizer-test
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.lr-scheduler :as lr-scheduler]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]))

(defn- step
  "Weight after one push of gradient 1 to weight 1 with `opt`."
  [opt]
  (let [kv (kvstore/create)
        out (ndarray/zeros [2])]
    (kvstore/init kv "w" (ndarray/ones [2]))
    (kvstore/set-optimizer kv opt)
    (kvstore/push kv "w" (ndarray/ones [2]))
    (kvstore/pull kv "w" out)
    (ndarray/->vec out)))

(deftest every-optimizer-runs-in-the-engine
  (doseq [[name make] [["sgd" optimizer/sgd] ["dcasgd" optimizer/dcasgd] ["nag" optimizer/nag]
                       ["ada-delta" optimizer/ada-delta] ["rms-prop" optimizer/rms-prop]
                       ["ada-grad" optimizer/ada-grad] ["adam" optimizer/adam] ["sgld" optimizer/sgld]]]
    (testing name
      (let [w (step (make))]
        (is (= 2 (count w)))
        (is (every? #(and (Double/isFinite %) (not= 1.0 %)) (map double w))
            "one push moved the weight")))))

(deftest sgd-follows-its-formula
  ;; w - lr * (g + wd * w) = 1 - 0.5 * (1 + 0.0001)
  (is (every? #(< (Math/abs (- (double %) (- 1.0 (* 0.5 1.0001)))) 1e-6)
              (step (optimizer/sgd {:learning-rate 0.5})))))

(deftest optimizers-accept-options-and-schedulers
  (is (= "sgd" (:name (optimizer/sgd {:learning-rate 0.1 :lr-scheduler (lr-scheduler/factor-scheduler 10 0.9)}))))
  (is (= {:type "factor" :step 10 :factor 0.9} (lr-scheduler/factor-scheduler 10 0.9)))
  (is (= 2 (count (step (optimizer/sgd {:learning-rate 0.1 :lr-scheduler (lr-scheduler/factor-scheduler 10 0.9)})))))
  (is (= 2 (count (step (optimizer/adam {:learning-rate 0.1 :clip-gradient 0.5}))))))

(deftest invalid-options-fail-validation
  (binding [*out* (java.io.StringWriter.)]
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Incorrect sgd optimizer options"
                          (optimizer/sgd {:learning-rate "fast"})))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Incorrect adam optimizer options"
                          (optimizer/adam {:beta1 :x})))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid optimizer"
                          (kvstore/set-optimizer (kvstore/create) {:learning-rate 1})))))
