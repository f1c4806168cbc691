(ns org.apache.clojure-mxnet.dtype
  "Element types of NDArrays. A DType is a value named like numpy's dtype:
   `(str dtype/FLOAT32)` and `(name dtype/FLOAT32)` are \"float32\", and
   `(ndarray/dtype a)` equals the constant of its type. Wherever a dtype is
   expected, a DType, keyword, string or symbol works (`:float32`,
   \"float32\", 'Float32)."
  (:require [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.dtype DType)))

(set! *warn-on-reflection* true)

;; DType is a JVM class (org.apache.clojure_mxnet.dtype.DType): the dtype of
;; an array made before this namespace was reloaded equals the new constants.

(defn ->DType
  "The DType named `nm` (a string), unchecked (see `->dtype`)."
  [nm]
  (DType. ^String nm))

(defmethod print-method DType [d ^java.io.Writer w]
  (.write w (str "#<DType " d ">")))

(def UINT8 "8-bit unsigned integers." (DType. "uint8"))
(def INT8 "8-bit signed integers (an mxkv addition)." (DType. "int8"))
(def INT32 "32-bit signed integers." (DType. "int32"))
(def INT64 "64-bit signed integers (an mxkv addition)." (DType. "int64"))
(def FLOAT16 "Half-precision floats." (DType. "float16"))
(def FLOAT32 "Single-precision floats, the default." (DType. "float32"))
(def FLOAT64 "Double-precision floats." (DType. "float64"))

(def ^:private known
  (into {} (map (juxt str identity)) [UINT8 INT8 INT32 INT64 FLOAT16 FLOAT32 FLOAT64]))

(defn ->dtype
  "The DType for `d`: a DType, or a keyword, string or symbol naming one in
   any case (:float32, \"Int32\", 'uint8). Throws ex-info
   `{:type :invalid-argument}` naming the known types for anything else."
  [d]
  (if (instance? DType d)
    d
    (or (when (or (keyword? d) (string? d) (symbol? d))
          (known (.toLowerCase ^String (name d))))
        ;; (pointing at the API's caller, whose value it was)
        (throw (util/at-caller
                (ex-info (str "unknown dtype " (pr-str d) "; expected one of "
                              (clojure.string/join ", " (sort (keys known))))
                         {:type :invalid-argument :dtype d}))))))
