(ns mxkv.test-runner
  "Runs the clojure.test namespaces found under a directory (one engine for
   the whole run) and exits with the number of failures and errors.

   Usage: clojure -M -m mxkv.test-runner DIR [NS-REGEX...]"
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :as t]
            [org.apache.clojure-mxnet.bridge :as bridge]))

(defn test-namespaces
  "Namespace symbols of the *_test.clj files under `dir`."
  [dir]
  (let [root (.getCanonicalFile (io/file dir))
        base (count (str (.getPath root) "/"))]
    (->> (file-seq root)
         (filter #(str/ends-with? (.getName ^java.io.File %) "_test.clj"))
         (map #(-> (subs (.getPath (.getCanonicalFile ^java.io.File %)) base)
                   (str/replace #"\.clj$" "")
                   (str/replace "/" ".")
                   (str/replace "_" "-")
                   symbol))
         sort)))

(defn -main [dir & patterns]
  (let [nses (cond->> (test-namespaces dir)
               (seq patterns) (filter (fn [n] (some #(re-find (re-pattern %) (str n)) patterns))))
        _ (apply require nses)
        start (System/nanoTime)
        {:keys [test pass fail error] :as summary} (apply t/run-tests nses)
        secs (/ (- (System/nanoTime) start) 1e9)]
    (println (format "\nmxkv clojure suite: %d namespaces, %d tests, %d assertions, %d failures, %d errors (%.1f s)"
                     (count nses) test (+ pass fail error) fail error secs))
    ;; the plain closing line CI reads: assertions passed and failed
    (println (format "clojure: %d passed, %d failed" pass (+ fail error)))
    (flush)
    ;; Close the engine first: in a JVM that Python hosts (JPype), a thread
    ;; still calling into Python when the process exits crashes it.
    (bridge/close!)
    (System/exit (if (zero? (+ fail error)) 0 1))))
