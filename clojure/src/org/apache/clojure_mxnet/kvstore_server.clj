(ns org.apache.clojure-mxnet.kvstore-server
  "Run this process's engine as a KVStore server of a distributed store."
  (:require [clojure.spec.alpha :as s]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.util :as util]))

(s/def ::env-map (s/map-of string? string?))

(defn init
  "Set the engine's environment for a server role, e.g.
   {\"DMLC_ROLE\" \"server\" \"DMLC_PS_ROOT_URI\" \"127.0.0.1\" ...}."
  [env-map]
  (util/validate! ::env-map env-map "Invalid environment map")
  (bridge/call (bridge/connection) "server.init" [env-map])
  nil)

(s/def ::die-if-others-go-out-timeout int?)

(defn start
  "Run the server loop until the distributed store shuts down (blocks).
   The call is bounded by MXKV_CALL_TIMEOUT_MS like any other: set it to 0
   for a long-lived server."
  ([die-if-others-go-out-timeout]
   (util/validate! ::die-if-others-go-out-timeout die-if-others-go-out-timeout "Invalid setting")
   (bridge/call (bridge/connection) "server.start" [die-if-others-go-out-timeout])
   nil)
  ([]
   (start 0)))
