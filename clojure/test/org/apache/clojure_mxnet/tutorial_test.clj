(ns org.apache.clojure-mxnet.tutorial-test
  "The KVStore tutorial, verbatim (clojure/tutorial/kvstore.clj), evaluated
   form by form: every ;=> value must print as written."
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [mxkv.transcript :as transcript]))

(defn- tutorial-file []
  (let [f (io/file (or (System/getenv "MXKV_HOME") ".") "clojure" "tutorial" "kvstore.clj")]
    (if (.exists f)
      f
      (io/file (.getParentFile (io/file (io/resource "mxkv/transcript.clj"))) ".." ".." "tutorial" "kvstore.clj"))))

(deftest the-tutorial-prints-its-values
  (let [out (java.io.StringWriter.)
        result (binding [*out* out] (transcript/run (tutorial-file)))]
    (is (= 24 (:forms result)))
    (is (= 5 (:checked result)))
    (is (empty? (:failures result)) (str out))
    (is (re-find #"\[2\.0 2\.0 2\.0 2\.0 2\.0 2\.0\]" (str out)))))
