(ns org.apache.clojure-mxnet.base
  "Constants clojure-mxnet kept here."
  (:require [org.apache.clojure-mxnet.dtype :as dtype]))

(def MX_REAL_TYPE
  "The default element type of NDArrays."
  dtype/FLOAT32)
