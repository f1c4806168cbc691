(ns org.apache.clojure-mxnet.ndarray-test
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.base :as base]
            [org.apache.clojure-mxnet.context :as ctx]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.ndarray :as ndarray :refer [->vec zeros ones += -= *= full shape]]
            [org.apache.clojure-mxnet.shape :as mx-shape]))

(defn- tmp-file [tag]
  (str (io/file (System/getProperty "java.io.tmpdir") (str "mxkv-" tag "-" (System/nanoTime) ".bin"))))

;;; from clojure-mxnet's ndarray tests, for the functions this API keeps

(deftest test->vec
  (is (= [0.0 0.0 0.0 0.0] (->vec (zeros [2 2])))))

(deftest test-to-array
  (is (= [0.0 0.0 0.0 0.0] (vec (ndarray/to-array (zeros [2 2]))))))

(deftest test-size-and-shape
  (let [m (zeros [4 1])]
    (is (= (mx-shape/->shape [4 1]) (ndarray/shape m)))
    (is (= 4 (ndarray/size m)))))

(deftest test-dtype
  (is (= base/MX_REAL_TYPE (ndarray/dtype (zeros [3 2])))))

(deftest test-plus
  (let [ndzeros (zeros [2 1])
        ndones (ndarray/+ ndzeros 1)]
    (is (= [1.0 1.0] (->vec ndones)))
    (is (= [2.0 2.0] (->vec (ndarray/+ ndones 1))))
    (is (= [1.0 1.0] (->vec ndones)))
    (is (= [2.0 2.0] (->vec (+= ndones 1))))
    (is (= [2.0 2.0] (->vec ndones)))))

(deftest test-minus
  (let [ndones (ones [2 1])
        ndzeros (ndarray/- ndones 1)]
    (is (= [0.0 0.0] (->vec ndzeros)))
    (is (= [-1.0 -1.0] (->vec (ndarray/- ndzeros 1))))
    (is (= [0.0 0.0] (->vec ndzeros)))
    (is (= [-1.0 -1.0] (->vec (-= ndzeros 1))))
    (is (= [-1.0 -1.0] (->vec ndzeros)))))

(deftest test-multiplication
  (let [ndones (ones [2 1])
        ndtwos (ndarray/* ndones 2)]
    (is (= [2.0 2.0] (->vec ndtwos)))
    (is (= [1.0 1.0] (->vec (ndarray/* ndones ndones))))
    (is (= [4.0 4.0] (->vec (ndarray/* ndtwos ndtwos))))
    (is (= [4.0 4.0] (->vec (*= ndtwos ndtwos))))
    (is (= [4.0 4.0] (->vec ndtwos)))))

(deftest test-division
  (let [ndones (ones [2 1])
        ndzeros (ndarray/- ndones 1)
        ndhalves (ndarray/div ndones 2)]
    (is (= [0.5 0.5] (->vec ndhalves)))
    (is (= [1.0 1.0] (->vec (ndarray/div ndhalves ndhalves))))
    (is (= [1.0 1.0] (->vec (ndarray/div ndones ndones))))
    (is (= [0.0 0.0] (->vec (ndarray/div ndzeros ndones))))
    (is (= [0.5 0.5] (->vec (ndarray// ndones 2))))
    (is (= [1.0 1.0] (->vec (ndarray/div= ndhalves ndhalves))))
    (is (= [1.0 1.0] (->vec ndhalves)))))

(deftest test-full
  (let [nda (full [1 2] 3.0)]
    (is (= (shape nda) (mx-shape/->shape [1 2])))
    (is (= [3.0 3.0] (->vec nda)))))

(deftest test-arrange
  (is (= [0.0 0.0 0.5 0.5 1.0 1.0 1.5 1.5 2.0 2.0 2.5 2.5 3.0 3.0 3.5 3.5 4.0 4.0 4.5 4.5]
         (->vec (ndarray/arange 0 5 {:step 0.5 :repeat 2}))))
  (is (= [0.0 1.0 2.0] (->vec (ndarray/arange 0 3)))))

(deftest test->ndarray
  (let [nda1 (ndarray/->ndarray [5.0 -4.0])
        nda2 (ndarray/->ndarray [[1 2 3]
                                 [4 5 6]])
        nda3 (ndarray/->ndarray [[[7.0] [8.0]]])]
    (is (= [5.0 -4.0] (->vec nda1)))
    (is (= [2] (mx-shape/->vec (shape nda1))))
    (is (= [1.0 2.0 3.0 4.0 5.0 6.0] (->vec nda2)))
    (is (= [2 3] (mx-shape/->vec (shape nda2))))
    (is (= [7.0 8.0] (->vec nda3)))
    (is (= [1 2 1] (mx-shape/->vec (shape nda3))))))

(deftest test-copy-to
  (let [source (ndarray/array [1 2 3] [1 3])
        dest (ndarray/empty [1 3])
        _ (ndarray/copy-to source dest)]
    (is (= [1 3] (-> dest shape mx-shape/->vec)))
    (is (= [1.0 2.0 3.0] (->vec dest)))))

(deftest test-concatenate-axis-0
  (let [nda1 (ndarray/array [1 2 4 3 3 3] [2 3])
        nda2 (ndarray/array [8 7 6] [1 3])
        res (ndarray/concatenate [nda1 nda2])]
    (is (= [3 3] (-> res shape mx-shape/->vec)))
    (is (= [1.0 2.0 4.0 3.0 3.0 3.0 8.0 7.0 6.0] (->vec res)))))

(deftest test-concatenate-axis-1
  (let [nda1 (ndarray/array [1 2 3 4] [2 2])
        nda2 (ndarray/array [5 6] [2 1])
        res (ndarray/concatenate [nda1 nda2] {:axis 1})]
    (is (= [2 3] (-> res shape mx-shape/->vec)))
    (is (= [1.0 2.0 5.0 3.0 4.0 6.0] (->vec res)))))

(deftest test-save-and-load-with-names
  (let [filename (tmp-file "named")
        nda (ndarray/array [1 2 3] [3 1])
        _ (ndarray/save filename {"local" nda})
        load-map (ndarray/load filename)]
    (is (= ["local"] (keys load-map)))
    (is (= 1 (count (vals load-map))))
    (is (= [3 1] (-> (get load-map "local") shape mx-shape/->vec)))
    (is (= [1.0 2.0 3.0] (->vec (get load-map "local"))))
    (io/delete-file filename true)))

(deftest test-save-to-file-and-load-from-file
  (let [filename (tmp-file "one")
        nda (ndarray/array [1 2 3] [3 1])
        _ (ndarray/save-to-file filename nda)
        load-nda (ndarray/load-from-file filename)]
    (is (= [3 1] (-> load-nda shape mx-shape/->vec)))
    (is (= [1.0 2.0 3.0] (->vec load-nda)))
    (io/delete-file filename true)))

(deftest test-get-context
  (let [nda (ones [3 2])
        c (ndarray/context nda)]
    (is (= "cpu" (ctx/device-type c)))
    (is (= 0 (ctx/device-id c)))))

(deftest test-equals
  (let [nda1 (ndarray/array [1 2 3] [3 1])
        nda2 (ndarray/array [1 2 3] [3 1])
        nda3 (ndarray/array [1 2 3] [1 3])
        nda4 (ndarray/array [3 2 3] [3 1])]
    (is (= nda1 nda2))
    (is (not= nda1 nda3))
    (is (not= nda1 nda4))))

(deftest test-slice
  (let [nda (ndarray/array [1 2 3 4 5 6] [3 2])]
    (let [nda1 (ndarray/slice nda 1)]
      (is (= [1 2] (-> nda1 shape mx-shape/->vec)))
      (is (= [3.0 4.0] (->vec nda1))))
    (let [nda2 (ndarray/slice nda 1 3)]
      (is (= [2 2] (-> nda2 shape mx-shape/->vec)))
      (is (= [3.0 4.0 5.0 6.0] (->vec nda2))))))

(deftest test-reshape
  (let [nda (ndarray/array [1 2 3 4 5 6] [3 2])
        nda1 (ndarray/reshape nda [2 3])]
    (is (= [2 3] (-> nda1 shape mx-shape/->vec)))
    (is (= [1.0 2.0 3.0 4.0 5.0 6.0] (->vec nda1)))
    (is (= [6] (ndarray/shape-vec (ndarray/reshape nda (mx-shape/->shape [6])))))))

(deftest test-dtype-int32
  (let [nda (ndarray/* (ones [1 2] {:dtype dtype/INT32}) 2)]
    (is (= dtype/INT32 (ndarray/dtype nda)))
    (is (= 8 (count (ndarray/->raw nda))))
    (is (= [2.0 2.0] (ndarray/->float-vec nda)))
    (is (= [2 2] (ndarray/->int-vec nda)))
    (is (= [2.0 2.0] (ndarray/->double-vec nda)))))

(deftest test-dtype-uint8
  (let [nda (ndarray/* (ones [1 2] {:dtype dtype/UINT8}) 2)]
    (is (= dtype/UINT8 (ndarray/dtype nda)))
    (is (= 2 (count (ndarray/->raw nda))))
    (is (= [2.0 2.0] (ndarray/->float-vec nda)))
    (is (= [2 2] (ndarray/->int-vec nda)))))

(deftest test-dtype-float64
  (let [nda (ndarray/* (ones [1 2] {:dtype dtype/FLOAT64}) 2)]
    (is (= dtype/FLOAT64 (ndarray/dtype nda)))
    (is (= 16 (count (ndarray/->raw nda))))
    (is (= [2.0 2.0] (ndarray/->double-vec nda)))))

(deftest test->nd-vec
  (is (= [[[1.0]]]
         (ndarray/->nd-vec (ndarray/array [1] [1 1 1]))))
  (is (= [[[1.0 2.0]] [[3.0 4.0]] [[5.0 6.0]]]
         (ndarray/->nd-vec (ndarray/array [1 2 3 4 5 6] [3 1 2]))))
  (is (= [[[1.0] [2.0]] [[3.0] [4.0]] [[5.0] [6.0]]]
         (ndarray/->nd-vec (ndarray/array [1 2 3 4 5 6] [3 2 1]))))
  (is (thrown-with-msg? Exception #"Invalid input array"
                        (binding [*out* (java.io.StringWriter.)]
                          (ndarray/->nd-vec [1 2 3 4 5])))))

;;; the rest of the surface

(deftest empty-has-shape-and-options
  (let [a (ndarray/empty [2 2] {:ctx (ctx/cpu 1) :dtype :float64})]
    (is (= [2 2] (ndarray/shape-vec a)))
    (is (= (ctx/cpu 1) (ndarray/context a)))
    (is (= dtype/FLOAT64 (ndarray/dtype a)))))

(deftest creation-honours-ctx-and-dtype
  (let [z (zeros [2] {:ctx (ctx/cpu 2) :dtype dtype/INT32})
        f (full [2] 7 {:dtype "float64"})
        a (ndarray/array [1 2] [2] {:ctx (ctx/cpu 1) :dtype :int32})]
    (is (= [(ctx/cpu 2) dtype/INT32] [(ndarray/context z) (ndarray/dtype z)]))
    (is (= dtype/FLOAT64 (ndarray/dtype f)))
    (is (= [7.0 7.0] (->vec f)))
    (is (= [(ctx/cpu 1) dtype/INT32 [1 2]] [(ndarray/context a) (ndarray/dtype a) (ndarray/->int-vec a)]))))

(deftest array-checks-the-element-count
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"source has 3 elements"
                        (ndarray/array [1 2 3] [2 2]))))

(deftest ->vec-is-a-float-vector-that-prints-like-clojure-mxnet
  (let [v (->vec (full [3] 2))]
    (is (instance? org.apache.clojure_mxnet.bridge.FloatVector v))
    (is (= "[2.0 2.0 2.0]" (pr-str v)))
    (is (= [2.0 2.0 2.0] v))
    (is (= v [2.0 2.0 2.0]))
    (is (= (hash [(float 2) (float 2) (float 2)]) (hash v)))
    (is (= 6.0 (reduce + v)))
    (is (= [2.0 2.0 2.0 1] (conj v 1)))))

(deftest large-arrays-cross-shared-memory-both-ways
  (let [n (* 3 1024 1024)
        data (float-array (range n))
        a (ndarray/array data [n])
        v (->vec a)]
    (is (= n (count v)))
    (is (= 0.0 (v 0)))
    (is (= (float (dec n)) (v (dec n))))
    (is (= (float 1234567) (v 1234567)))))

(deftest copy-is-independent
  (let [a (ones [2])
        b (ndarray/copy a)]
    (+= a 1)
    (is (= [1.0 1.0] (->vec b)))
    (is (= [2.0 2.0] (->vec a)))))

(deftest as-in-context-copies-only-across-devices
  (let [a (ones [2])]
    (is (identical? a (ndarray/as-in-context a (ctx/cpu 0))))
    (let [b (ndarray/as-in-context a (ctx/cpu 1))]
      (is (= (ctx/cpu 1) (ndarray/context b)))
      (is (= [1.0 1.0] (->vec b))))))

(deftest as-type-converts
  (let [a (ndarray/as-type (ndarray/array [1.7 2.2] [2]) dtype/INT32)]
    (is (= dtype/INT32 (ndarray/dtype a)))
    (is (= [1 2] (ndarray/->int-vec a)))))

(deftest arithmetic-operands-are-validated
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid operand"
                        (binding [*out* (java.io.StringWriter.)] (ndarray/+ (ones [1]) "x")))))

(deftest shape-mismatch-is-an-engine-error
  (let [e (is (thrown? clojure.lang.ExceptionInfo (ndarray/+ (ones [2]) (ones [3]))))]
    (is (string? (:python-class (ex-data e))))))

(deftest dispose-frees-and-marks
  (let [a (ones [2])]
    (is (not (ndarray/is-disposed a)))
    (is (nil? (ndarray/dispose a)))
    (is (ndarray/is-disposed a))
    (is (re-find #"disposed" (pr-str a)))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"disposed" (->vec a)))))

(deftest arrays-print-shape-dtype-and-context
  (is (= "#<NDArray [2 3] float32 cpu(1)>" (pr-str (zeros [2 3] {:ctx (ctx/cpu 1)})))))
