(ns interop.driver
  "The JVM half of interop-tests/: each function takes and returns plain data
   (JSON text at the edge), so that pytest drives it the same way over both
   transports: in this process under JPype (`call-json` through mxkv.jvm),
   and in a JVM of its own over Py4J (`-main`: one JSON command per stdin
   line, one `@@`-prefixed JSON answer per command on stdout)."
  (:require [clojure.string :as str]
            [clojure.test :as t]
            [mxkv.interop :as interop]
            [mxkv.test-runner :as runner]
            [mxkv.transcript :as transcript]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer])
  (:import (java.io StringWriter)
           (org.apache.clojure_mxnet.bridge Json)))

(set! *warn-on-reflection* true)

;;; ------------------------------------------------------------------ suites

(defn suite
  "Runs each test namespace under `dir` (all, or those matching `patterns`);
   per namespace its counts and, when something failed, its report."
  [dir & patterns]
  (let [nses (cond->> (runner/test-namespaces dir)
               (seq patterns) (filter (fn [n] (some #(re-find (re-pattern %) (str n)) patterns))))]
    (apply require nses)
    (into {}
          (for [n nses]
            (let [w (StringWriter.)
                  counts (binding [t/*test-out* w *out* w] (t/run-tests n))]
              [(str n) (cond-> (select-keys counts [:test :pass :fail :error])
                         (pos? (+ (:fail counts) (:error counts))) (assoc :report (str w)))])))))

(defn tutorial
  "Runs the tutorial file at `path` as a checked transcript."
  [path]
  (let [w (StringWriter.)
        r (binding [*out* w] (transcript/run path))]
    (assoc r :transcript (str w) :transport (name (bridge/kind (bridge/connection))))))

;;; ------------------------------------------------------------------ parity

(defn- key-of [k] (if (string? k) k (long k)))

(defn- arrays [specs]
  (mapv (fn [{:keys [shape data]}] (ndarray/array (mapv float data) (vec shape))) specs))

(defn- outcome [f]
  (try
    {:ok true :arrays (mapv (fn [a] (mapv double (ndarray/->vec a))) (f))}
    (catch clojure.lang.ExceptionInfo e
      {:ok false :class (:python-class (ex-data e)) :message (ex-message e)})))

(defn- step [kv {:keys [op keys values shapes params name row_ids shape stype]}]
  (let [ks (mapv key-of keys)]
    (outcome
     (fn []
       (case op
         "init" (do (kvstore/init kv ks (mapv #(ndarray/tostype % stype) (arrays values))) [])
         "push" (do (kvstore/push kv ks (arrays values)) [])
         "pull" (let [outs (mapv #(ndarray/zeros (vec %)) shapes)]
                  (kvstore/pull kv ks outs)
                  outs)
         "pushpull" (let [outs (mapv #(ndarray/zeros (vec %)) shapes)]
                      (kvstore/pushpull kv ks (arrays values) outs)
                      outs)
         "row_sparse_pull" (let [out (ndarray/zeros (vec shape))]
                             (kvstore/row-sparse-pull kv (first ks) out
                                                      (ndarray/array (mapv float row_ids)
                                                                     [(count row_ids)]))
                             [out])
         "set_optimizer" (do (kvstore/set-optimizer
                              kv (optimizer/->Optimizer name (into {} (map (fn [[k v]] [(clojure.core/name k) v])) params)))
                             []))))))

(defn parity
  "Runs the steps of `sequence` (see interop-tests/parity.py) on a new local
   store; the outcome of each: the arrays it produced (as doubles) or the
   error's Python class and message."
  [steps]
  (let [kv (kvstore/create "local")]
    (mapv #(step kv %) steps)))

;;; ------------------------------------------------------------------ sharing

(defn write-through-buffer
  "Writes `value` at element `index` of the published float32 array `name`
   through a buffer sharing its memory; returns what the engine then reads
   there (->vec, a copy taken after the write)."
  [name index value]
  (let [a (interop/published name)]
    (.put (interop/as-float-buffer a) (int index) (float value))
    (double (nth (ndarray/->vec a) index))))

(defn read-through-buffer
  "Element `index` of the published float32 array `name`, read through a
   buffer sharing its memory (no copy, no engine call)."
  [name index]
  (double (.get (interop/as-float-buffer (interop/published name)) (int index))))

(defn shared-roundtrip
  "Makes an array in shared memory, writes through a shared buffer, changes
   it in the engine, reads it through the buffer again: [engine saw the
   JVM's write, JVM saw the engine's change]."
  []
  (let [a (interop/shared-array [4])
        b (interop/as-float-buffer a)]
    (.put b 1 (float 3.5))
    (let [engine-saw (nth (ndarray/->vec a) 1)]
      (ndarray/+= a 1.0)
      [(double engine-saw) (double (.get b 1))])))

(defn push-published
  "Pushes `value` (filled into the key's shape) to key `k` of the published
   store `name`."
  [name k value shape]
  (kvstore/push (interop/published name) (key-of k) (ndarray/full (vec shape) value))
  nil)

(defn handle-churn
  "Takes `n` handles to the published object `name` and drops them; returns
   the engine's live handle counts before, while held, and after a GC."
  [name n]
  (bridge/flush-releases!)
  (let [before (:handles (bridge/stats))
        held (doall (repeatedly n #(interop/published name)))
        during (:handles (bridge/stats))]
    (count held)
    (let [deadline (+ (System/currentTimeMillis) 60000) ; (a loaded machine: the GC and
                                                          ; the cleaner thread run late)
          after (loop []
                  (System/gc)
                  (Thread/sleep 50)
                  (bridge/flush-releases!)
                  (let [h (:handles (bridge/stats))]
                    (if (or (<= h (+ before 5)) (> (System/currentTimeMillis) deadline))
                      h
                      (recur))))]
      [before during after])))

(declare call-fn)

(defn attached
  "Runs driver function `fn-name` with `args` while the default connection
   is one attached to the Python program that wrote `attach-file` (Py4J,
   Python first); then restores the default and closes the attachment."
  [attach-file fn-name & args]
  (let [old (bridge/connection)
        conn (bridge/attach attach-file)]
    (try
      (bridge/use-connection! conn)
      (apply (call-fn fn-name) args)
      (finally
        (bridge/use-connection! old)
        (bridge/close! conn)))))

;;; ------------------------------------------------------------------ edge

(defn- call-fn [fn-name]
  (or (ns-resolve 'interop.driver (symbol fn-name))
      (throw (ex-info (str "no driver function " fn-name) {:fn fn-name}))))

(defn call-json
  "Runs `{\"fn\": name, \"args\": [...]}` (JSON text); the result as JSON text."
  ^String [^String command]
  (let [{:keys [fn args]} (Json/parse command)]
    (bridge/->json (apply (call-fn fn) args))))

(defn -main
  "Serves commands from stdin, one JSON command a line; answers each with a
   line `@@` + JSON ({:ok value} or {:error message})."
  [& _]
  (loop []
    (when-let [line (read-line)]
      (when-not (str/blank? line)
        (let [answer (try
                       (str "{\"ok\":" (call-json line) "}")
                       (catch Throwable e
                         (bridge/->json {:error (str (class e) ": " (.getMessage e))})))]
          (println (str "@@" answer))
          (flush)))
      (recur)))
  (bridge/close!)
  (shutdown-agents))
