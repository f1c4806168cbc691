(ns org.apache.clojure-mxnet.bridge.errors
  "How a failed engine call becomes ex-info, by `:type`:

   - `:mxnet-error` (and the engine's other kinds, kebab-cased): the engine
     refused the call; the message is the engine's, with :python-class,
     :traceback and :op.
   - `:engine-dead`: the engine's process is gone (restart! starts another).
   - `:engine-timeout`: no answer within the call's deadline; :may-have-run
     says whether the engine had started it (false: safe to retry).
   - `:engine-unreachable`: the transport failed otherwise.
   - `:unsafe-file`: a file the JVM refused to map or read (see PrivateFiles)."
  (:require [clojure.string :as str]
            [org.apache.clojure-mxnet.bridge.json :as json]
            [org.apache.clojure-mxnet.util :as util])
  (:import (java.net SocketTimeoutException)
           (org.apache.clojure_mxnet.bridge Arena PrivateFiles$UnsafeFileException)))

(set! *warn-on-reflection* true)

(defn- kebab-keyword [s]
  (keyword (str/replace (str s) "_" "-")))

(defn engine-error
  "The ex-info for engine error map `m` (from the engine's answer) of call `op`."
  [op m]
  (ex-info (str (:message m))
           (cond-> {:type (kebab-keyword (:type m))
                    :python-class (:python_class m)
                    :traceback (:traceback m)
                    :op op}
             (contains? m :may_have_run) (assoc :may-have-run (boolean (:may_have_run m))))))

(defn caused-by?
  "True when `e` or one of its causes is an instance of `klass`."
  [^Throwable e klass]
  (loop [e e]
    (cond (nil? e) false
          (instance? klass e) true
          :else (recur (.getCause e)))))

(defn- call-started
  "After call `ticket` with `deadline` timed out: :started, :not-started or
   :unknown, from the engine's call board (see Arena/started). Read only once
   the deadline has passed (by a margin), so that :not-started is final: the
   engine checks the deadline after it marks a call started."
  [conn deadline ticket]
  (let [^Arena a (:arena conn)
        wait (- (+ (long deadline) 2) (System/currentTimeMillis))]
    (if (or (not (:board? conn)) (not (pos? (long ticket))) (not (pos? (long deadline))))
      :unknown
      (do (when (pos? wait) (Thread/sleep wait))
          (condp = (.started a (long ticket) (long (get-in conn [:info :arena_header])))
            Arena/STARTED :started
            Arena/NOT_STARTED :not-started
            :unknown)))))

(defn- with-transport-exception
  "ex-data `data` plus the transport's exception `e` under
   :transport-exception. It is kept there, not as the ex-info's cause:
   Clojure's REPL and script runner print the root cause, and the message
   that says what happened is mxkv's, not the socket's."
  [data ^Throwable e]
  (cond-> data e (assoc :transport-exception e)))

(defn timeout-error
  "The ex-info for call `op` that got no answer by its deadline (the
   transport's exception `cause` in ex-data :transport-exception)."
  [conn op deadline ticket cause]
  (let [started (call-started conn deadline ticket)]
    (ex-info (str "the mxkv engine (pid " (:pid conn) ") did not answer " op " within "
                  (:timeout-ms conn) " ms: it is frozen or overloaded (MXKV_CALL_TIMEOUT_MS); "
                  (case started
                    :not-started "the call had not started and will not run (it is safe to retry)"
                    :started "the call had started and may still complete (retrying may apply it twice)"
                    :unknown "the call may have run or may still run (retrying may apply it twice)"))
             (with-transport-exception
               {:type :engine-timeout :op op :pid (:pid conn) :timeout-ms (:timeout-ms conn)
                :may-have-run (not= started :not-started)}
               cause))))

(def ^:private signal-names
  {1 "SIGHUP" 2 "SIGINT" 3 "SIGQUIT" 4 "SIGILL" 6 "SIGABRT" 7 "SIGBUS" 8 "SIGFPE" 9 "SIGKILL"
   11 "SIGSEGV" 13 "SIGPIPE" 14 "SIGALRM" 15 "SIGTERM"})

(defn exit-story
  "How a process that ended with exit `code` (as Java reports it: 128+n
   after signal n) ended, in words: \"was killed by SIGKILL (exit code
   137)\", \"exited with code 1\", or \"is not running\" for nil."
  [code]
  (cond (nil? code) "is not running"
        (and (> (long code) 128) (< (long code) 160))
        (let [n (- (long code) 128)]
          (str "was killed by " (get signal-names n (str "signal " n)) " (exit code " code ")"))
        :else (str "exited with code " code)))

(defn transport-error
  "The ex-info for call `op` that failed in the transport with `e`. Whether the
   engine is dead is decided from its process: a call failing otherwise than
   by a timeout waits (up to a second) for the process to finish exiting, as a
   killed engine's sockets close before the JVM sees it exit."
  [conn op ^Throwable e deadline ticket]
  (let [timeout? (caused-by? e SocketTimeoutException)
        pid (:pid conn)
        dead? (or (not ((:alive? conn)))
                  (and (not timeout?) ((:exited-within? conn) 1000)))]
    (cond
      dead?
      (let [code ((:exit-code conn))]
        (ex-info (str "the mxkv engine (pid " pid ") " (exit-story code) "; " op
                      " did not run. Its stores and arrays are gone with it: a new store "
                      "needs a new engine, (org.apache.clojure-mxnet.bridge/restart!) starts one.")
                 (with-transport-exception
                   {:type :engine-dead :op op :pid pid :exit-code code :may-have-run false} e)))

      timeout?
      (timeout-error conn op deadline ticket e)

      :else
      (ex-info (str "cannot reach the mxkv engine (pid " pid ") for " op ": " (.getMessage e)
                    "; the call may have run")
               (with-transport-exception
                 {:type :engine-unreachable :op op :pid pid :may-have-run true} e)))))

(def ^:private direct-error-prefix
  "An in-process engine's method that returns a buffer reports an engine
   error as a Java exception with this message prefix, then the error map as
   JSON."
  "mxkv-engine-error:")

(defn direct-error
  "The ex-info for exception `ex` thrown by an in-process engine's method."
  [conn op ^Exception ex]
  (let [m (str (.getMessage ex))
        i (.indexOf m ^String direct-error-prefix)]
    (if (>= i 0)
      (engine-error op (json/parse (subs m (+ i (count direct-error-prefix)))))
      (transport-error conn op ex 0 0))))

(defn engine-done?
  "True when the call that failed with `e` can no longer write: the engine
   returned an error as data (the call finished), the engine is dead, or the
   call never started and never will (:may-have-run false)."
  [e]
  (let [d (ex-data e)]
    (boolean (or (:python-class d) (= :engine-dead (:type d)) (false? (:may-have-run d))))))

(defmacro refusing-unsafe-files
  "Runs `body`; a file that PrivateFiles refused (a link, another user's, or
   readable by others) becomes ex-info {:type :unsafe-file :path ..}."
  [& body]
  `(try ~@body
        (catch PrivateFiles$UnsafeFileException e#
          (throw (util/at-caller (ex-info (.getMessage e#) {:type :unsafe-file :path (.path e#)}
                                          e#))))))
