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
