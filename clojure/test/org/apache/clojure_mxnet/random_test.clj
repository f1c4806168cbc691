(ns org.apache.clojure-mxnet.random-test
  "The random namespace as clojure-mxnet's tests use it: a seed repeats a
   draw, the numbers follow the distribution, bad arguments are refused."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.context :as context]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.random :as random]))

(defn- mean [v] (/ (reduce + v) (count v)))

(defn- std [v]
  (let [m (mean v)] (Math/sqrt (/ (reduce + (map #(* (- % m) (- % m)) v)) (count v)))))

(deftest a-seed-repeats-a-uniform-draw
  (random/seed 128)
  (let [a (random/uniform -10 10 [100 100] {:ctx (context/default-context)})
        _ (random/seed 128)
        b (random/uniform -10 10 [100 100])
        c (random/uniform -10 10 [100 100])
        v (nd/->vec a)]
    (is (= a b))
    (is (not= a c))
    (is (= [100 100] (nd/shape-vec a)))
    (is (= "float32" (str (nd/dtype a))))
    (is (every? #(and (<= -10 %) (< % 10)) v))
    (is (< (Math/abs (double (mean v))) 0.3))))

(deftest a-seed-repeats-a-normal-draw
  (random/seed 42.0)
  (let [a (random/normal 10 2 [100 100])
        _ (random/seed 42)
        b (random/normal 10 2 [100 100])
        v (nd/->vec a)]
    (is (= a b))
    (is (< (Math/abs (- (mean v) 10.0)) 0.1))
    (is (< (Math/abs (- (std v) 2.0)) 0.1))))

(deftest draws-write-into-out
  (let [out (nd/zeros [3 4])]
    (is (identical? out (random/uniform 5 6 [3 4] {:out out})))
    (is (every? #(<= 5 % 6) (nd/->vec out)))
    (is (thrown? clojure.lang.ExceptionInfo
                 (binding [*out* (java.io.StringWriter.)] (random/normal 0 1 [2 2] {:out out}))))))

(defn- refused? [f]
  (try (binding [*out* (java.io.StringWriter.)] (f)) false
       (catch clojure.lang.ExceptionInfo e (= :invalid-argument (:type (ex-data e))))))

(deftest bad-arguments-are-refused-as-clojure-mxnet-refused-them
  (doseq [f [random/normal random/uniform]]
    (is (refused? #(f 'a 2 [])))
    (is (refused? #(f 1 'b [])))
    (is (refused? #(f 1 2 [-1])))
    (is (refused? #(f 1 0 [1 2])))
    (is (refused? #(f 1 -1 [1 2])))
    (is (refused? #(f 1 2 [2 3 0])))
    (is (refused? #(f 1 2 [10 10] {:ctx "a"})))
    (is (some? (f 1 1 [100 100] {:ctx (context/default-context)}))))
  (is (refused? #(random/seed "a"))))
