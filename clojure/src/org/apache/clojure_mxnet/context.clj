(ns org.apache.clojure-mxnet.context
  "Devices arrays live on: (cpu 0), (gpu 1). A Context is a value; it prints
   as cpu(0) and equals another with the same device type and id. Context
   is a JVM class (org.apache.clojure_mxnet.context.Context), so contexts
   made before this namespace is reloaded equal those made after."
  (:import (org.apache.clojure_mxnet.context Context)))

(set! *warn-on-reflection* true)

(defn ->Context
  "The Context of device `device-type` (\"cpu\" or \"gpu\") number
   `device-id`, unchecked (see `cpu`, `gpu`)."
  [device-type device-id]
  (Context. ^String device-type (long device-id)))

(defmethod print-method Context [c ^java.io.Writer w]
  (.write w (str "#<Context " c ">")))

(defn- context [device-type device-id]
  (when-not (and (integer? device-id) (not (neg? device-id)))
    (throw (ex-info (str "a device id is a non-negative integer, got " (pr-str device-id))
                    {:type :invalid-argument :device-type device-type :device-id device-id})))
  (Context. device-type (long device-id)))

(defn cpu
  "The CPU context `device-id` (an int, default 0); ids name separate
   devices for the kvstore's reduction, as in MXNet."
  ([device-id]
   (context "cpu" device-id))
  ([]
   (cpu 0)))

(defn gpu
  "The GPU context `device-id` (an int, default 0)."
  ([device-id]
   (context "gpu" device-id))
  ([]
   (gpu 0)))

(defn cpu-context
  "(cpu 0)"
  []
  (cpu))

(defn default-context
  "The context arrays are created in when none is given: (cpu 0)."
  []
  (cpu-context))

(defn device-type
  "\"cpu\" or \"gpu\"."
  [^Context context]
  (.-deviceType context))

(defn device-id
  "The device's number, an int (as clojure-mxnet's)."
  [^Context context]
  (int (.-deviceId context)))
