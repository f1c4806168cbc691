(ns org.apache.clojure-mxnet.ndarray-random-api
  "Random NDArrays in clojure-mxnet's ndarray-random-api form, generated from
   the engine's operator table (MXNet's random_X as X, sample_X as X-like,
   random_pdf_X as pdf-X): one map of arguments by name (and the required
   ones by position where there are other than one).
   Ex:
     (uniform {:low -1 :high 1 :shape [2 3]})
     (normal {:loc 0 :scale 0.1 :shape [10] :dtype \"float64\"})
     (randint -3 7)   (randint {:low 0 :high 10 :shape [4] :out a})

   `:shape` is a vector or MXNet's text form \"(2,3)\" (none: a 0-d array),
   `:ctx` a Context or \"cpu(0)\", `:out` an NDArray to write into and
   return. Drawn by the engine's mx.random, like the random namespace, so
   random/seed makes them repeat."
  (:require [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.ndarray-api :as api]))

(set! *warn-on-reflection* true)

(def generated-operators
  "The names of the functions generated in this namespace."
  (ndarray/intern-operators! *ns* :random-api api/api-function))
