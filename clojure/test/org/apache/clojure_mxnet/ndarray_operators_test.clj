(ns org.apache.clojure-mxnet.ndarray-operators-test
  "The NDArray functions beyond creation and transfer: operators with
   clojure-mxnet's argument forms, conversions, serialization, copies,
   dependencies and equality."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.context :as ctx]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.ndarray :as nd]))

(defn- close?
  "Equal within relative tolerance `tol`."
  [tol xs ys]
  (and (= (count xs) (count ys))
       (every? true? (map (fn [x y] (<= (Math/abs (- (double x) (double y)))
                                        (* tol (max 1.0 (Math/abs (double x))))))
                          xs ys))))

(defn- invalid? [f]
  (try (binding [*out* (java.io.StringWriter.)] (f)) false
       (catch clojure.lang.ExceptionInfo e (= :invalid-argument (:type (ex-data e))))))

;;; ------------------------------------------------------------------ operators

(deftest operators-take-positional-parameters-in-mxnets-order
  (let [m (nd/array [1 5 2 4 3 6] [2 3])]
    (is (= [21.0] (nd/->vec (nd/sum m))))
    (is (= [5.0 8.0 8.0] (nd/->vec (nd/sum m 0))))
    (is (= [2 1] (nd/shape-vec (nd/sum m 1 true))))
    (is (= [6.0] (nd/->vec (nd/max m))))
    (is (= [1.0 3.0] (nd/->vec (nd/min m 1))))
    (is (= [2.0 4.0 2.0 4.0 3.0 4.0] (nd/->vec (nd/clip m 2 4))))))

(deftest operators-also-take-parameters-by-name
  (let [m (nd/array [1 5 2 4 3 6] [2 3])]
    (is (= [8.0 13.0] (nd/->vec (nd/sum m {:axis 1}))))
    (is (= [2 1] (nd/shape-vec (nd/sum m {:axis 1 :keepdims true}))))
    (is (= [3 2] (nd/shape-vec (nd/transpose m))))
    (is (= [2 4 3] (nd/shape-vec (nd/transpose (nd/zeros [2 3 4]) [0 2 1]))))
    (is (= [21.0] (nd/->vec (nd/norm m {:ord 1}))))
    (is (= dtype/FLOAT64 (nd/dtype (nd/norm m {:out-dtype dtype/FLOAT64}))))))

(deftest operator-misuse-is-an-engine-error-naming-the-parameters
  (let [e (is (thrown? clojure.lang.ExceptionInfo (nd/clip (nd/ones [2]) 1 2 3)))]
    (is (= :mxnet-error (:type (ex-data e))))
    (is (re-find #"clip takes at most 2 parameters .*\(a_min, a_max\)" (ex-message e))))
  (is (invalid? #(nd/sqrt 4)) "an operator needs an NDArray"))

(deftest element-wise-math
  (let [x (nd/array [1.5 2.5 -1.5 -2.5] [4])]
    (is (= [2.0 3.0 -2.0 -3.0] (nd/->vec (nd/round x))) "halves away from zero")
    (is (= [2.0 3.0 -1.0 -2.0] (nd/->vec (nd/ceil x))))
    (is (= [1.0 2.0 -2.0 -3.0] (nd/->vec (nd/floor x))))
    (is (= [1.0 1.0 -1.0 -1.0] (nd/->vec (nd/sign x))))
    (is (= [1.5 2.5 1.5 2.5] (nd/->vec (nd/abs x))))
    (is (= [2.25 6.25 2.25 6.25] (nd/->vec (nd/square x)))))
  (let [y (nd/array [1 4] [2])]
    (is (= [1.0 2.0] (nd/->vec (nd/sqrt y))))
    (is (= [1.0 0.5] (nd/->vec (nd/rsqrt y))))
    (is (close? 1e-6 [(Math/E) (Math/exp 4)] (nd/->vec (nd/exp y))))
    (is (close? 1e-6 [0.0 (Math/log 4)] (nd/->vec (nd/log y))))
    (is (close? 1e-6 [(Math/cos 1) (Math/cos 4)] (nd/->vec (nd/cos y))))
    (is (close? 1e-6 [(Math/sin 1) (Math/sin 4)] (nd/->vec (nd/sin y))))))

(deftest int-arrays-keep-their-dtype
  (let [i (nd/array [1 2 3 4] [4] {:dtype dtype/INT32})]
    (is (= dtype/INT32 (nd/dtype (nd/sqrt i))))
    (is (= [1 1 1 2] (nd/->int-vec (nd/sqrt i))) "as MXNet: computed, then truncated")))

(deftest power-takes-a-number-on-either-side
  (let [a (nd/array [3 5] [2])]
    (is (= [8.0 32.0] (nd/->vec (nd/power 2 a))))
    (is (= [9.0 25.0] (nd/->vec (nd/power a 2))))
    (is (= [27.0 3125.0] (nd/->vec (nd/** a a))))
    (is (identical? a (nd/**= a 2)))
    (is (= [9.0 25.0] (nd/->vec a)))
    (is (invalid? #(nd/power 2 3)) "one operand must be an NDArray")
    (is (invalid? #(nd/**= 2 a)) "an in-place operator writes into an NDArray")))

(deftest comparisons-give-ones-and-zeros
  (let [a (nd/array [1 2 4 5] [2 2])
        b (nd/array [1 4 3 6] [2 2])]
    (is (= [1.0 0.0 0.0 0.0] (nd/->vec (nd/equal a b))))
    (is (= [0.0 1.0 1.0 1.0] (nd/->vec (nd/not-equal a b))))
    (is (= [0.0 0.0 1.0 0.0] (nd/->vec (nd/> a b))))
    (is (= [1.0 0.0 1.0 0.0] (nd/->vec (nd/>= a b))))
    (is (= [1.0 1.0 1.0 0.0] (nd/->vec (nd/< a 4.5))))
    (is (= [1.0 1.0 0.0 0.0] (nd/->vec (nd/<= a 2))))
    (is (= [1.0 4.0 4.0 6.0] (nd/->vec (nd/maximum a b))))
    (is (= [1.0 2.0 3.0 3.0] (nd/->vec (nd/minimum 3 a))))
    (is (= [1.0 0.0 0.0 1.0] (nd/->vec (nd/% a 2))))
    (is (invalid? #(nd/> a "x")))))

(deftest products-and-picks
  (is (= [11.0] (nd/->vec (nd/dot (nd/array [1 2] [1 2]) (nd/array [3 4] [2 1])))))
  (is (= [1] (nd/shape-vec (nd/dot (nd/array [1 2] [2]) (nd/array [3 4] [2])))))
  (is (= [26.0 30.0 38.0 44.0]
         (nd/->vec (nd/dot (nd/array [1 2 3 4] [2 2]) (nd/array [5 6 7 8] [2 2]) true))))
  (is (= [1.0 6.0] (nd/->vec (nd/choose-element-0index (nd/array [1 2 3 4 6 5] [2 3])
                                                       (nd/array [0 1] [2])))))
  (is (= [1.0 0.0] (nd/->vec (nd/argmax-channel (nd/array [1 2 4 3] [2 2])))))
  (let [out (nd/zeros [3 3])]
    (is (identical? out (nd/onehot-encode (nd/array [1 0 2] [3]) out)))
    (is (= [0.0 1.0 0.0 1.0 0.0 0.0 0.0 0.0 1.0] (nd/->vec out)))))

(deftest t-transposes-matrices-only
  (is (= [1.0 3.0 2.0 3.0 4.0 3.0] (nd/->vec (nd/t (nd/array [1 2 4 3 3 3] [2 3])))))
  (let [e (is (thrown? clojure.lang.ExceptionInfo (nd/t (nd/zeros [2 2 2]))))]
    (is (= "Only 2D matrix is allowed to be transposed" (ex-message e)))))

;;; ------------------------------------------------------------------ values in and out

(deftest to-scalar-reads-the-one-element-as-a-float
  (let [x (nd/to-scalar (nd/full [1] 2.5))]
    (is (= 2.5 x))
    (is (instance? Float x)))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"The current array is not a scalar"
                        (nd/to-scalar (nd/zeros [2])))))

(deftest set-writes-numbers-arrays-and-vectors
  (let [a (nd/zeros [2 2])]
    (is (identical? a (nd/set a 3)))
    (is (= [3.0 3.0 3.0 3.0] (nd/->vec a)))
    (nd/set a [1 2 3 4])
    (is (= [[1.0 2.0] [3.0 4.0]] (nd/->nd-vec a)))
    (nd/set a (float-array [4 3 2 1]))
    (is (= [4.0 3.0 2.0 1.0] (nd/->vec a)))
    (nd/set a (nd/ones [2 2]))
    (is (= [1.0 1.0 1.0 1.0] (nd/->vec a)))
    (let [e (is (thrown? clojure.lang.ExceptionInfo (nd/set a [1 2 3])))]
      (is (re-find #"set: 3 values for an array of 4 elements" (ex-message e)))
      (is (= :invalid-argument (:type (ex-data e))) "refused before the engine is called"))
    (is (invalid? #(nd/set a "x")))))

(deftest conversions-follow-the-jvms-rules
  (let [u8 (nd/array [200 3 255] [3] {:dtype dtype/UINT8})]
    (is (= [(byte -56) (byte 3) (byte -1)] (nd/->byte-vec u8)) "uint8 of 128 and up")
    (is (= [200 3 255] (nd/->int-vec u8)))
    (is (= [200.0 3.0 255.0] (nd/->double-vec u8))))
  (let [f (nd/array [2.7 -2.7 300.5] [3])]
    (is (= [2 -2 300] (nd/->int-vec f)) "truncated toward zero")
    (is (= [2 -2 44] (nd/->byte-vec f)) "the int's low 8 bits")
    (is (every? #(instance? Integer %) (nd/->int-vec f))))
  (is (= 8 (alength (nd/->raw (nd/ones [2] {:dtype dtype/INT32}))))))

(deftest serialize-round-trips-in-mxnets-layout
  (let [a (nd/array [1 2 3 4] [2 2] {:ctx (ctx/cpu 1) :dtype dtype/FLOAT64})
        b (nd/serialize a)
        c (nd/deserialize b)]
    (is (bytes? b))
    ;; MXNet's V2 magic, little-endian
    (is (= [(unchecked-byte 0xc9) (unchecked-byte 0xfa) (unchecked-byte 0x93) (unchecked-byte 0xf9)]
           (vec (take 4 b))))
    (is (= [[2 2] dtype/FLOAT64 (ctx/cpu 1)] [(nd/shape-vec c) (nd/dtype c) (nd/context c)]))
    (is (= a c))
    (is (invalid? #(nd/deserialize [1 2 3])))))

(deftest copy-to-a-context-makes-a-new-array-there
  (let [a (nd/array [1 2] [2])
        b (nd/copy-to a (ctx/cpu 2))
        c (nd/copy-to a (ctx/cpu 0))]
    (is (= (ctx/cpu 2) (nd/context b)))
    (is (not (identical? a c)) "a copy even in the same context")
    (nd/+= c 1)
    (is (= [1.0 2.0] (nd/->vec a)))
    (is (invalid? #(nd/copy-to a "cpu")))))

(deftest at-is-a-row-sharing-memory
  (let [a (nd/array [1 2 3 4 5 6] [3 2])
        row (nd/at a 1)]
    (is (= [3 4] (nd/->int-vec row)))
    (nd/set row 0)
    (is (= [1.0 2.0 0.0 0.0 5.0 6.0] (nd/->vec a)))))

(deftest waits-return-nil
  (is (nil? (nd/wait-to-read (nd/ones [1]))))
  (is (nil? (nd/waitall))))

;;; ------------------------------------------------------------------ dependencies

(deftest operator-results-remember-their-inputs-transitively
  (let [a (nd/ones [2]) b (nd/ones [2]) c (nd/ones [2])
        ab (nd/+ a b)
        r (nd/* ab c)
        deps (nd/dependencies r)]
    (is (= #{(nd/handle a) (nd/handle b) (nd/handle c) (nd/handle ab)} (set (keys deps))))
    (is (identical? a (.get ^java.lang.ref.WeakReference (deps (nd/handle a)))))
    (is (= 4 (nd/size deps)))
    (is (empty? (nd/dependencies (nd/copy r))) "copies and creations have none")
    (is (empty? (nd/dependencies (nd/+= a 1))) "in-place operators add none")))

(deftest dispose-deps-frees-what-made-an-array
  (let [a (nd/ones [2]) b (nd/ones [2]) c (nd/ones [2])
        r (nd/+ (nd/* a b) c)]
    (is (identical? r (nd/dispose-deps r)))
    (is (every? nd/is-disposed [a b c]))
    (is (not (nd/is-disposed r)))
    (is (= [2.0 2.0] (nd/->vec r)))
    (is (empty? (nd/dependencies r)))))

(deftest dispose-deps-except-keeps-the-named-arrays-and-their-inputs
  (let [a (nd/ones [2]) b (nd/ones [2]) c (nd/ones [2])
        ab (nd/* a b)
        r (nd/+ ab c)]
    (nd/dispose-deps-except r ab)
    (is (every? (complement nd/is-disposed) [a b ab]))
    (is (nd/is-disposed c))
    (is (= #{(nd/handle a) (nd/handle b) (nd/handle ab)} (set (keys (nd/dependencies r)))))))

(deftest long-chains-stay-cheap
  ;; each result keeps its inputs' dependency records, not copies of them
  (let [x (nd/ones [1])
        r (reduce (fn [acc _] (nd/+ acc x)) x (range 300))]
    (is (= [301.0] (nd/->vec r)))
    (is (= 300 (count (nd/dependencies r))))))

;;; ------------------------------------------------------------------ values

(deftest equality-is-clojure-mxnets-shape-and-contents
  (let [a (nd/array [1 2 3] [3 1])]
    (is (= a (nd/array [1 2 3] [3 1])))
    (is (= a (nd/array [1 2 3] [3 1] {:dtype dtype/INT32})) "elements compared as float32")
    (is (not= a (nd/array [1 2 3] [1 3])))
    (is (not= a (nd/array [3 2 3] [3 1])))
    (is (= (hash a) (hash (nd/array [9 9 9] [3 1]))) "hash follows the shape, so = implies same hash")
    (let [other-shape (nd/zeros [2])
          calls (:calls (bridge/stats))]
      (is (= a a))
      (is (not= a other-shape))
      (is (= 1 (- (:calls (bridge/stats)) calls)) "only stats itself: no engine call for these"))
    (let [d (nd/array [1 2 3] [3 1])]
      (nd/dispose d)
      (is (not= a d) "a disposed array equals only itself"))))

(deftest dtypes-print-by-name
  (let [a (nd/zeros [1] {:dtype :float64})]
    (is (= "float64" (str (nd/dtype a))))
    (is (= dtype/FLOAT64 (nd/dtype a)))))

(deftest non-arrays-are-invalid-arguments-not-class-cast-errors
  (doseq [f [#(nd/->vec nil) #(nd/shape "x") #(nd/dispose 3) #(nd/to-scalar [1])
             #(nd/+ nil 1) #(nd/copy-to (nd/ones [1]) nil) #(nd/dependencies :a)]]
    (is (invalid? f))))
