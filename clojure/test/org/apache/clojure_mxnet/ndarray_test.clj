(ns org.apache.clojure-mxnet.ndarray-test
  "NDArrays as a REPL user meets them: making arrays (on a context, with a
   dtype), asking their shape, size and context, element-wise arithmetic
   that makes a new array or writes in place, reading the contents back in
   each form the API offers, views and joins, files, and an array's life
   (copies, disposal, printing). The other operators, conversions and
   equality are in ndarray-operators-test."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.base :as base]
            [org.apache.clojure-mxnet.context :as ctx]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.shape :as mx-shape])
  (:import (clojure.lang ExceptionInfo)
           (java.io File StringWriter)
           (org.apache.clojure_mxnet.bridge FloatVector)))

(set! *warn-on-reflection* true)

(defn- scratch-path
  "A fresh file name in the temp directory, removed when the JVM exits."
  ^String [tag]
  (let [f (File/createTempFile (str "mxkv-ndarray-test-" tag "-") ".nd")]
    (.deleteOnExit f)
    (.getPath f)))

(defn- quietly
  "Calls `f` with *out* discarded (spec validation prints its explanation)."
  [f]
  (binding [*out* (StringWriter.)] (f)))

;;; ------------------------------------------------------------------ making arrays

(deftest zeros-ones-and-full-fill-every-element
  (is (= [0.0 0.0 0.0] (nd/->vec (nd/zeros [3]))))
  (is (= [1.0 1.0 1.0 1.0] (nd/->vec (nd/ones [2 2]))))
  (let [a (nd/full [2 3] -2.5)]
    (is (= [2 3] (nd/shape-vec a)))
    (is (= (vec (repeat 6 -2.5)) (nd/->vec a)))))

(deftest array-reads-numbers-in-row-major-order
  (let [m (nd/array [9 8 7 6 5 4] [2 3])]
    (is (= [[9.0 8.0 7.0] [6.0 5.0 4.0]] (nd/->nd-vec m)))))

(deftest array-needs-exactly-as-many-numbers-as-the-shape-holds
  (let [e (is (thrown? ExceptionInfo (nd/array [1 2 3 4 5] [2 3])))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"source has 5 elements but shape \[2 3\] needs 6" (ex-message e)))))

(deftest a-large-float-array-reaches-the-engine-intact
  ;; 16 MiB each way: past the size that goes through shared memory
  (let [n (* 4 1024 1024)
        src (float-array n)
        _ (dotimes [i n] (aset src i (float (- i))))
        a (nd/array src [n])]
    (is (= (float (- (dec n))) (nd/to-scalar (nd/slice a (dec n))))
        "the engine holds the last element")
    (let [back (nd/->vec a)]
      (is (= n (count back)))
      (is (= (float -3000001) (back 3000001))))))

(deftest arange-counts-up-from-start-to-below-stop
  (is (= [2.0 3.0 4.0 5.0] (nd/->vec (nd/arange 2 6)))))

(deftest arange-takes-a-step-and-repeats-each-number
  (let [a (nd/arange 1 3 {:step 0.5 :repeat 3})]
    (is (= (vec (for [x (range 1.0 3.0 0.5), _ (range 3)] x))
           (nd/->vec a)))))

(deftest ->ndarray-takes-the-shape-from-the-nesting
  (let [v (nd/->ndarray [-1.5 2.5 0])
        m (nd/->ndarray [[1 2] [3 4] [5 6]])
        column (nd/->ndarray [[[9] [8] [7]]])]
    (is (= [3] (nd/shape-vec v)))
    (is (= [-1.5 2.5 0.0] (nd/->vec v)))
    (is (= [3 2] (nd/shape-vec m)))
    (is (= [[1.0 2.0] [3.0 4.0] [5.0 6.0]] (nd/->nd-vec m)))
    (is (= [1 3 1] (nd/shape-vec column)))
    (is (= [9.0 8.0 7.0] (nd/->vec column)))))

(deftest empty-takes-a-context-and-a-dtype
  (let [a (nd/empty [3 2] {:ctx (ctx/cpu 2) :dtype :float64})]
    (is (= [3 2] (nd/shape-vec a)))
    (is (= (ctx/cpu 2) (nd/context a)))
    (is (= dtype/FLOAT64 (nd/dtype a)))))

(deftest the-creators-take-a-context-and-a-dtype-in-any-spelling
  (let [z (nd/zeros [3] {:ctx (ctx/cpu 1) :dtype dtype/INT32})
        f (nd/full [2] 4 {:dtype "float64"})
        a (nd/array [5 6] [2] {:ctx (ctx/cpu 3) :dtype :int32})]
    (is (= [(ctx/cpu 1) dtype/INT32] [(nd/context z) (nd/dtype z)]))
    (is (= dtype/FLOAT64 (nd/dtype f)))
    (is (= [4.0 4.0] (nd/->vec f)))
    (is (= [(ctx/cpu 3) dtype/INT32] [(nd/context a) (nd/dtype a)]))
    (is (= [5 6] (nd/->int-vec a)))))

;;; ------------------------------------------------------------------ what an array knows

(deftest shape-and-size
  (let [m (nd/zeros [5 2])]
    (is (= (mx-shape/->shape [5 2]) (nd/shape m)) "a Shape")
    (is (= [5 2] (nd/shape-vec m)))
    (is (= (* 5 2) (nd/size m)))))

(deftest float32-is-the-default-dtype
  (is (= base/MX_REAL_TYPE (nd/dtype (nd/ones [4 1]))))
  (is (= dtype/FLOAT32 (nd/dtype (nd/array [1 2] [2])))))

(deftest arrays-live-on-cpu-0-unless-told-otherwise
  (let [c (nd/context (nd/full [2 2] 1))]
    (is (= "cpu" (ctx/device-type c)))
    (is (= 0 (ctx/device-id c)))))

;;; ------------------------------------------------------------------ arithmetic

(deftest plus-makes-a-new-array
  (let [xs [1.0 2.0 3.0] ys [0.5 -4.0 8.0]
        a (nd/array xs [3]) b (nd/array ys [3])]
    (is (= (mapv + xs ys) (nd/->vec (nd/+ a b))))
    (is (= (mapv #(+ % 10) xs) (nd/->vec (nd/+ a 10))))
    (is (= xs (nd/->vec a)) "the operands are unchanged")))

(deftest plus-equals-adds-in-place
  (let [a (nd/array [1 2 3] [3])]
    (is (identical? a (nd/+= a 10)))
    (is (= [11.0 12.0 13.0] (nd/->vec a)))
    (nd/+= a (nd/array [-1 -2 -3] [3]))
    (is (= [10.0 10.0 10.0] (nd/->vec a)))))

(deftest minus-makes-a-new-array
  (let [xs [5.0 0.0 -2.0] ys [1.0 2.0 3.0]
        a (nd/array xs [3]) b (nd/array ys [3])]
    (is (= (mapv - xs ys) (nd/->vec (nd/- a b))))
    (is (= (mapv #(- % 0.5) xs) (nd/->vec (nd/- a 0.5))))
    (is (= (mapv #(- 10 %) xs) (nd/->vec (nd/- 10 a))) "a number may come first")
    (is (= xs (nd/->vec a)) "the operands are unchanged")))

(deftest minus-equals-subtracts-in-place
  (let [a (nd/array [4 4] [2])]
    (is (identical? a (nd/-= a 1)))
    (is (= [3.0 3.0] (nd/->vec a)))
    (nd/-= a a)
    (is (= [0.0 0.0] (nd/->vec a)))))

(deftest times-makes-a-new-array
  (let [xs [1.5 -2.0 4.0] ys [2.0 3.0 0.25]
        a (nd/array xs [3]) b (nd/array ys [3])]
    (is (= (mapv * xs ys) (nd/->vec (nd/* a b))))
    (is (= (mapv #(* % 3) xs) (nd/->vec (nd/* a 3))))
    (is (= xs (nd/->vec a)) "the operands are unchanged")))

(deftest times-equals-multiplies-in-place
  (let [a (nd/array [3 -1] [2])]
    (is (identical? a (nd/*= a a)))
    (is (= [9.0 1.0] (nd/->vec a)))
    (nd/*= a 0.5)
    (is (= [4.5 0.5] (nd/->vec a)))))

(deftest div-makes-a-new-array
  (let [xs [3.0 -6.0 0.0] ys [4.0 2.0 8.0]
        a (nd/array xs [3]) b (nd/array ys [3])]
    (is (= (mapv / xs ys) (nd/->vec (nd/div a b))) "0 divided by a number is 0")
    (is (= (mapv #(/ % 4) xs) (nd/->vec (nd/div a 4))))
    (is (= [1.0 1.0 1.0] (nd/->vec (nd/div b b))))
    (is (= (mapv #(/ 24 %) ys) (nd/->vec (nd/div 24 b))) "a number may come first")
    (is (= xs (nd/->vec a)) "the operands are unchanged")))

(deftest slash-is-div
  (let [a (nd/array [1 2 3] [3])]
    (is (= (nd/->vec (nd/div a 8)) (nd/->vec (nd// a 8))))
    (is (= [0.125 0.25 0.375] (nd/->vec (nd// a 8))))))

(deftest div-equals-divides-in-place
  (let [a (nd/array [6 9] [2])]
    (is (identical? a (nd/div= a 3)))
    (is (= [2.0 3.0] (nd/->vec a)))
    (nd/div= a (nd/array [4 2] [2]))
    (is (= [0.5 1.5] (nd/->vec a)))))

(deftest arithmetic-refuses-an-operand-that-is-not-a-number-or-array
  (let [e (is (thrown? ExceptionInfo (nd/* (nd/ones [2]) "two")))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (re-find #"Invalid operand: the right operand must be a number or an NDArray, got java.lang.String"
                 (ex-message e)))))

(deftest mismatched-shapes-are-an-engine-error
  (let [e (is (thrown? ExceptionInfo (nd/+ (nd/ones [2 2]) (nd/ones [3]))))]
    (is (= :mxnet-error (:type (ex-data e))))
    (is (string? (:python-class (ex-data e))))))

;;; ------------------------------------------------------------------ contents out

(deftest ->vec-reads-the-elements-in-row-major-order
  (is (= [4.0 3.0 2.0 1.0] (nd/->vec (nd/->ndarray [[4 3] [2 1]])))))

(deftest ->vec-is-a-vector-of-floats-like-any-other
  (let [v (nd/->vec (nd/array [0.5 1.5 2.5] [3]))]
    (is (instance? FloatVector v))
    (is (= [0.5 1.5 2.5] v))
    (is (= v [0.5 1.5 2.5]))
    (is (= (hash (mapv float [0.5 1.5 2.5])) (hash v)))
    (is (= "[0.5 1.5 2.5]" (pr-str v)))
    (is (= 4.5 (reduce + v)))
    (is (= [0.5 1.5 2.5 :next] (conj v :next)))))

(deftest to-array-copies-into-a-float-array
  (let [a (nd/array [2 4 6] [3])
        arr (nd/to-array a)]
    (is (= Float/TYPE (.getComponentType (class arr))))
    (is (= [2.0 4.0 6.0] (vec arr)))
    (aset arr 0 (float 100))
    (is (= [2.0 4.0 6.0] (nd/->vec a)) "a copy: writing to it leaves the array alone")))

(deftest ->nd-vec-nests-the-elements-by-the-shape
  (is (= [[[5.0]]] (nd/->nd-vec (nd/array [5] [1 1 1]))))
  (is (= [[[0.0 1.0 2.0]] [[3.0 4.0 5.0]]]
         (nd/->nd-vec (nd/array (range 6) [2 1 3]))))
  (is (= [[[0.0] [1.0]] [[2.0] [3.0]] [[4.0] [5.0]]]
         (nd/->nd-vec (nd/array (range 6) [3 2 1])))))

(deftest ->nd-vec-takes-only-an-array
  (let [e (is (thrown? ExceptionInfo (quietly #(nd/->nd-vec [[1 2] [3 4]]))))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (= "Invalid input array: ndarray must be an NDArray, got [[1 2] [3 4]]" (ex-message e)))))

(deftest each-dtype-reads-back-as-floats-ints-and-doubles
  (doseq [dt [dtype/UINT8 dtype/INT32 dtype/FLOAT64]]
    (testing (str dt)
      (let [a (nd/* (nd/array [3 5] [2] {:dtype dt}) 2)]
        (is (= dt (nd/dtype a)) "arithmetic keeps the dtype")
        (is (= (mapv #(* 2.0 %) [3 5]) (nd/->float-vec a)))
        (is (= (mapv #(* 2 %) [3 5]) (nd/->int-vec a)))
        (is (= (mapv #(* 2.0 %) [3 5]) (nd/->double-vec a)))))))

(deftest ->raw-gives-each-element-in-its-dtypes-width
  (doseq [[dt width] [[dtype/UINT8 1] [dtype/INT32 4] [dtype/FLOAT32 4] [dtype/FLOAT64 8]]]
    (testing (str dt)
      (is (= (* 5 width) (alength (nd/->raw (nd/ones [5] {:dtype dt})))))))
  (is (= [2 1 0 0] (vec (nd/->raw (nd/array [258] [1] {:dtype dtype/INT32}))))
      "little-endian: 258 is 0x0102"))

;;; ------------------------------------------------------------------ views, copies, joins

(deftest slice-takes-rows-along-the-first-axis
  (let [m (nd/array (range 8) [4 2])
        one (nd/slice m 2)
        two (nd/slice m 1 3)]
    (is (= [1 2] (nd/shape-vec one)))
    (is (= [4.0 5.0] (nd/->vec one)))
    (is (= [2 2] (nd/shape-vec two)))
    (is (= [2.0 3.0 4.0 5.0] (nd/->vec two)))))

(deftest a-slice-shares-memory-with-its-array
  (let [m (nd/zeros [3 2])]
    (nd/+= (nd/slice m 1) 7)
    (is (= [0.0 0.0 7.0 7.0 0.0 0.0] (nd/->vec m)))))

(deftest reshape-keeps-the-elements-in-order
  (let [m (nd/array (range 6) [2 3])
        r (nd/reshape m [3 2])]
    (is (= [3 2] (nd/shape-vec r)))
    (is (= (nd/->vec m) (nd/->vec r)))
    (is (= [6] (nd/shape-vec (nd/reshape m (mx-shape/->shape [6])))) "a Shape works too")
    (is (= [3 2] (nd/shape-vec (nd/reshape m [-1 2]))) "-1 is inferred")))

(deftest concatenate-stacks-rows-by-default
  (let [top [1 1 1 2 2 2] bottom [3 3 3]
        r (nd/concatenate [(nd/array top [2 3]) (nd/array bottom [1 3])])]
    (is (= [3 3] (nd/shape-vec r)))
    (is (= (mapv double (concat top bottom)) (nd/->vec r)))))

(deftest concatenate-on-axis-1-joins-columns
  (let [left [[0 1] [10 11]] right [[2 3 4] [12 13 14]]
        r (nd/concatenate [(nd/->ndarray left) (nd/->ndarray right)] {:axis 1})]
    (is (= [2 5] (nd/shape-vec r)))
    (is (= (mapv #(mapv double (into %1 %2)) left right) (nd/->nd-vec r)))))

(deftest copy-to-writes-into-an-array-of-the-same-shape
  (let [src (nd/array [7 8 9] [3 1])
        dest (nd/empty [3 1])]
    (is (identical? dest (nd/copy-to src dest)))
    (is (= [3 1] (nd/shape-vec dest)))
    (is (= [7.0 8.0 9.0] (nd/->vec dest)))))

(deftest copy-is-independent-of-its-source
  (let [a (nd/full [2] 3)
        b (nd/copy a)]
    (nd/*= a 2)
    (is (= [3.0 3.0] (nd/->vec b)))
    (is (= [6.0 6.0] (nd/->vec a)))))

(deftest as-in-context-copies-only-to-another-device
  (let [a (nd/full [2] 5)]
    (is (identical? a (nd/as-in-context a (ctx/cpu 0))))
    (let [b (nd/as-in-context a (ctx/cpu 2))]
      (is (= (ctx/cpu 2) (nd/context b)))
      (is (= [5.0 5.0] (nd/->vec b))))))

(deftest as-type-converts-a-copy-truncating-toward-zero
  (let [a (nd/array [2.75 -1.5 3.25] [3])
        i (nd/as-type a dtype/INT32)]
    (is (= dtype/INT32 (nd/dtype i)))
    (is (= [2 -1 3] (nd/->int-vec i)))
    (is (= dtype/FLOAT32 (nd/dtype a)) "the source keeps its dtype")))

;;; ------------------------------------------------------------------ files

(deftest save-and-load-keep-arrays-by-name
  (let [path (scratch-path "named")
        w (nd/array [0.25 0.5 0.75 1] [2 2])
        b (nd/array [-3] [1])]
    (is (nil? (nd/save path {"weight" w :bias b})))
    (let [loaded (nd/load path)]
      (is (= #{"weight" "bias"} (set (keys loaded))) "keyword names come back as strings")
      (is (= [2 2] (nd/shape-vec (loaded "weight"))))
      (is (= [0.25 0.5 0.75 1.0] (nd/->vec (loaded "weight"))))
      (is (= [-3.0] (nd/->vec (loaded "bias")))))))

(deftest save-to-file-and-load-from-file-keep-one-array
  (let [path (scratch-path "one")
        a (nd/array [4 5 6] [3 1])]
    (is (nil? (nd/save-to-file path a)))
    (let [back (nd/load-from-file path)]
      (is (= [3 1] (nd/shape-vec back)))
      (is (= [4.0 5.0 6.0] (nd/->vec back))))))

;;; ------------------------------------------------------------------ an array's life

(deftest dispose-frees-the-array-and-later-use-says-so
  (let [a (nd/ones [2])]
    (is (not (nd/is-disposed a)))
    (is (nil? (nd/dispose a)))
    (is (nd/is-disposed a))
    (is (re-find #"disposed" (pr-str a)))
    (is (thrown-with-msg? ExceptionInfo #"disposed" (nd/->vec a)))))

(deftest arrays-print-their-shape-dtype-and-context
  (is (= "#<NDArray [4] int32 cpu(3)>"
         (pr-str (nd/ones [4] {:ctx (ctx/cpu 3) :dtype :int32})))))
