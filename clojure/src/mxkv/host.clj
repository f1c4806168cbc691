(ns mxkv.host
  "What a Python process hosting this JVM (`mxkv.jvm`) calls: evaluate
   Clojure source as a REPL would (forms in order, starting in `user`, the
   namespace carried from one call to the next), turn plain results into
   JSON for Python, and shut down cleanly."
  (:require [clojure.java.io :as io]
            [clojure.main :as main]
            [org.apache.clojure-mxnet.bridge :as bridge])
  (:import (clojure.lang LineNumberingPushbackReader)
           (java.io StringReader)))

(set! *warn-on-reflection* true)

(defonce ^:private current-ns (atom 'user))

(defonce ^:private user-ns
  (delay (binding [*ns* (create-ns 'user)] (refer-clojure))))

(defn eval-string
  "Evaluates every form of `code` in order, as at a REPL (in the namespace
   the previous call ended in, `user` at first); returns the last value."
  [^String code]
  (let [r (LineNumberingPushbackReader. (StringReader. code))
        eof (Object.)]
    @user-ns
    (binding [*ns* (create-ns @current-ns)]
      (try
        (loop [value nil]
          (let [form (read {:eof eof :read-cond :allow} r)]
            (if (identical? form eof)
              value
              (recur (eval form)))))
        (finally
          (reset! current-ns (ns-name *ns*)))))))

(defn load-file*
  "Loads the Clojure file at `path` (its forms in order, in `user` unless it
   says `ns`); returns the last value."
  [^String path]
  (binding [*ns* (create-ns @current-ns)]
    (load-file (.getPath (io/file path)))))

(defn require*
  "Requires namespace `ns-name` (a string)."
  [^String ns-name]
  (require (symbol ns-name))
  nil)

(defn- plain? [x]
  (cond
    (or (nil? x) (string? x) (boolean? x) (keyword? x)) true
    (number? x) (or (integer? x) (float? x) (decimal? x) (ratio? x))
    (map? x) (every? (fn [[k v]] (and (or (string? k) (keyword? k) (number? k)) (plain? v))) x)
    (or (sequential? x) (set? x)) (every? plain? x)
    :else false))

(defn plain-json
  "JSON text for `x` when it is plain data (nil, booleans, numbers,
   strings, keywords, and vectors, lists, sets and maps of them), else nil."
  [x]
  (when (plain? x)
    (bridge/->json x)))

(defn default-engine-id
  "The :engine_id of the default connection's engine (started when needed):
   set for engines in this process, nil otherwise."
  []
  (get-in (bridge/connection) [:info :engine_id]))

(defn shutdown
  "Closes the default connection and ends Clojure's agent threads (which
   would otherwise keep the JVM alive for a minute at exit)."
  []
  (try (bridge/close!) (catch Throwable _ nil))
  (shutdown-agents))

(defn run-main
  "Runs clojure.main with `args` (what `java clojure.main ARGS` would do), without
   exiting the process; returns nil."
  [args]
  (apply main/main args))
