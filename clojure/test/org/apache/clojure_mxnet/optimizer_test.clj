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

(deftest updating-by-hand-refuses-a-plain-map-as-set-optimizer-does
  (let [w (ndarray/ones [2])]
    (doseq [f [#(optimizer/create-state {:name "sgd" :params {}} 0 w)
               #(optimizer/update {:learning-rate 0.1} 0 w (ndarray/ones [2]) nil)]]
      (let [e (is (thrown? clojure.lang.ExceptionInfo (f)))]
        (is (= :invalid-argument (:type (ex-data e))))
        (is (re-find #"^Invalid optimizer: expected an Optimizer .*, got a plain map \{" (ex-message e)))))
    (is (= [1.0 1.0] (ndarray/->vec w)) "the weight is untouched")))

;;; updating by hand

(defn- weights-after
  "Weight [1 -2 0.5] after `n` gradients, by hand (create-state once, then
   update) and through a store with the same optimizer: [by-hand by-store]."
  [opt n]
  (let [w0 [1.0 -2.0 0.5]
        grads (for [k (range n)] (mapv #(* (inc k) %) [0.1 0.2 -0.3]))
        w (ndarray/array w0 [3])
        state (optimizer/create-state opt 0 w)
        kv (kvstore/create)
        out (ndarray/zeros [3])]
    (doseq [g grads]
      (is (identical? opt (optimizer/update opt 0 w (ndarray/array g [3]) state))))
    (kvstore/init kv 0 (ndarray/array w0 [3]))
    (kvstore/set-optimizer kv opt)
    (doseq [g grads] (kvstore/push kv 0 (ndarray/array g [3])))
    (kvstore/pull kv 0 out)
    [(ndarray/->vec w) (ndarray/->vec out)]))

(deftest update-applies-the-stores-update
  (doseq [[label opt] [["sgd+momentum" (optimizer/sgd {:learning-rate 0.1 :momentum 0.9})]
                       ["adam" (optimizer/adam {:learning-rate 0.05})]
                       ["rms-prop" (optimizer/rms-prop)]
                       ["ada-grad" (optimizer/ada-grad)]
                       ["sgd+schedule" (optimizer/sgd {:learning-rate 0.1
                                                       :lr-scheduler (lr-scheduler/factor-scheduler 1 0.5)})]]]
    (testing label
      (let [[by-hand by-store] (weights-after opt 3)]
        (is (= by-store by-hand))
        (is (not= [1.0 -2.0 0.5] by-hand))))))

(deftest create-state-gives-nil-an-array-or-a-vector
  (let [w (ndarray/ones [2])]
    (is (nil? (optimizer/create-state (optimizer/sgd) 0 w)) "plain sgd keeps no state")
    (is (ndarray/ndarray? (optimizer/create-state (optimizer/sgd {:momentum 0.9}) 0 w)))
    (let [st (optimizer/create-state (optimizer/adam) 0 w)]
      (is (vector? st))
      (is (= 2 (count st)))
      (is (every? ndarray/ndarray? st)))))

(deftest the-update-count-carries-over-between-calls
  ;; Adam's bias correction depends on how many updates came before: two
  ;; steps on one optimizer value differ from two fresh first steps.
  (let [opt (optimizer/adam {:learning-rate 0.1})
        w (ndarray/zeros [1])
        st (optimizer/create-state opt 0 w)
        _ (optimizer/update opt 0 w (ndarray/ones [1]) st)
        _ (optimizer/update opt 0 w (ndarray/full [1] 3) st)
        fresh (ndarray/zeros [1])]
    (doseq [g [1 3]]
      (let [o (optimizer/adam {:learning-rate 0.1})]
        (optimizer/update o 0 fresh (ndarray/full [1] g) (optimizer/create-state o 0 fresh))))
    (is (not= (ndarray/->vec w) (ndarray/->vec fresh)))))

(deftest update-arguments-are-checked
  (binding [*out* (java.io.StringWriter.)]
    (let [w (ndarray/ones [1])]
      (doseq [f [#(optimizer/update {:name "sgd"} 0 w w nil)
                 #(optimizer/update (optimizer/sgd) 0.5 w w nil)
                 #(optimizer/update (optimizer/sgd) 0 w [1] nil)
                 #(optimizer/update (optimizer/sgd) 0 w w "state")
                 #(optimizer/create-state (optimizer/sgd) 0 nil)]]
        (is (= :invalid-argument
               (:type (ex-data (is (thrown? clojure.lang.ExceptionInfo (f)))))))))))

(deftest adam-decay-factor-is-refused-unless-it-changes-nothing
  (is (= "adam" (:name (optimizer/adam {:decay-factor (- 1 1e-8)}))) "clojure-mxnet's default")
  (is (= "adam" (:name (optimizer/adam {:decay-factor 1}))))
  (let [e (is (thrown? clojure.lang.ExceptionInfo (optimizer/adam {:decay-factor 0.9})))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"decay-factor 0.9 is not supported" (ex-message e)))))

(deftest factor-schedulers-are-checked-when-built
  (doseq [[step factor] [[0 0.5] [2 1] [2 1.5] [2 0] [2 -0.1] [1.5 0.5] [2 "x"]]]
    (let [e (is (thrown? clojure.lang.ExceptionInfo (lr-scheduler/factor-scheduler step factor))
                (pr-str [step factor]))]
      (is (= :invalid-argument (:type (ex-data e)))))))

(deftest schedule-maps-are-checked-when-the-optimizer-is-made
  ;; not later, in the engine's words, when set-optimizer hands them over
  (doseq [[sched msg] [[{:type "fcator" :step 2} #"unknown :type \"fcator\"; accepted: \[\"cosine\" \"factor\""]
                       [{:type "factor" :step 0} #":step of a factor schedule must be an integer >= 1, got 0"]
                       [{:type "factor" :step 2 :factor 2} #":factor of a factor schedule must be a number in \(0, 1\], got 2"]
                       [{:type "multifactor" :step [5 2]} #":step of a multifactor schedule must be a non-empty increasing vector"]
                       [{:type "poly" :max_update 10 :warmup_mode "cubic"} #":warmup_mode of a poly schedule must be \"linear\" or \"constant\""]
                       [{:type "cosine" :max_update "x"} #":max_update of a cosine schedule must be an integer >= 1"]]]
    (let [e (is (thrown? clojure.lang.ExceptionInfo (optimizer/sgd {:lr-scheduler sched}))
                (pr-str sched))]
      (is (= :invalid-argument (:type (ex-data e))))
      (is (re-find msg (str (ex-message e))) (ex-message e))))
  (is (= "sgd" (:name (optimizer/sgd {:lr-scheduler {:type "multifactor" :step [2 5] :factor 0.5}}))))
  (is (= "sgd" (:name (optimizer/sgd {:lr-scheduler {:type "poly" :max_update 10 :pwr 2
                                                     :warmup_steps 2 :warmup_mode "linear"}})))))
