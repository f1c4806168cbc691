(ns org.apache.clojure-mxnet.bridge-test
  "The bridge itself: errors as data, handles freed by the GC, the
   shared-memory arena's life, files the JVM refuses to map. (Frozen and
   killed engines: faults_test.clj.)"
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.test-support :refer [wait-until]])
  (:import (org.apache.clojure_mxnet.bridge Handles Handles$Handle Json Mapper
                                            PrivateFiles$UnsafeFileException Py4JTransport)
           (org.apache.clojure_mxnet.ndarray NDArray)))

(defn- live-handles [] (:handles (bridge/stats)))

(defn- handle-counts
  "[live engine handles, ids released so far] of the default connection, read
   together: every release is sent holding the lock of the connection's Handles."
  []
  (let [conn (bridge/connection)
        ^Handles handles (:handles conn)]
    (locking handles
      [(:handles (bridge/stats conn)) (.releasedCount handles)])))

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
  ;; Earlier tests' garbage may be released while this one runs: the first
  ;; count adds what was released meanwhile.
  (let [[before released-before] (handle-counts)
        held (volatile! (doall (repeatedly 2000 #(ndarray/ones [4]))))
        ;; a Handle does not reach its array: holding them keeps no array alive
        handles (mapv #(.-handle ^NDArray %) @held)
        released? #(.isReleased ^Handles$Handle %)]
    (let [[live released] (handle-counts)]
      (is (>= (+ live (- released released-before)) (+ before 2000))
          "the arrays exist in the engine while reachable"))
    (is (= 2000 (count @held)))
    (is (not-any? released? handles))
    (vreset! held nil)
    (is (wait-until 60000 50 (fn []
                               (System/gc)
                               (let [queued (every? released? handles)]
                                 (bridge/flush-releases!)
                                 (and queued (< (live-handles) (+ before 200))))))
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
    (is (wait-until 60000 #(not (.isAlive (.process t)))))
    (is (not (.exists (io/file arena))))))

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

(defn- private-file
  "A new file in `dir` with mode `perms` (e.g. \"rw-------\")."
  ^java.io.File [^java.io.File dir name perms]
  (let [f (io/file dir name)]
    (spit f "{}")
    (java.nio.file.Files/setPosixFilePermissions
     (.toPath f) (java.nio.file.attribute.PosixFilePermissions/fromString perms))
    f))

(deftest the-jvm-maps-only-private-files-of-its-user-never-through-a-link
  (let [dir (.toFile (java.nio.file.Files/createTempDirectory
                      "mxkv-private-" (make-array java.nio.file.attribute.FileAttribute 0)))
        mine (private-file dir "mine" "rw-------")
        open (private-file dir "open" "rw-r--r--")
        link (io/file dir "link")
        refused (fn [^java.io.File f]
                  (try (.map Mapper/FILES (.getPath f) 4096) nil
                       (catch PrivateFiles$UnsafeFileException e (ex-message e))))]
    (java.nio.file.Files/createSymbolicLink (.toPath link) (.toPath mine)
                                            (make-array java.nio.file.attribute.FileAttribute 0))
    (try
      (is (nil? (refused mine)) "a private regular file of ours maps")
      (is (re-find #"other users may access it" (str (refused open))))
      (is (re-find #"is a symbolic link" (str (refused link))))
      (is (re-find #"cannot read its attributes" (str (refused (io/file dir "missing")))))
      (testing "attach refuses the same, as data"
        (doseq [[f msg] [[open #"other users may access it"] [link #"symbolic link"]]]
          (let [e (is (thrown? clojure.lang.ExceptionInfo (bridge/attach (.getPath ^java.io.File f))))]
            (is (= :unsafe-file (:type (ex-data e))))
            (is (re-find msg (ex-message e))))))
      (finally
        (run! #(.delete ^java.io.File %) [link open mine dir])))))
