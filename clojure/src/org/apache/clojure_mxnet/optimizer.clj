(ns org.apache.clojure-mxnet.optimizer
  "Optimizers for kvstore/set-optimizer, and for updating weights by hand
   (`create-state`, `update`). Each constructor validates its options as
   clojure-mxnet did and returns an Optimizer value: the name and parameters
   of an MXNet optimizer (`mx.optimizer.create(name, **params)` in the
   engine). clojure-mxnet's defaults are kept (they differ from Python's in
   places, e.g. sgd's wd).

   A store given an Optimizer (kvstore/set-optimizer) builds its own engine
   optimizer from it. `create-state` and `update` use one engine optimizer
   per Optimizer value, made on first use and kept with the value, so its
   update counts (for schedules and Adam's bias correction) carry over from
   call to call, as a clojure-mxnet optimizer object's did."
  (:refer-clojure :exclude [update])
  (:require [clojure.spec.alpha :as s]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.lr-scheduler :as lr-scheduler]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.bridge Handles$Handle)))

(defrecord Optimizer [name params])

(defn- described
  "`v` as an error message names it: nil, a plain map, a record or another
   value with its class (printed briefly)."
  [v]
  (binding [*print-length* 8 *print-level* 3]
    (cond (nil? v) "nil"
          (record? v) (str "the record " (pr-str v))
          (map? v) (str "a plain map " (pr-str v))
          :else (str "a " (.getName (class v)) ": " (pr-str v)))))

(defn check!
  "Returns `optimizer` when it is an Optimizer value (from `sgd`, `adam`, ...
   of this namespace, or `->Optimizer` for an engine optimizer by name: a
   string :name and a map or nil :params). Otherwise throws ex-info
   {:type :invalid-argument :value optimizer :expected ...} whose message
   names what was passed and what is expected; a plain map (options such as
   {:learning-rate 0.1}, or {:name \"sgd\" :params ...}) is refused
   rather than handed to the engine. A record test, not a class test, so
   that values made before this namespace is reloaded still pass."
  [optimizer]
  (if (and (record? optimizer) (string? (:name optimizer))
           (or (nil? (:params optimizer)) (map? (:params optimizer))))
    optimizer
    (let [expected (str "an Optimizer made by org.apache.clojure-mxnet.optimizer, e.g. "
                        "(optimizer/sgd {:learning-rate 0.1}), or (optimizer/->Optimizer "
                        "\"sgd\" {\"learning_rate\" 0.1}) for an engine optimizer by name")]
      (util/invalid! (str "Invalid optimizer: expected " expected ", got " (described optimizer))
                     {:value optimizer :expected expected}))))

;; The engine's optimizer object behind an Optimizer value (see `update`).
(deftype EngineOptimizer [conn ^Handles$Handle handle spec])

(defn- optimizer
  "An Optimizer for engine optimizer `name`; a clip-gradient of 0 means no
   clipping (as in clojure-mxnet), so it is left out. A schedule map with a
   key its kind does not take is refused (see lr-scheduler/check!)."
  [name params]
  (some-> (get params "lr_scheduler") lr-scheduler/check!)
  (with-meta
    (->Optimizer name (into {} (remove (fn [[k v]] (or (nil? v) (and (= k "clip_gradient") (zero? v)))))
                            params))
    {::engine (atom nil)}))

(s/def ::learning-rate number?)
(s/def ::momentum number?)
(s/def ::wd number?)
(s/def ::clip-gradient number?)
(s/def ::lr-scheduler #(and (map? %) (contains? % :type)))
(s/def ::sgd-opts (s/keys :opt-un [::learning-rate ::momentum ::wd ::clip-gradient ::lr-scheduler]))

(defn sgd
  "Stochastic gradient descent, optionally with momentum: per step,
   mom = momentum * mom - lr * (grad + wd * weight); weight += mom.
   opts (clojure-mxnet's defaults): {:learning-rate 0.01 :momentum 0.0
   :wd 0.0001 :clip-gradient 0 (none) :lr-scheduler nil}"
  ([{:keys [learning-rate momentum wd clip-gradient lr-scheduler] :as opts
     :or {learning-rate 0.01
          momentum 0.0
          wd 0.0001
          clip-gradient 0}}]
   (util/validate-options! ::sgd-opts opts "Incorrect sgd optimizer options")
   (optimizer "sgd" {"learning_rate" learning-rate "momentum" momentum "wd" wd
                     "clip_gradient" clip-gradient "lr_scheduler" lr-scheduler}))
  ([]
   (sgd {})))

(s/def ::lambda number?)
(s/def ::dcasgd-opts (s/keys :opt-un [::learning-rate ::momentum ::lambda ::wd ::clip-gradient ::lr-scheduler]))

(defn dcasgd
  "SGD with delay compensation for asynchronous distributed training
   (Zheng et al., 2016): the gradient is corrected by lambda * grad^2 *
   (weight - the weight it was computed at).
   opts: {:learning-rate 0.01 :momentum 0.0 :lambda 0.04 :wd 0.0
   :clip-gradient 0 :lr-scheduler nil}"
  ([{:keys [learning-rate momentum lambda wd clip-gradient lr-scheduler] :as opts
     :or {learning-rate 0.01
          momentum 0.0
          lambda 0.04
          wd 0.0
          clip-gradient 0}}]
   (util/validate-options! ::dcasgd-opts opts "Incorrect dcasgd optimizer options")
   (optimizer "dcasgd" {"learning_rate" learning-rate "momentum" momentum "lamda" lambda "wd" wd
                        "clip_gradient" clip-gradient "lr_scheduler" lr-scheduler}))
  ([]
   (dcasgd {})))

(s/def ::nag-opts (s/keys :opt-un [::learning-rate ::momentum ::wd ::clip-gradient ::lr-scheduler]))

(defn nag
  "SGD with Nesterov momentum (the gradient is taken at the look-ahead
   point).
   opts: {:learning-rate 0.01 :momentum 0.0 :wd 0.0001 :clip-gradient 0
   :lr-scheduler nil}"
  ([{:keys [learning-rate momentum wd clip-gradient lr-scheduler] :as opts
     :or {learning-rate 0.01
          momentum 0.0
          wd 0.0001
          clip-gradient 0}}]
   (util/validate-options! ::nag-opts opts "Incorrect nag optimizer options")
   (optimizer "nag" {"learning_rate" learning-rate "momentum" momentum "wd" wd
                     "clip_gradient" clip-gradient "lr_scheduler" lr-scheduler}))
  ([]
   (nag {})))

(s/def ::rho number?)
(s/def ::rescale-gradient number?)
(s/def ::epsilon number?)
(s/def ::ada-delta-opts (s/keys :opt-un [::rho ::rescale-gradient ::epsilon ::wd ::clip-gradient]))

(defn ada-delta
  "AdaDelta (Zeiler, 2012): per-element steps from running averages of
   squared gradients and squared updates; no learning rate.
   opts: {:rho 0.05 :rescale-gradient 1.0 :epsilon 1e-8 :wd 0.0
   :clip-gradient 0}"
  ([{:keys [rho rescale-gradient epsilon wd clip-gradient] :as opts
     :or {rho 0.05
          rescale-gradient 1.0
          epsilon 1e-8
          wd 0.0
          clip-gradient 0}}]
   (util/validate-options! ::ada-delta-opts opts "Incorrect ada-delta optimizer options")
   (optimizer "adadelta" {"rho" rho "rescale_grad" rescale-gradient "epsilon" epsilon "wd" wd
                          "clip_gradient" clip-gradient}))
  ([]
   (ada-delta {})))

(s/def ::gamma1 number?)
(s/def ::gamma2 number?)
(s/def ::rms-prop-opts (s/keys :opt-un [::learning-rate ::rescale-gradient ::gamma1 ::gamma2 ::wd ::clip-gradient]))

(defn rms-prop
  "RMSProp, the centered variant (Graves, 2013), as clojure-mxnet's:
   steps scaled by running estimates of the gradient's mean and variance.
   opts: {:learning-rate 0.002 :rescale-gradient 1.0 :gamma1 0.95
   (decay of the averages) :gamma2 0.9 (momentum) :wd 0.0 :clip-gradient 0
   :lr-scheduler nil}"
  ([{:keys [learning-rate rescale-gradient gamma1 gamma2 wd lr-scheduler clip-gradient] :as opts
     :or {learning-rate 0.002
          rescale-gradient 1.0
          gamma1 0.95
          gamma2 0.9
          wd 0.0
          clip-gradient 0}}]
   (util/validate-options! ::rms-prop-opts opts "Incorrect rms-prop optimizer options")
   (optimizer "rmsprop" {"learning_rate" learning-rate "rescale_grad" rescale-gradient
                         "gamma1" gamma1 "gamma2" gamma2 "wd" wd "centered" true
                         "clip_gradient" clip-gradient "lr_scheduler" lr-scheduler}))
  ([]
   (rms-prop {})))

(s/def ::ada-grad-opts (s/keys :opt-un [::learning-rate ::rescale-gradient ::epsilon ::wd]))

(defn ada-grad
  "AdaGrad (Duchi, Hazan and Singer, 2011): each element's step shrinks
   with the sum of its squared gradients.
   opts: {:learning-rate 0.05 :rescale-gradient 1.0 :epsilon 1e-7 :wd 0.0}"
  ([{:keys [learning-rate rescale-gradient epsilon wd] :as opts
     :or {learning-rate 0.05
          rescale-gradient 1.0
          epsilon 1e-7
          wd 0.0}}]
   (util/validate-options! ::ada-grad-opts opts "Incorrect ada-grad optimizer options")
   (optimizer "adagrad" {"learning_rate" learning-rate "rescale_grad" rescale-gradient
                         "eps" epsilon "wd" wd}))
  ([]
   (ada-grad {})))

(s/def ::beta1 number?)
(s/def ::beta2 number?)
(s/def ::decay-factor number?)
(s/def ::adam-opts (s/keys :opt-un [::learning-rate ::beta1 ::beta2 ::epsilon ::decay-factor ::wd ::clip-gradient ::lr-scheduler]))

(defn adam
  "Adam (Kingma and Ba, 2014): steps from bias-corrected running averages
   of the gradient (beta1) and its square (beta2).
   opts: {:learning-rate 0.002 :beta1 0.9 :beta2 0.999 :epsilon 1e-8 :wd 0
   :clip-gradient 0 :lr-scheduler nil :decay-factor}
   :decay-factor: clojure-mxnet decayed beta1 by it each step; MXNet's Adam,
   which the engine runs, has none, so only a value that is 1 as a float is
   accepted (clojure-mxnet's default, 1 - 1e-8, is) and others are refused."
  ([{:keys [learning-rate beta1 beta2 epsilon decay-factor wd clip-gradient lr-scheduler] :as opts
     :or {learning-rate 0.002
          beta1 0.9
          beta2 0.999
          epsilon 1e-8
          wd 0
          clip-gradient 0}}]
   (util/validate-options! ::adam-opts opts "Incorrect adam optimizer options")
   (when (and decay-factor (not= (float decay-factor) (float 1.0)))
     (util/invalid! (str "adam's :decay-factor " decay-factor " is not supported: the engine runs "
                         "MXNet's Adam, which has no decay factor. clojure-mxnet's default (1 - 1e-8) "
                         "is 1.0 as a float and changes nothing; leave it out or use 1.")
                    {:decay-factor decay-factor}))
   (optimizer "adam" {"learning_rate" learning-rate "beta1" beta1 "beta2" beta2 "epsilon" epsilon
                      "wd" wd "clip_gradient" clip-gradient "lr_scheduler" lr-scheduler}))
  ([]
   (adam {})))

(s/def ::sgld-opts (s/keys :opt-un [::learning-rate ::rescale-gradient ::wd ::clip-gradient ::lr-scheduler]))

(defn sgld
  "Stochastic gradient Langevin dynamics: SGD plus Gaussian noise scaled to
   the learning rate, to sample weights from a posterior.
   opts: {:learning-rate 0.01 :rescale-gradient 1 :wd 0.0001
   :clip-gradient 0 :lr-scheduler nil}"
  ([{:keys [learning-rate rescale-gradient wd clip-gradient lr-scheduler] :as opts
     :or {learning-rate 0.01
          rescale-gradient 1
          wd 0.0001
          clip-gradient 0}}]
   (util/validate-options! ::sgld-opts opts "Incorrect sgld optimizer options")
   (optimizer "sgld" {"learning_rate" learning-rate "rescale_grad" rescale-gradient "wd" wd
                      "clip_gradient" clip-gradient "lr_scheduler" lr-scheduler}))
  ([]
   (sgld {})))

;;; ------------------------------------------------------------------ updating by hand

(s/def ::index int?)

(defn- engine-optimizer
  "The engine optimizer for `optimizer` on the default engine: the one kept
   with the value when it is current, else a new one (kept when possible)."
  ^EngineOptimizer [optimizer]
  (check! optimizer)
  (let [conn (bridge/connection)
        spec [(:name optimizer) (:params optimizer)]
        cell (::engine (meta optimizer))
        ;; (not an EngineOptimizer of this namespace's class when it was reloaded)
        current (some-> cell deref)
        ^EngineOptimizer current (when (instance? EngineOptimizer current) current)]
    (if (and current (identical? conn (.-conn current)) (= spec (.-spec current))
             (not (.isReleased ^Handles$Handle (.-handle current))))
      current
      (let [id (bridge/call conn "opt.create" spec)
            made (bridge/tracked conn id #(EngineOptimizer. conn % spec))]
        (when cell (reset! cell made))
        made))))

(defn- state-out
  "An engine state description as Clojure: nil, an NDArray or a vector."
  [conn st]
  (cond
    (nil? st) nil
    (contains? st :list) (mapv #(state-out conn %) (:list st))
    :else (ndarray/wrap conn (:nd st))))

(defn- state-in
  "A state (nil, an NDArray or a vector of them) as the engine reads it."
  [st]
  (cond
    (nil? st) nil
    (ndarray/ndarray? st) {:nd (ndarray/handle st)}
    (sequential? st) {:list (mapv state-in st)}
    :else (util/invalid! (str "an optimizer state is nil, an NDArray or a vector of them "
                              "(from create-state), got " (.getName (class st)))
                         {:state st})))

(defn create-state
  "Create additional optimizer state such as momentum, for the weight with
   key `index` (an int): nil (the optimizer keeps none), an NDArray, or a
   vector of NDArrays (Adam's mean and variance), as the store's updater
   creates it."
  [optimizer index weight]
  (util/validate! ::index index "Invalid index")
  (util/validate! ::ndarray/ndarray weight "Invalid weight")
  (let [eo (engine-optimizer optimizer)
        conn (.-conn eo)]
    (state-out conn (bridge/call conn "opt.create_state"
                                 [(bridge/handle-id (.-handle eo) "optimizer") index
                                  (ndarray/handle weight)]))))

(defn update
  "Update the parameters: applies one step of `optimizer` to `weight` (an
   NDArray, in place) with gradient `grad`, and updates `state` (what
   `create-state` returned for this weight) in place, exactly as a store
   with this optimizer updates a pushed key. Returns the optimizer.
   - index  a unique int key for the weight (its update count drives
            schedules and Adam's bias correction)"
  [optimizer index weight grad state]
  (util/validate! ::index index "Invalid index")
  (util/validate! ::ndarray/ndarray weight "Invalid weight")
  (util/validate! ::ndarray/ndarray grad "Invalid gradient")
  (let [eo (engine-optimizer optimizer)
        st (state-in state)]
    (bridge/call (.-conn eo) "opt.update"
                 [(bridge/handle-id (.-handle eo) "optimizer") index (ndarray/handle weight)
                  (ndarray/handle grad) st])
    optimizer))
