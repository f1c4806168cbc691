(ns org.apache.clojure-mxnet.deadlines-test
  "Deadlines that hold for every thread. With MXKV_CALL_TIMEOUT_MS at one
   second and an engine that cannot answer (over Py4J frozen by SIGSTOP;
   over JPype busy with another call, as the engine is this process), every
   call pending on every thread, 8 and 32 of them, fails with
   :engine-timeout within its deadline plus a margin, not one after another;
   once the engine answers again, every thread's next call works.
   The margin (MXKV_TEST_DEADLINE_MARGIN_MS, default 1500 ms) is generous
   for a loaded 2-core machine, and still fails when calls time out one
   after another (a second each)."
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]
            [org.apache.clojure-mxnet.test-support :refer [with-connection]]
            [org.apache.clojure-mxnet.util :as util])
  (:import (clojure.lang ExceptionInfo)
           (java.util.concurrent CountDownLatch)))

(set! *warn-on-reflection* true)

(def ^:private timeout-ms 1000)

(def ^:private margin-ms
  (util/env-long "MXKV_TEST_DEADLINE_MARGIN_MS" 1500 0))

(defn- signal! [sig pid]
  (.waitFor (.start (ProcessBuilder. ^java.util.List (list "kill" (str "-" sig) (str pid))))))

(defn- stopped? [pid]
  (let [stat (String. (java.nio.file.Files/readAllBytes (.toPath (io/file "/proc" (str pid) "stat"))))]
    (= "T" (second (re-find #"\) (\S)" stat)))))

(defn- wait-until [ms pred]
  (let [deadline (+ (System/currentTimeMillis) ms)]
    (loop []
      (or (pred)
          (when (< (System/currentTimeMillis) deadline)
            (Thread/sleep 10)
            (recur))))))

(defn- start [kind]
  (if (= :py4j kind)
    (bridge/start-py4j {:call-timeout-ms timeout-ms})
    (bridge/start-jpype {:call-timeout-ms timeout-ms})))

(defn- calls-on-threads
  "Runs (f) once on each of `n` new threads, all at once; for each, [the
   ex-info it threw or nil, ms it took]."
  [n f]
  (let [go (CountDownLatch. 1)
        futs (vec (for [_ (range n)]
                    (future
                      (.await go)
                      (let [t0 (System/nanoTime)
                            e (try (f) nil (catch ExceptionInfo e e))]
                        [e (/ (- (System/nanoTime) t0) 1e6)]))))]
    (.countDown go)
    ;; a hung call shows as :hung after a minute, not as a hung suite
    (mapv #(deref % 60000 [:hung 60000.0]) futs)))

(defn- check-all-time-out [n outcomes]
  (let [slowest (apply max (map second outcomes))]
    (doseq [[e ms] outcomes]
      (is (= :engine-timeout (:type (ex-data e))) (str n " threads: " (if (= :hung e) "hung" (ex-message e))))
      (is (<= ms (+ timeout-ms margin-ms)) (str n " threads: an error came after " ms " ms")))
    slowest))

(deftest every-pending-call-on-every-thread-fails-by-its-deadline
  (doseq [n [8 32]]
    (with-connection
      (start (bridge/transport))
      (fn [conn]
        (let [kv (doto (kvstore/create)
                   (kvstore/init "w" (ndarray/zeros [2]))
                   ;; every push adds to "w": what ran can be counted
                   (kvstore/set-optimizer (optimizer/->Optimizer "test" {"rescale_grad" 1.0})))
              g (ndarray/ones [2])
              out (ndarray/zeros [2])
              py4j? (= :py4j (bridge/kind conn))
              pid (:pid conn)
              ;; JPype: the engine is this process; it is held busy instead
              busy (when-not py4j? (future (bridge/call conn "sleep" [4.0])))
              outcomes (if py4j?
                         (try
                           (signal! "STOP" pid)
                           (is (wait-until 60000 #(stopped? pid)) "the engine is stopped")
                           (calls-on-threads n #(kvstore/push kv "w" g))
                           (finally (signal! "CONT" pid)))
                         (do (Thread/sleep 200) ; the sleep has the engine
                             (calls-on-threads n #(kvstore/push kv "w" g))))
              slowest (check-all-time-out n outcomes)]
          (when busy (deref busy 10000 :hung))
          (println (format "deadlines-test: %s, %d threads, engine %s, MXKV_CALL_TIMEOUT_MS=%d: %d/%d :engine-timeout, slowest after %.0f ms"
                           (name (bridge/kind conn)) n (if py4j? "frozen (SIGSTOP)" "busy") timeout-ms
                           (count (filter #(= :engine-timeout (:type (ex-data (first %)))) outcomes))
                           n (double slowest)))
          (testing "after the engine answers again, every thread's next call works"
            ;; (resumed, the engine first drains the connections the frozen
            ;; calls left behind)
            (is (wait-until 20000 #(try (nil? (bridge/call conn "noop")) (catch ExceptionInfo _ false)))
                "the engine answers again")
            (let [after (calls-on-threads n #(kvstore/push kv "w" g))]
              (is (every? nil? (map first after))
                  (str (vec (keep #(some-> (first %) ex-message) after))))))
          (kvstore/pull kv "w" out)
          (is (= [(double n) (double n)] (ndarray/->vec out))
              "only the calls made after it answered were applied"))))))
