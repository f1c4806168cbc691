(ns org.apache.clojure-mxnet.util
  "Helpers shared by the API namespaces: spec validation with clojure-mxnet's
   messages, key-name conversion, n-dimensional sequence shapes."
  (:require [clojure.spec.alpha :as s]
            [clojure.string :as string]))

(defn validate!
  "Throws ex-info with `error-msg` (for example \"Invalid keys\") and the
   spec's explain-data, plus `:type :invalid-argument`, unless `value`
   conforms to `spec`. Prints the explanation, as clojure-mxnet did."
  [spec value error-msg]
  (when-not (s/valid? spec value)
    (s/explain spec value)
    (throw (ex-info error-msg
                    (assoc (s/explain-data spec value) :type :invalid-argument)))))

(defn keyword->snake-case
  "Transforms a keyword `kw` into a snake-case string.
  Ex:
    (keyword->snake-case :foo-bar) ;\"foo_bar\"
    (keyword->snake-case :foo)     ;\"foo\""
  [kw]
  (if (keyword? kw)
    (string/replace (name kw) "-" "_")
    kw))

(defn convert-map
  "A map with snake-case string keys (for parameters sent to the engine)."
  [param]
  (into {} (map (fn [[k v]] [(keyword->snake-case (if (symbol? k) (name k) k)) v])) param))

(s/def ::non-empty-seq (s/and sequential? not-empty))

(defn to-array-nd
  "Converts any N-D sequential structure to an array
   with the same dimensions."
  [nd-seq]
  (validate! ::non-empty-seq nd-seq "Invalid N-D sequence")
  (if (sequential? (first nd-seq))
    (to-array (mapv to-array-nd nd-seq))
    (to-array nd-seq)))

(defn nd-seq-shape
  "Computes the shape of a n-dimensional sequential structure"
  [nd-seq]
  (validate! ::non-empty-seq nd-seq "Invalid N-D sequence")
  (loop [s nd-seq
         shape [(count s)]]
    (if (sequential? (first s))
      (recur (first s) (conj shape (count (first s))))
      shape)))
