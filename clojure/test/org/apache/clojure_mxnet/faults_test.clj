(ns org.apache.clojure-mxnet.faults-test
  "Process faults, and calls that are never applied twice. A frozen engine
   (SIGSTOP) gives :engine-timeout within a second of the call timeout, and
   the call it held is dropped when the engine resumes (:may-have-run false:
   safe to retry); a call the engine had started says :may-have-run true; a
   killed engine, even under load from eight threads, is :engine-dead at
   once, leaves no files behind, and restart! works right away. Over JPype
   the engine is this process: the same promises are tested with a busy
   engine and a closed one. (A killed JVM is tests/test_bridge_py4j.py.)
   MXKV_TEST_KILL_TRIALS sets how many engines are killed (default 3)."
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.bridge.errors :as errors]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]
            [org.apache.clojure-mxnet.test-support :refer [wait-until with-connection]]
            [org.apache.clojure-mxnet.util :as util])
  (:import (clojure.lang ExceptionInfo)
           (java.util.concurrent CountDownLatch TimeUnit)
           (org.apache.clojure_mxnet.bridge Py4JTransport)))

(set! *warn-on-reflection* true)

(def ^:private kill-trials
  (util/env-long "MXKV_TEST_KILL_TRIALS" 3 1))

(defn- signal! [sig pid]
  (.waitFor (.start (ProcessBuilder. ^java.util.List (list "kill" (str "-" sig) (str pid))))))

(defn- stopped?
  "True when process `pid` is stopped (state T in /proc)."
  [pid]
  (let [stat (String. (java.nio.file.Files/readAllBytes (.toPath (io/file "/proc" (str pid) "stat"))))]
    (= "T" (second (re-find #"\) (\S)" stat)))))

(defn- timed
  "[the ex-info (f) threw, or nil; milliseconds it took]."
  [f]
  (let [t0 (System/nanoTime)
        e (try (f) nil (catch ExceptionInfo e e))]
    [e (/ (- (System/nanoTime) t0) 1e6)]))

(defn- adder
  "A store whose key \"w\" (4 zeros) adds every push to itself."
  []
  (doto (kvstore/create)
    (kvstore/init "w" (ndarray/zeros [4]))
    (kvstore/set-optimizer (optimizer/->Optimizer "test" {"rescale_grad" 1.0}))))

(defn- value [kv]
  (let [out (ndarray/zeros [4])]
    (kvstore/pull kv "w" out)
    (first (ndarray/->vec out))))

(defn- start [timeout-ms]
  (if (= :py4j (bridge/transport))
    (bridge/start-py4j {:call-timeout-ms timeout-ms})
    (bridge/start-jpype {:call-timeout-ms timeout-ms})))

;;; ------------------------------------------------------------------ timeouts

(deftest a-call-the-engine-could-not-start-in-time-is-never-applied
  ;; 500 ms: short, but long enough that the calls setting up the store stay
  ;; far within it on a loaded machine
  (with-connection
    (start 500)
    (fn [conn]
      (let [kv (adder)
            g (ndarray/ones [4])]
        (kvstore/push kv "w" g)
        (is (= 1.0 (value kv)))
        (if (= :py4j (bridge/kind conn))
          (let [pid (:pid conn)]
            (testing "frozen (SIGSTOP): a timeout error within a second, not a hang"
              (try
                (signal! "STOP" pid)
                ;; The stop takes effect when the engine's threads next run.
                (is (wait-until 60000 #(stopped? pid)) "the engine is stopped")
                (let [[e ms] (timed #(kvstore/push kv "w" g))]
                  (println (format "faults-test: a push to a SIGSTOPped engine (500 ms timeout) failed after %.0f ms: %s, :may-have-run %s"
                                   (double ms) (:type (ex-data e)) (:may-have-run (ex-data e))))
                  (is (= :engine-timeout (:type (ex-data e))))
                  (is (false? (:may-have-run (ex-data e))) "it had not started")
                  (is (re-find #"did not answer kv.push within 500 ms" (ex-message e)))
                  (is (re-find #"safe to retry" (ex-message e)))
                  (is (nil? (ex-cause e)) "the socket's timeout is no printed cause")
                  (is (errors/caused-by? (:transport-exception (ex-data e))
                                         java.net.SocketTimeoutException))
                  (is (< ms 1500) (str "the error came after " ms " ms")))
                (finally (signal! "CONT" pid)))
              (is (= 1.0 (value kv)) "resumed, the engine did not apply the dropped push")))
          (testing "busy (another thread holds the engine): dropped at its deadline"
            (let [busy (future (bridge/call conn "sleep" [3.0]))
                  ;; Until the busy call has started a push still runs (and
                  ;; counts); then one waits for its deadline and is dropped.
                  [e ms applied] (loop [applied 0]
                                   (let [[e ms] (timed #(kvstore/push kv "w" g))]
                                     (if (or e (> applied 50))
                                       [e ms applied]
                                       (do (Thread/sleep 20) (recur (inc applied))))))]
              (is (= :engine-timeout (:type (ex-data e))))
              (is (false? (:may-have-run (ex-data e))))
              (is (re-find #"safe to retry" (str (ex-message e))))
              (is (< ms 1500) (str "the error came after " ms " ms"))
              (is (nil? (deref busy 10000 :hung)))
              (is (= (+ 1.0 applied) (value kv)) "the dropped push was not applied"))))
        (testing "the retry is applied once"
          (let [v (value kv)]
            (kvstore/push kv "w" g)
            (is (= (inc v) (value kv)))))))))

(deftest a-call-the-engine-had-started-may-have-run
  ;; The engine must start the call before the timeout: a whole second.
  (with-connection
    (start 1000)
    (fn [conn]
      (if (= :py4j (bridge/kind conn))
        (let [[e ms] (timed #(bridge/call conn "sleep" [2.0]))]
          (is (= :engine-timeout (:type (ex-data e))))
          (is (true? (:may-have-run (ex-data e))) "it had started: it may still complete")
          (is (re-find #"may still complete" (ex-message e)))
          (is (< ms 2000)))
        (testing "over JPype a started call runs to its end and answers"
          (let [[e ms] (timed #(bridge/call conn "sleep" [0.5]))]
            (is (nil? e))
            (is (>= ms 450)))))
      (is (wait-until 60000 #(try (nil? (bridge/call conn "noop")) (catch ExceptionInfo _ false)))
          "the engine answers once the call is over"))))

;;; ------------------------------------------------------------------ kills

(defn- kill!
  "Kills `conn`'s engine: kill -9 over Py4J, close over JPype (the engine is
   this process)."
  [conn]
  (if (= :py4j (bridge/kind conn))
    (.waitFor (.destroyForcibly (.process ^Py4JTransport (:transport conn))))
    ((:close conn))))

(defn- shm-files [conn]
  (filter string? [(get-in conn [:info :arena]) (get-in conn [:info :regions])]))

(deftest a-killed-engine-under-load-is-engine-dead-at-once-and-leaves-no-files
  (dotimes [trial kill-trials]
    (let [old (bridge/connection)
          conn (bridge/use-connection! (bridge/start))
          kv (adder)
          g (ndarray/ones [4])
          go (promise)
          pushing (CountDownLatch. 8)
          threads (vec (for [_ (range 8)]
                         (future
                           @go
                           (try (loop [n 0]
                                  (kvstore/push kv "w" g)
                                  (when (zero? n) (.countDown pushing))
                                  (recur (inc n)))
                                (catch ExceptionInfo e [e (System/nanoTime)])))))]
      (try
        (deliver go true)
        (is (.await pushing 60 TimeUnit/SECONDS) "every thread has pushed: the engine is under load")
        (let [t0 (System/nanoTime)]
          (kill! conn)
          (let [outcomes (for [t threads]
                           (let [[e t1] (deref t 10000 [nil 0])]
                             [(:type (ex-data e)) (:may-have-run (ex-data e))
                              (/ (- (long t1) t0) 1e6) (ex-message e)]))]
            (doseq [[kind may-have-run ms msg] outcomes]
              (is (= :engine-dead kind) (str "trial " trial ": " msg))
              (is (false? may-have-run))
              (is (< ms 1000) (str "trial " trial ": the error came " ms " ms after the kill")))
            (println (format "faults-test: kill %d of the engine under 8 threads over %s: %d/8 :engine-dead, %.0f-%.0f ms after the kill"
                             (inc trial) (name (bridge/kind conn))
                             (count (filter #(= :engine-dead (first %)) outcomes))
                             (double (apply min (map #(nth % 2) outcomes)))
                             (double (apply max (map #(nth % 2) outcomes)))))))
        (testing "restart! right after the kill"
          (let [fresh (bridge/restart!)]
            (is (not (identical? (:engine conn) (:engine fresh))) "a new engine")
            (is (= [1.0 1.0] (ndarray/->vec (ndarray/ones [2]))))
            (bridge/close! fresh)))
        (testing "no files left behind"
          (is (wait-until 60000 #(not-any? (fn [^String p] (.exists (io/file p))) (shm-files conn)))
              (str (vec (shm-files conn)))))
        (finally
          (bridge/use-connection! old))))))

(deftest a-killed-engine-reads-as-mxkv-and-its-files-go-without-a-close
  ;; The REPL and clojure.main print an exception's root cause: the
  ;; transport's exception is in ex-data, not the cause. Nothing here closes
  ;; the connection before the files are checked: the JVM removes a killed
  ;; engine's files when it sees the process end.
  (when (= :py4j (bridge/transport))
    (let [conn (start 5000)
          files (shm-files conn)]
      (try
        (is (= 2 (count files)))
        (is (every? #(.exists (io/file ^String %)) files))
        (kill! conn)
        (is (wait-until 60000 #(not-any? (fn [^String p] (.exists (io/file p))) files))
            (str "the killed engine's files are still there: " (vec files)))
        (let [e (try (bridge/call conn "noop") nil (catch ExceptionInfo e e))]
          (is (= :engine-dead (:type (ex-data e))))
          (is (nil? (ex-cause e)) "no transport exception as the printed cause")
          (is (instance? Throwable (:transport-exception (ex-data e))))
          (is (re-find #"was killed by SIGKILL \(exit code 137\)" (str (ex-message e))))
          (is (re-find #"a new store needs a new engine" (str (ex-message e)))))
        (finally (bridge/close! conn))))))
