(ns org.apache.clojure-mxnet.lr-scheduler
  "Learning-rate schedules for optimizers: values the engine builds its
   schedule from when the optimizer is set on a store or first used."
  (:require [org.apache.clojure-mxnet.util :as util]))

(defn factor-scheduler
  "A schedule that multiplies the learning rate by `factor` every `step`
   updates: after n updates the rate is base * factor^floor(n / step).
   - step  an integer >= 1
   - factor  a number in (0, 1)
   Checked here, when it is built: a bad argument throws ex-info
   {:type :invalid-argument}. The optimizer's :learning-rate is the base."
  [step factor]
  (when-not (and (integer? step) (>= step 1))
    (util/invalid! (str "Schedule step must be an integer greater or equal than 1 round, got "
                        (pr-str step))
                   {:step step}))
  (when-not (and (number? factor) (< 0 factor 1))
    (util/invalid! (str "Factor must be more than 0 and less than 1 to make lr reduce, got "
                        (pr-str factor))
                   {:factor factor}))
  {:type "factor" :step (int step) :factor (double factor)})
