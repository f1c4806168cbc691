(ns org.apache.clojure-mxnet.lr-scheduler
  "Learning-rate schedules for optimizers; the engine builds them.")

(defn factor-scheduler
  "Assume the weight has been updated by n times, then the learning rate will
    be base_lr * factor^^(floor(n/step))
   - step int, schedule learning rate after n updates
   - factor number, the factor for reducing the learning rate"
  [step factor]
  {:type "factor" :step (int step) :factor (double factor)})
