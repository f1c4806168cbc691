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

(def ^:private value-checks
  "What each schedule key's value must be: [test, words]."
  (let [whole (fn [lo] [#(and (integer? %) (>= % lo)) (str "an integer >= " lo)])
        num [number? "a number"]]
    {:step (whole 1) :max_update (whole 1) :warmup_steps (whole 0)
     :factor [#(and (number? %) (< 0 % 1.0000001)) "a number in (0, 1]"]
     :stop_factor_lr num :base_lr num :warmup_begin_lr num :pwr num :final_lr num
     :warmup_mode [#{"linear" "constant"} "\"linear\" or \"constant\""]}))

(defn- check-value!
  "Refuses value `v` of schedule key `k` (kind `kind`) unless it is what
   `value-checks` says (a multifactor's :step: a non-empty increasing vector of them)."
  [kind k v]
  (let [[ok? words] (value-checks k)
        [ok? words] (if (and (= kind "multifactor") (= k :step))
                      [#(and (sequential? %) (seq %) (every? ok? %) (apply < %))
                       "a non-empty increasing vector of integers >= 1"]
                      [ok? words])]
    (when (and ok? (not (ok? v)))
      (util/invalid! (str "Invalid lr-scheduler: " k " of a " kind " schedule must be " words
                          ", got " (pr-str v))
                     {:key k :value v :accepted words}))))

(defn check!
  "Refuses schedule map `spec` (an optimizer's :lr-scheduler, as
   `factor-scheduler` makes) when its :type is not a known kind, when it has a
   key its kind does not take, or when a value is out of range: ex-info
   {:type :invalid-argument} naming the key and the accepted values, when
   the optimizer is made rather than when it is set on a store. Returns
   `spec`."
  [spec]
  (when (map? spec)
    (let [kind (some-> (or (:type spec) (get spec "type") "factor") name)
          accepted (scheduler-keys kind)]
      (when-not accepted
        (util/invalid! (str "Invalid lr-scheduler: unknown :type " (pr-str (or (:type spec) (get spec "type")))
                            "; accepted: " (pr-str (vec (sort (keys scheduler-keys)))))
                       {:key :type :value kind :accepted (vec (sort (keys scheduler-keys)))}))
      (util/check-options! spec accepted "Invalid lr-scheduler")
      (doseq [[k v] spec
              :let [k (keyword k)]
              :when (not= k :type)]
        (check-value! kind k v))))
  spec)
