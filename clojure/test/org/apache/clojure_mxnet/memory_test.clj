(ns org.apache.clojure-mxnet.memory-test
  "Engine memory is bounded although the JVM cannot see it: a loop that makes
   and drops large arrays, with no explicit GC, stays within the handles'
   budget (MXKV_ENGINE_GC_MB, default 128 MiB): the JVM runs a GC when the
   arrays its collectable handles hold pass it. MXKV_TEST_DROP_ARRAYS sets
   how many 1 MB arrays (default 2000)."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.resource-scope :as resource-scope]
            [org.apache.clojure-mxnet.test-support :refer [with-connection]]
            [org.apache.clojure-mxnet.util :as util]))

(set! *warn-on-reflection* true)

(def ^:private MB (* 1024 1024))

(def ^:private arrays
  (util/env-long "MXKV_TEST_DROP_ARRAYS" 2000 1))

(def ^:private limit
  "The issue's bound on the engine's growth under this workload."
  (* 256 MB))

(deftest dropped-arrays-keep-the-engine-within-its-budget-without-an-explicit-gc
  (with-connection
    (bridge/start)
    (fn [conn]
      (ndarray/ones [4])
      (let [start (bridge/call conn "memory" [true])
            peak-held (volatile! 0)
            t0 (System/nanoTime)]
        (dotimes [i arrays]
          (ndarray/ones [(quot MB 4)]) ; 1 MB, dropped at once
          (when (zero? (mod i 25))
            (vswap! peak-held max (long (:held (bridge/call conn "memory"))))))
        (let [end (bridge/call conn "memory")
              grew (- (long (:rss_peak end)) (long (:rss start)))
              {:keys [collections gc-at]} (bridge/handle-stats conn)
              secs (/ (- (System/nanoTime) t0) 1e9)]
          (println (format (str "memory-test: %d dropped 1 MB arrays over %s in %.1f s: held at most "
                                "%d MB, process peak +%d MB, %d GCs, gc-at %d MB")
                           arrays (name (bridge/kind conn)) secs (quot @peak-held MB)
                           (quot grew MB) collections (quot (long gc-at) MB)))
          (is (< @peak-held limit) "the arrays the engine holds stay bounded")
          (when (= :py4j (bridge/kind conn))
            ;; the engine is a process of its own: its whole memory is the measure
            (is (< grew limit) (str "the engine process grew " (quot grew MB) " MB")))
          (when (> (* arrays MB) (* 2 (long gc-at)))
            (is (pos? collections) "the JVM collected because of engine memory")))))))

(deftest held-arrays-are-never-freed-and-a-scope-frees-at-once
  (with-connection
    (bridge/start)
    (fn [conn]
      (let [held (vec (repeatedly 300 #(ndarray/ones [(quot MB 4)])))]
        (is (>= (long (:held (bridge/call conn "memory"))) (* 300 MB)) "all 300 MB are there")
        (is (every? #(= 1.0 (first (ndarray/->vec %))) (take-nth 50 held)))
        (testing "the budget grew past what is held, instead of collecting at every array"
          (let [{:keys [gc-at collections]} (bridge/handle-stats conn)]
            (is (> (long gc-at) (* 300 MB)))
            (is (< (long collections) 10))))
        (resource-scope/using
         (dotimes [_ 50] (ndarray/ones [(quot MB 4)])))
        (is (< (long (:held (bridge/call conn "memory"))) (* 301 MB))
            "a closing scope freed its arrays at once")
        (is (= 300 (count held)) "held to the end")))))
