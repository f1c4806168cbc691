(ns org.apache.clojure-mxnet.bridge-test
  "The bridge itself: errors as data, handles freed by the GC, a dead or
   frozen engine giving a prompt error, the shared-memory arena's life."
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray])
  (:import (org.apache.clojure_mxnet.bridge Json Py4JTransport)))

(defn- wait-until [timeout-ms pred]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (loop []
      (or (pred)
          (when (< (System/currentTimeMillis) deadline)
            (Thread/sleep 50)
            (recur))))))

(defn- live-handles [] (:handles (bridge/stats)))

(defn- stopped?
  "True when process `pid` (a string) is stopped (state T in /proc)."
  [pid]
  (let [stat (String. (java.nio.file.Files/readAllBytes (.toPath (io/file "/proc" pid "stat"))))]
    (= "T" (second (re-find #"\) (\S)" stat)))))

(deftest engine-errors-are-ex-info-with-python-details
  (let [kv (kvstore/create)]
    (kvstore/init kv "3" (ndarray/ones [2]))
    (let [e (is (thrown? clojure.lang.ExceptionInfo (kvstore/init kv "3" (ndarray/ones [2]))))
          d (ex-data e)]
      (is (re-find #"duplicate init of key '3'" (ex-message e)))
      (is (= :mxnet-error (:type d)))
      (is (= "mxkv.base.MXNetError" (:python-class d)))
      (is (re-find #"Traceback" (:traceback d)))
      (is (= "kv.init" (:op d))))))

(deftest unknown-operations-are-engine-errors
  (let [e (is (thrown? clojure.lang.ExceptionInfo (bridge/call (bridge/connection) "no.such.op" [])))]
    (is (= :mxnet-error (:type (ex-data e))))
    (is (= "mxkv.base.MXNetValueError" (:python-class (ex-data e))))
    (is (re-find #"unknown engine operation" (ex-message e)))))

(deftest json-crosses-both-ways
  (is (= "[1,\"a\\\"b\\n\",{\"k\":null},true,2.5]" (bridge/->json [1 "a\"b\n" {:k nil} true 2.5])))
  (is (= [1 "a\"b\n" {:k nil} true 2.5 -3 1.0E10] (Json/parse "[1,\"a\\\"b\\n\",{\"k\":null},true,2.5,-3,1e10]"))))

(deftest garbage-collected-arrays-free-their-engine-objects
  (bridge/flush-releases!)
  (System/gc)
  (Thread/sleep 100)
  (bridge/flush-releases!)
  (let [before (live-handles)
        held (volatile! (doall (repeatedly 2000 #(ndarray/ones [4]))))]
    (is (>= (live-handles) (+ before 2000)) "the arrays exist in the engine while reachable")
    (is (= 2000 (count @held)))
    (vreset! held nil)
    (is (wait-until 15000 (fn []
                            (System/gc)
                            (bridge/flush-releases!)
                            (< (live-handles) (+ before 200))))
        "after GC the engine dropped them")))

(deftest dispose-frees-immediately
  (let [conn (bridge/connection)
        arrays (doall (repeatedly 5 #(ndarray/zeros [2])))
        ids (mapv ndarray/handle arrays)]
    (is (every? #(bridge/call conn "nd.equal" [% %]) ids) "the engine holds them")
    (run! ndarray/dispose arrays)
    (doseq [id ids]
      (is (thrown-with-msg? clojure.lang.ExceptionInfo #"unknown handle"
                            (bridge/call conn "nd.equal" [id id]))
          "gone from the engine as soon as dispose returns"))))

(deftest engine-shares-memory-through-one-arena
  (let [{:keys [arena pid memory]} (bridge/info)]
    (if memory
      (is (= "mem:arena" arena) "an engine in this process (JPype): memory, no file")
      (do (is (.exists (io/file arena)))
          (is (re-find (re-pattern (str "/mxkv-" pid "-[0-9a-f]{16}-arena$")) arena)
              "named by its pid and 64 random bits")))))

(deftest a-closed-engine-removes-its-arena-and-exits
  (let [conn (bridge/start-py4j)
        {:keys [arena]} (bridge/info conn)
        ^Py4JTransport t (:transport conn)]
    (is (.exists (io/file arena)))
    (bridge/close! conn)
    (is (wait-until 5000 #(not (.isAlive (.process t)))))
    (is (not (.exists (io/file arena))))))

(deftest a-frozen-or-dead-engine-gives-a-prompt-error
  (let [conn (bridge/start-py4j {:call-timeout-ms 1000})
        ^Py4JTransport t (:transport conn)
        pid (str (.pid t))
        timed (fn [f] (let [t0 (System/nanoTime)
                            r (try (f) nil (catch clojure.lang.ExceptionInfo e e))]
                        [r (/ (- (System/nanoTime) t0) 1e6)]))]
    (try
      (is (nil? (bridge/call conn "noop")))
      (testing "frozen (SIGSTOP): a timeout error, not a hang"
        (.waitFor (.start (ProcessBuilder. ["kill" "-STOP" pid])))
        ;; The stop takes effect when the engine's threads next run: on a
        ;; loaded machine that can be after the next call was answered.
        (is (wait-until 5000 #(stopped? pid)) "the engine is stopped")
        (let [[e ms] (timed #(bridge/call conn "noop"))]
          (is (= :engine-timeout (:type (ex-data e))))
          (is (< ms 5000))
          (is (re-find #"did not answer noop within 1000 ms" (ex-message e))))
        (.waitFor (.start (ProcessBuilder. ["kill" "-CONT" pid])))
        (is (nil? (bridge/call conn "noop")) "it answers again once resumed"))
      (testing "dead: an error at once"
        (.waitFor (.destroyForcibly (.process t)))
        (let [[e ms] (timed #(bridge/call conn "noop"))]
          (is (= :engine-dead (:type (ex-data e))))
          (is (< ms 2000))
          (is (re-find #"not running" (ex-message e)))))
      (finally
        (.waitFor (.start (ProcessBuilder. ["kill" "-CONT" pid])))
        (bridge/close! conn)))))

(deftest the-engine-secret-is-not-on-its-command-line
  (let [conn (bridge/start-py4j)
        ^Py4JTransport t (:transport conn)]
    (try
      (let [cmdline (slurp (str "/proc/" (.pid t) "/cmdline"))]
        (is (re-find #"mxkv\.bridge" cmdline))
        (is (not (re-find #"[0-9a-f]{64}" cmdline))))
      (finally (bridge/close! conn)))))

(deftest connections-can-be-swapped-and-restarted
  (let [old (bridge/connection)
        other (bridge/start)]
    (try
      (is (bridge/alive? other))
      (is (identical? other (bridge/use-connection! other)))
      (is (identical? (:engine other) (:engine (bridge/connection))))
      (is (= [1.0 1.0] (ndarray/->vec (ndarray/ones [2]))))
      (finally
        (bridge/use-connection! old)
        (bridge/close! other)))
    (is (not (bridge/alive? other)))
    (is (bridge/alive? old)))
  (testing "restart! replaces the default engine; the old engine's objects fail clearly"
    (let [old (bridge/connection)
          a (ndarray/ones [2])
          fresh (bridge/restart!)]
      (is (not (identical? (:engine old) (:engine fresh))))
      (when (= :py4j (bridge/kind fresh))
        (is (not= (:pid old) (:pid fresh)) "a new engine process"))
      (is (not (bridge/alive? old)))
      (is (= :engine-dead (:type (ex-data (is (thrown? clojure.lang.ExceptionInfo (ndarray/->vec a)))))))
      (is (= [1.0 1.0] (ndarray/->vec (ndarray/ones [2])))))))

(defn- top-frame ^String [^Throwable e]
  (.getClassName ^StackTraceElement (first (.getStackTrace e))))

(deftest errors-point-at-the-callers-frame
  (let [kv (kvstore/create)]
    (kvstore/init kv "3" (ndarray/ones [2]))
    (doseq [[what f] [["engine error" #(kvstore/init kv "3" (ndarray/ones [2]))]
                      ["spec failure" #(binding [*out* (java.io.StringWriter.)]
                                         (kvstore/push kv [:k] [(ndarray/ones [2])]))]
                      ["disposed" #(let [a (ndarray/ones [1])] (ndarray/dispose a) (ndarray/->vec a))]]]
      (let [e (try (f) nil (catch clojure.lang.ExceptionInfo e e))]
        (is (some? e) what)
        (is (re-find #"^org\.apache\.clojure_mxnet\.bridge_test\$" (top-frame e)) what)
        (is (not (re-find #"Traceback" (ex-message e))) what)))))
