(ns org.apache.clojure-mxnet.bridge.config
  "Where the engine comes from and what the JVM side is configured with:
   the checkout or package these sources were loaded from, the engine's
   interpreter and environment, the transport a default connection uses,
   the memory budgets read from the environment, and whether a process
   still runs."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [org.apache.clojure-mxnet.util :as util])
  (:import (java.io File)
           (org.apache.clojure_mxnet.bridge JPypeTransport Regions)))

(set! *warn-on-reflection* true)

(def ^:private anchor
  "A source file of the API whose location tells where it was loaded from."
  "org/apache/clojure_mxnet/bridge.clj")

(defn project-root
  "The mxkv checkout these sources come from (`MXKV_HOME` overrides), or nil
   when they are not loaded from files."
  ^File []
  (if-let [home (System/getenv "MXKV_HOME")]
    (io/file home)
    (when-let [url (io/resource anchor)]
      (when (= "file" (.getProtocol ^java.net.URL url))
        ;; <root>/clojure/src/org/apache/clojure_mxnet/bridge.clj
        (some-> (io/file (.toURI ^java.net.URL url))
                .getParentFile .getParentFile .getParentFile .getParentFile .getParentFile
                .getParentFile)))))

(defn- package-python
  "The interpreter of the Python installation whose mxkv package holds the
   jar these sources were loaded from
   (<prefix>/lib/pythonX.Y/site-packages/mxkv/_clojure/mxkv.jar -> <prefix>/bin/python3),
   or nil."
  []
  (when-let [url (io/resource anchor)]
    (when (= "jar" (.getProtocol ^java.net.URL url))
      (let [spec (.getPath ^java.net.URL url)
            jar (io/file (java.net.URI. (subs spec 0 (.indexOf spec "!"))))
            site (some-> jar .getParentFile .getParentFile .getParentFile)]
        (when (and site (#{"site-packages" "dist-packages"} (.getName ^File site)))
          (let [prefix (some-> site .getParentFile .getParentFile .getParentFile)]
            (some (fn [exe] (let [f (io/file prefix "bin" exe)]
                              (when (.canExecute f) (.getPath f))))
                  ["python3" "python"])))))))

(defn python-command
  "The engine's interpreter: `MXKV_PYTHON`, else the JVM property
   `mxkv.python`, else the checkout's .venv, else the Python whose mxkv
   package holds the jar on the classpath, else python3."
  []
  (or (not-empty (System/getenv "MXKV_PYTHON"))
      (not-empty (System/getProperty "mxkv.python"))
      (when-let [root (project-root)]
        (let [py (io/file root ".venv" "bin" "python")]
          (when (.canExecute py) (.getPath py))))
      (package-python)
      "python3"))

(defn engine-env
  "Extra environment for an engine the JVM spawns: in a checkout, its
   python/ directory first on PYTHONPATH."
  []
  (let [root (project-root)
        src (when root (io/file root "python"))
        pp (System/getenv "PYTHONPATH")]
    (cond-> {}
      (and src (.isDirectory ^File src))
      (assoc "PYTHONPATH" (if (str/blank? pp) (.getPath ^File src) (str (.getPath ^File src) File/pathSeparator pp))))))

(defn call-timeout-ms
  "MXKV_CALL_TIMEOUT_MS: every call's deadline in ms (default 60000; 0: none)."
  []
  (util/env-long "MXKV_CALL_TIMEOUT_MS" 60000 0))

(defn start-timeout-ms
  "MXKV_START_TIMEOUT_MS: how long an engine may take to start (default 60000)."
  []
  (util/env-long "MXKV_START_TIMEOUT_MS" 60000 0))

(defn transport
  "The transport a new default connection uses: the JVM property
   `mxkv.transport`, else the environment variable `MXKV_TRANSPORT`
   (`py4j` or `jpype`), else :jpype when Python hosts this JVM and :py4j
   otherwise."
  []
  (let [v (or (not-empty (System/getProperty "mxkv.transport"))
              (not-empty (System/getenv "MXKV_TRANSPORT")))]
    (case (some-> v str/trim str/lower-case)
      nil (if (JPypeTransport/isHosted) :jpype :py4j)
      "py4j" :py4j
      "jpype" :jpype
      (throw (ex-info (str "unknown mxkv transport " (pr-str v) ": expected py4j or jpype")
                      {:type :invalid-argument :transport v})))))

(defn regions
  "The allocator of region-backed vectors for an engine with `info`: a GC
   runs before the region space grows past MXKV_REGIONS_GC_MB (default 512,
   but at most an eighth of the shared-memory file system); it holds at most
   MXKV_REGIONS_MAX_MB (default 2047, the limit of one mapping, but at most
   half the file system; 0 turns region-backed vectors off)."
  ^Regions [info]
  (let [shm (long (or (:shm_bytes info) 0))
        mb (fn [var-name ^long default ^long shm-share]
             (if-let [v (util/env-long var-name nil 0)]
               (* (long v) 1024 1024)
               (cond-> (* default 1024 1024) (pos? shm) (min (quot shm shm-share)))))]
    (Regions. (mb "MXKV_REGIONS_GC_MB" 512 8) (mb "MXKV_REGIONS_MAX_MB" 2047 2))))

(defn engine-gc-bytes
  "Engine bytes that collectable arrays may hold before the JVM runs a GC to
   free those that are garbage: MXKV_ENGINE_GC_MB (default 128; 0 turns it
   off)."
  []
  (let [mb (util/env-long "MXKV_ENGINE_GC_MB" 128 0)]
    (if (pos? mb) (* mb 1024 1024) Long/MAX_VALUE)))

(defn process-gone?
  "True when process `pid` no longer runs (absent, or a zombie)."
  [pid]
  (let [stat (io/file "/proc" (str pid) "stat")]
    (if (.exists stat)
      ;; (slurp fails on /proc files: they report no size)
      (try (= "Z" (second (re-find #"\) (\S)" (String. (java.nio.file.Files/readAllBytes
                                                         (.toPath stat))))))
           (catch java.io.IOException _ (not (.exists stat))))
      (not (.isPresent (java.lang.ProcessHandle/of (long pid)))))))

(defn exited-within
  "A fn [ms] that waits up to ms for process `pid` to be gone; true if it is."
  [pid]
  (fn [ms]
    (let [deadline (+ (System/currentTimeMillis) (long ms))]
      (loop []
        (cond (process-gone? pid) true
              (> (System/currentTimeMillis) deadline) false
              :else (do (Thread/sleep 5) (recur)))))))
