(ns org.apache.clojure-mxnet.bridge.json
  "The bridge's JSON, both ways, through its one codec
   (`org.apache.clojure_mxnet.bridge.Json`): `->json` writes what the JVM
   sends the engine, `parse` reads what the engine answers."
  (:require [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.bridge Json Json$Unwritable)))

(set! *warn-on-reflection* true)

(defn ->json
  "Compact JSON text for Clojure data (maps, sequentials, sets, strings,
   keywords, numbers, booleans, nil). Anything else throws ex-info
   {:type :invalid-argument :value x}."
  ^String [x]
  (try
    (Json/write x)
    (catch Json$Unwritable e
      (throw (util/at-caller (ex-info (.getMessage e) {:type :invalid-argument
                                                       :value (.value e)}))))))

(defn parse
  "The Clojure data of JSON text `s` (from character `start`, default 0):
   maps with keyword keys, vectors, longs, doubles, strings, booleans, nil."
  ([^String s] (Json/parse s))
  ([^String s start] (Json/parse s (int start))))
