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

(def ^:private scheduler-keys
  "The keys each kind of schedule map takes (those of MXNet's schedulers)."
  (let [warmup [:base_lr :warmup_steps :warmup_begin_lr :warmup_mode]]
    {"factor" (into #{:type :step :factor :stop_factor_lr} warmup)
     "multifactor" (into #{:type :step :factor} warmup)
     "poly" (into #{:type :max_update :pwr :final_lr} warmup)
     "cosine" (into #{:type :max_update :final_lr} warmup)}))

(defn check!
  "Refuses schedule map `spec` (an optimizer's :lr-scheduler, as
   `factor-scheduler` makes) with a key its kind does not take: ex-info
   {:type :invalid-argument} naming the key and the accepted ones. A kind
   the engine does not know is left for the engine to refuse. Returns
   `spec`."
  [spec]
  (when-let [accepted (and (map? spec)
                           (scheduler-keys (some-> (or (:type spec) (get spec "type") "factor") name)))]
    (util/check-options! spec accepted "Invalid lr-scheduler"))
  spec)
