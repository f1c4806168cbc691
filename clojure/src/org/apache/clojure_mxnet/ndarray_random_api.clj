(ns org.apache.clojure-mxnet.ndarray-random-api
  "Random NDArrays in clojure-mxnet's ndarray-random-api form, for the
   distributions mxkv implements: one map of arguments by name (and the
   required ones by position where there are two or more).
   Ex:
     (uniform {:low -1 :high 1 :shape [2 3]})
     (normal {:loc 0 :scale 0.1 :shape [10] :dtype \"float64\"})
     (randint -3 7)   (randint {:low 0 :high 10 :shape [4] :out a})

   `:shape` is a vector or MXNet's text form \"(2,3)\" (default [1]),
   `:ctx` a Context or \"cpu(0)\", `:out` an NDArray to write into and
   return. Drawn by the engine's mx.random, like the random namespace, so
   random/seed makes them repeat."
  (:require [clojure.string :as string]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.util :as util]))

(set! *warn-on-reflection* true)

(defn- engine-value
  "A value as the engine reads it: numbers, strings, vectors as they are, a
   keyword by its name, anything else (a Context, a DType) by its text."
  [v]
  (cond (keyword? v) (name v)
        (or (nil? v) (number? v) (string? v) (boolean? v) (sequential? v)) v
        :else (str v)))

(defn- draw [fname op-name accepted m]
  (when-not (map? m)
    (util/invalid! (str fname " takes a map of arguments by name, got "
                        (if (nil? m) "nil" (.getName (class m))))
                   {:value m}))
  (let [unknown (remove (set (conj accepted :out)) (keys m))]
    (when (seq unknown)
      (util/invalid! (str fname ": unknown argument " (string/join ", " unknown)
                          "; it takes " (string/join ", " (conj accepted :out)))
                     {:keys (vec unknown) :accepted (conj accepted :out)})))
  (ndarray/random-call "random.invoke"
                       [op-name [] (util/convert-map
                                    (into {} (map (fn [[k v]] [k (engine-value v)]))
                                          (dissoc m :out)))
                        (some-> (:out m) ndarray/handle)]
                       (:out m)))

(defn uniform
  "Samples from U[low, high) (defaults 0, 1).
   {:low :high :shape :ctx :dtype :out}"
  ([] (uniform {}))
  ([opts] (draw "uniform" "random_uniform" [:low :high :shape :ctx :dtype] opts)))

(defn normal
  "Samples from N(loc, scale^2) (defaults 0, 1).
   {:loc :scale :shape :ctx :dtype :out}"
  ([] (normal {}))
  ([opts] (draw "normal" "random_normal" [:loc :scale :shape :ctx :dtype] opts)))

(defn gamma
  "Samples from the gamma distribution of shape alpha and scale beta
   (defaults 1, 1). {:alpha :beta :shape :ctx :dtype :out}"
  ([] (gamma {}))
  ([opts] (draw "gamma" "random_gamma" [:alpha :beta :shape :ctx :dtype] opts)))

(defn randint
  "Integers drawn uniformly from [low, high) (int32 by default).
   (randint low high) or {:low :high :shape :ctx :dtype :out}"
  ([low high] (randint {:low low :high high}))
  ([opts] (draw "randint" "random_randint" [:low :high :shape :ctx :dtype] opts)))
