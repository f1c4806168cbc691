(ns org.apache.clojure-mxnet.shape
  "Array shapes: a Shape value prints as (2,3) and equals another Shape with
   the same dimensions."
  (:refer-clojure :exclude [vector]))

(set! *warn-on-reflection* true)

(deftype Shape [dims]
  Object
  (equals [_ o] (and (instance? Shape o) (= dims (.-dims ^Shape o))))
  (hashCode [_] (hash dims))
  (toString [_] (str "(" (clojure.string/join "," dims) ")")))

(defmethod print-method Shape [^Shape s ^java.io.Writer w]
  (.write w (str "#<Shape " s ">")))

(defn ->shape
  "A Shape from a vector of dimensions, e.g. (->shape [2 3])."
  [v]
  (if (instance? Shape v) v (Shape. (mapv long v))))

(defn ->vec
  "The dimensions of a Shape as a vector."
  [shape-obj]
  (if (instance? Shape shape-obj) (.-dims ^Shape shape-obj) (vec shape-obj)))

(defn length
  "Number of dimensions."
  [shape-obj]
  (count (->vec shape-obj)))

(defn product
  "Number of elements."
  [shape]
  (reduce * 1 (->vec shape)))
