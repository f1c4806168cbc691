(ns org.apache.clojure-mxnet.test-support
  "What several test namespaces share (not a test namespace itself)."
  (:require [org.apache.clojure-mxnet.bridge :as bridge]))

(defn with-connection
  "Runs (f conn) with `conn` as the default connection, then restores the
   previous default and closes `conn`."
  [conn f]
  (let [old (bridge/connection)]
    (try
      (bridge/use-connection! conn)
      (f conn)
      (finally
        (bridge/use-connection! old)
        (bridge/close! conn)))))

(defn wait-until
  "Polls (pred) every `poll-ms` (default 10) until it returns a true value,
   which it returns; nil once `timeout-ms` have passed without one. Wrap it
   in `is`, so that a condition never reached fails the test."
  ([timeout-ms pred] (wait-until timeout-ms 10 pred))
  ([timeout-ms poll-ms pred]
   (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
     (loop []
       (or (pred)
           (when (< (System/currentTimeMillis) deadline)
             (Thread/sleep (long poll-ms))
             (recur)))))))
