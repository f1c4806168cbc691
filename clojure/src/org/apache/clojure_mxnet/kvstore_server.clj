(ns org.apache.clojure-mxnet.kvstore-server
  "Run this process's engine as a server process of a distributed store.

   As in clojure-mxnet, a server process calls `init` with its environment
   (at least {\"DMLC_ROLE\" \"server\"}) and then `start`. The job's server
   shards are Ray actors (see docs/distributed.md); `start` joins the job in
   the engine's environment (`mxkv launch --server-cmd` sets it) as a server
   process and blocks until every worker has finished, then returns."
  (:require [clojure.spec.alpha :as s]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.util :as util]))

(s/def ::env-map (s/map-of string? string?))

(defn init
  "Set the engine's environment for a server role, e.g.
   {\"DMLC_ROLE\" \"server\"}; the job's own variables (MXKV_JOB,
   MXKV_RAY_ADDRESS, DMLC_NUM_WORKER, DMLC_NUM_SERVER) come from the process
   environment `mxkv launch` gives, or from this map.
   - env-map: map of string to string"
  [env-map]
  (util/validate! ::env-map env-map "Invalid environment map")
  (bridge/call (bridge/connection) "server.init" [env-map])
  nil)

(s/def ::die-if-others-go-out-timeout int?)

(defn start
  "Serve until the distributed job ends (blocks), then return nil.
   The engine call is bounded by MXKV_CALL_TIMEOUT_MS like any other;
   `mxkv launch` sets it to 0 (no limit) for server processes.
   - die-if-others-go-out-timeout: validated and accepted for clojure-mxnet's
     arity, and not needed: clojure-mxnet's server polled every that many
     seconds to die once the scheduler was gone; an mxkv server returns as
     soon as the job's coordinator is gone, whatever the value"
  ([die-if-others-go-out-timeout]
   (util/validate! ::die-if-others-go-out-timeout die-if-others-go-out-timeout "Invalid setting")
   (bridge/call (bridge/connection) "server.start" [])
   nil)
  ([]
   (start 0)))
