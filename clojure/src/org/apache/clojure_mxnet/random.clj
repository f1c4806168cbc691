(ns org.apache.clojure-mxnet.random
  "Random arrays, as clojure-mxnet's random namespace: `uniform`, `normal`
   and `seed`.

   Numbers are drawn by the engine's `mx.random` (numpy's generator on a
   CPU), so after (seed 42) a Clojure program draws the same numbers as a
   Python one after mx.random.seed(42) with the same calls; they are not
   the numbers MXNet itself draws."
  (:require [clojure.spec.alpha :as s]
            [org.apache.clojure-mxnet.context :as context]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.context Context)))

(set! *warn-on-reflection* true)

(s/def ::low number?)
(s/def ::high number?)
(s/def ::low-high (fn [[low high]] (<= low high)))
(s/def ::shape-vec (s/coll-of pos-int? :kind vector?))
(s/def ::ctx #(instance? Context %))
(s/def ::out ndarray/ndarray?)
(s/def ::uniform-opts (s/keys :opt-un [::ctx ::out]))
(s/def ::loc number?)
(s/def ::scale (s/and number? pos?))
(s/def ::normal-opts (s/keys :opt-un [::ctx ::out]))
(s/def ::seed-state number?)

(defn- draw [kind a b shape-vec {:keys [ctx out]}]
  (let [^Context ctx (or ctx (if out (ndarray/context out) (context/default-context)))]
    (when (and out (not= shape-vec (ndarray/shape-vec out)))
      (util/invalid! (str "random " kind ": :out has shape " (ndarray/shape-vec out)
                          ", not " shape-vec)
                     {:shape shape-vec}))
    (ndarray/random-call "random.draw"
                         [kind [(double a) (double b)] shape-vec
                          (context/device-type ctx) (context/device-id ctx)
                          (if out (str (ndarray/dtype out)) "float32")
                          (when out (ndarray/handle out))]
                         out)))

(defn uniform
  "Samples from the uniform distribution on [`low`, `high`): a new float32
   NDArray of shape `shape-vec` (a vector of positive ints).
    `opts-map` {`ctx`: the Context of the result (default: the default
                       context),
                `out`: an NDArray of that shape to write into and return}
   Ex:
     (uniform 0 1 [1 10])
     (uniform -10 10 [100 100] {:ctx (context/cpu)})"
  ([low high shape-vec {:keys [ctx out] :as opts}]
   (util/validate! ::uniform-opts opts "Incorrect random uniform parameters")
   (util/validate! ::low low "Incorrect random uniform parameter")
   (util/validate! ::high high "Incorrect random uniform parameters")
   (util/validate! ::low-high [low high] "Incorrect random uniform parameters")
   (util/validate! ::shape-vec shape-vec "Incorrect random uniform parameters")
   (draw "uniform" low high shape-vec opts))
  ([low high shape-vec]
   (uniform low high shape-vec {})))

(defn normal
  "Samples from the normal distribution N(`loc`, `scale`^2): a new float32
   NDArray of shape `shape-vec` (a vector of positive ints).
    `opts-map` {`ctx`: the Context of the result,
                `out`: an NDArray of that shape to write into and return}
   Ex:
     (normal 0 1 [10 10])
     (normal -5 4 [2 3])"
  ([loc scale shape-vec {:keys [ctx out] :as opts}]
   (util/validate! ::normal-opts opts "Incorrect random normal parameters")
   (util/validate! ::loc loc "Incorrect random normal parameters")
   (util/validate! ::scale scale "Incorrect random normal parameters")
   (util/validate! ::shape-vec shape-vec "Incorrect random normal parameters")
   (draw "normal" loc scale shape-vec opts))
  ([loc scale shape-vec]
   (normal loc scale shape-vec {})))

(defn seed
  "Seeds the engine's random generators with `seed-state` (a number, taken
   as an int): the draws that follow, here and by the engine's Python
   callers (mx.random), repeat.
   Ex:
     (seed 42)
     (seed 42.0)"
  [seed-state]
  (util/validate! ::seed-state seed-state "Incorrect seed parameters")
  (ndarray/random-call "random.seed" [(long seed-state)] nil)
  nil)
