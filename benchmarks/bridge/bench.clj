(ns bench
  "JVM half of the bridge benchmark, driven by bench_bridge.py over stdin:
   each command line is answered with one line of JSON (times in microseconds).
     small N   N no-op calls, pushes, pulls and push+pull pairs of a 2x3 array,
               interleaved in batches so they share the machine's conditions
     vec N     N ndarray/->vec of the big array
     array N   N ndarray/array of a float[] as large
     info      the engine's info
     quit"
  (:require [clojure.string :as str]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray])
  (:import (org.apache.clojure_mxnet.bridge Engine)))

(set! *warn-on-reflection* true)

(defn- time-us ^double [f]
  (let [t0 (System/nanoTime)]
    (f)
    (/ (- (System/nanoTime) t0) 1e3)))

(defn- samples [n f] (vec (repeatedly n #(time-us f))))

(defn -main [& [mb-str]]
  (let [mb (Long/parseLong (or mb-str "64"))
        conn (bridge/connection)
        ^Engine engine (:engine conn)
        kv (kvstore/create "local")
        shape [2 3]
        v (ndarray/ones shape)
        out (ndarray/zeros shape)
        _ (kvstore/init kv "3" (ndarray/zeros shape))
        floats (int (/ (* mb 1024 1024) 4))
        big (ndarray/ones [floats])
        src (float-array floats 1.0)
        ops {:noop #(.call engine "noop" "")
             :push #(kvstore/push kv "3" v)
             :pull #(kvstore/pull kv "3" out)
             :push_pull #(do (kvstore/push kv "3" v) (kvstore/pull kv "3" out))}]
    (doseq [[_ f] ops] (dotimes [_ 300] (f)))
    (dotimes [_ 2] (ndarray/->vec big))
    (println (bridge/->json {:ready true :bytes (* 4 floats)}))
    (flush)
    (loop []
      (when-let [line (read-line)]
        (let [[cmd n-str] (str/split (str/trim line) #"\s+")
              n (Long/parseLong (or n-str "1"))]
          (case cmd
            "small" (let [batches 10
                          per (max 1 (quot n batches))
                          acc (reduce (fn [acc _]
                                        (reduce (fn [acc [k f]] (update acc k into (samples per f)))
                                                acc ops))
                                      (zipmap (keys ops) (repeat []))
                                      (range batches))]
                      (println (bridge/->json acc)))
            "vec" (println (bridge/->json (samples n #(when-not (= floats (count (ndarray/->vec big)))
                                                          (throw (Exception. "short read"))))))
            "array" (println (bridge/->json (samples n #(ndarray/dispose (ndarray/array src [floats])))))
            "info" (println (bridge/->json (bridge/info)))
            "quit" nil)
          (flush)
          (when-not (= cmd "quit") (recur)))))
    (bridge/close!)
    (shutdown-agents)))

(apply -main *command-line-args*)
