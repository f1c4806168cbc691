(ns org.apache.clojure-mxnet.tutorial-test
  "clojure-mxnet's KVStore and NDArray tutorials, verbatim
   (clojure/tutorial/*.clj), evaluated form by form: every ;=> value must
   print as written, or match structurally where the original printed
   unreadable objects."
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [mxkv.transcript :as transcript]
            [org.apache.clojure-mxnet.shape :as mx-shape]))

(defn- tutorial-file [fname]
  (let [f (io/file (or (System/getenv "MXKV_HOME") ".") "clojure" "tutorial" fname)]
    (if (.exists f)
      f
      (io/file (.getParentFile (io/file (io/resource "mxkv/transcript.clj"))) ".." ".." "tutorial" fname))))

(defn- run-quietly [fname]
  (let [out (java.io.StringWriter.)
        result (binding [*out* out] (transcript/run (tutorial-file fname)))]
    (assoc result :out (str out))))

(deftest the-kvstore-tutorial-prints-its-values
  (let [{:keys [forms checked failures out]} (run-quietly "kvstore.clj")]
    (is (= 24 forms))
    (is (= 5 checked))
    (is (empty? failures) out)
    (is (re-find #"\[2\.0 2\.0 2\.0 2\.0 2\.0 2\.0\]" out))))

(deftest the-ndarray-tutorial-prints-its-values
  ;; The tutorial saves to "filename" in the working directory.
  (let [saved (io/file "filename")
        existed? (.exists saved)]
    (try
      (let [{:keys [forms checked failures out]} (run-quietly "ndarray.clj")]
        (is (= 32 forms))
        (is (= 15 checked))
        (is (empty? failures) out)
        (is (re-find #"(?m)^\[11\.0\]$" out) "the dot product")
        (is (re-find #"(?m)^#<Shape \(2,3\)>$" out))
        (is (re-find #"(?m)^#<Context cpu\(0\)>$" out))
        (is (re-find #"\{\"arr1\" #<NDArray \[1 2\] float32 cpu\(0\)>, \"arr2\" #<NDArray \[2 1\] float32 cpu\(0\)>\}" out)))
      (finally
        (when-not existed? (.delete saved))))))

(deftest unreadable-expectations-match-by-text-or-class
  (let [check #'transcript/check]
    (is (check "#object[org.apache.mxnet.Shape 0x583c865 \"(2,3)\"]"
               (mx-shape/->shape [2 3]) "#<Shape (2,3)>"))
    (is (not (check "#object[org.apache.mxnet.Shape 0x583c865 \"(2,3)\"]"
                    (mx-shape/->shape [3 2]) "#<Shape (3,2)>")))
    (is (check "{\"a\" #object[x.y.Shape 0x1 \"x.y.Shape@5c93def4\"]}"
               {"a" (mx-shape/->shape [1])} "{...}"))
    (is (not (check "{\"a\" #object[x.y.NDArray 0x1 \"x.y.NDArray@5c93def4\"]}"
                    {"a" (mx-shape/->shape [1])} "{...}"))
        "ClassName@hash needs that class")
    (is (not (check "{\"a\" #object[x.y.Shape 0x1 \"x.y.Shape@1\"]}" {"b" 1} "{\"b\" 1}"))
        "the keys must be the same")
    (is (check "[1.0 2.0]" [1.0 2.0] "[1.0  2.0]") "plain data compares as printed")))
