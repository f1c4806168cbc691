(ns org.apache.clojure-mxnet.lr-scheduler
  "Learning-rate schedules for optimizers: values the engine builds its
   schedule from when the optimizer is set on a store or first used."
  (:require [org.apache.clojure-mxnet.util :as util]))

(defn factor-scheduler
  "Assume the weight has been updated by n times, then the learning rate will
    be base_lr * factor^^(floor(n/step))
   - step int >= 1, schedule learning rate after n updates
   - factor number in (0, 1), the factor for reducing the learning rate
   The arguments are checked here: a bad one throws ex-info
   {:type :invalid-argument} (clojure-mxnet refused step < 1 and factor >= 1
   when the scheduler was built; a factor of 0 or less is refused too)."
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
