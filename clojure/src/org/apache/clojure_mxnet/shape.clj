(ns org.apache.clojure-mxnet.shape
  "Array shapes: a Shape value prints as (2,3) and equals another Shape with
   the same dimensions. Dimensions are ints, as clojure-mxnet's were."
  (:refer-clojure :exclude [vector])
  (:import (org.apache.clojure_mxnet.shape Shape)))

(set! *warn-on-reflection* true)

;; Shape is a JVM class (org.apache.clojure_mxnet.shape.Shape) that survives
;; reloading this namespace.

(defn ->Shape
  "The Shape of dimensions `dims` (a vector of ints), unchecked (see `->shape`)."
  [dims]
  (Shape. dims))

(defmethod print-method Shape [^Shape s ^java.io.Writer w]
  (.write w (str "#<Shape " s ">")))

(defn ->shape
  "A Shape from a vector of dimensions, e.g. (->shape [2 3]); a Shape is
   returned as it is."
  [v]
  (if (instance? Shape v) v (Shape. (mapv int v))))

(defn ->vec
  "The dimensions of a Shape as a vector of ints, e.g. [2 3]."
  [shape-obj]
  (if (instance? Shape shape-obj) (.-dims ^Shape shape-obj) (mapv int shape-obj)))

(defn length
  "Number of dimensions of a Shape (an int)."
  [shape-obj]
  (int (count (->vec shape-obj))))

(defn product
  "Number of elements of a Shape: the product of its dimensions (an int)."
  [shape]
  (int (reduce * 1 (->vec shape))))
