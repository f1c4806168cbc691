(ns org.apache.clojure-mxnet.dtype
  "Element types of NDArrays, as keywords named like numpy's dtypes.
   Wherever a dtype is expected, a keyword, string or symbol works.")

(def UINT8 :uint8)
(def INT8 :int8)
(def INT32 :int32)
(def INT64 :int64)
(def FLOAT16 :float16)
(def FLOAT32 :float32)
(def FLOAT64 :float64)

(defn ->dtype
  "Normalises a dtype given as keyword, string or symbol (\"float32\",
   :Float32, 'int32) to its keyword."
  [d]
  (keyword (.toLowerCase ^String (name d))))
