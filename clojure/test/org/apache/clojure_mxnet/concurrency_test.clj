(ns org.apache.clojure-mxnet.concurrency-test
  "Eight JVM threads on one store: on one key and on a key each, with an
   optimizer that adds every push to the stored value, the totals are the
   closed form, no pull is torn (every element of a pulled value equal), no
   thread waits forever, and each thread's pull after its own push sees at
   least its pushes so far. MXKV_TEST_THREAD_CALLS sets the pushes per thread
   (default 150)."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]
            [org.apache.clojure-mxnet.util :as util]))

(set! *warn-on-reflection* true)

(def ^:private threads 8)

(def ^:private pushes
  (util/env-long "MXKV_TEST_THREAD_CALLS" 150 1))

(def ^:private shape
  "Large enough that a pull copying part of a push would show."
  [64 64])

(defn- adder
  "A store with keys `ks` (zeros of `shape`) that adds every push to the stored value."
  [ks]
  (doto (kvstore/create)
    (kvstore/init (vec ks) (vec (repeatedly (count ks) #(ndarray/zeros shape))))
    (kvstore/set-optimizer (optimizer/->Optimizer "test" {"rescale_grad" 1.0}))))

(defn- run-threads
  "Runs (work thread-index) on `threads` threads at once; their results, or
   :deadlock for a thread not done within two minutes."
  [work]
  (let [go (promise)
        fs (mapv (fn [t] (future @go (work t))) (range threads))]
    (deliver go true)
    (mapv #(deref % 120000 :deadlock) fs)))

(defn- pushes-and-pulls
  "Thread `t`'s loop: push `g` to its key, pull it, check the pull. Returns
   the problems seen (nil when none)."
  [kv k g own-step]
  (let [out (ndarray/zeros shape)]
    (loop [i 1 last-seen 0.0 problems []]
      (if (> i pushes)
        (not-empty problems)
        (do
          (kvstore/push kv k g)
          (kvstore/pull kv k out)
          (let [v (ndarray/->vec out)
                x (double (first v))
                problems (cond-> problems
                           (not (every? #(= (float x) %) v))
                           (conj (str "torn pull of " k " after push " i ": "
                                      (count (distinct v)) " distinct values"))
                           (< x (* i own-step))
                           (conj (str "pull after push " i " saw " x " < " (* i own-step)))
                           (< x last-seen)
                           (conj (str "pull after push " i " went back from " last-seen " to " x)))]
            (recur (inc i) x problems)))))))

(deftest eight-threads-pushing-to-one-key-lose-nothing
  (let [kv (adder ["w"])
        results (run-threads (fn [_] (pushes-and-pulls kv "w" (ndarray/ones shape) 1.0)))
        out (ndarray/zeros shape)]
    (is (not-any? #{:deadlock} results) "every thread finished")
    (is (every? nil? results) (str (remove nil? results)))
    (kvstore/pull kv "w" out)
    (is (= (repeat (* 64 64) (float (* threads pushes))) (seq (ndarray/->vec out)))
        (str threads " threads x " pushes " pushes of ones"))
    (println (format "concurrency-test: %d threads x %d pushes (each with a pull and a read) on one key: total %.0f of %d, %d problems"
                     threads pushes (double (first (ndarray/->vec out))) (* threads pushes)
                     (count (mapcat identity (remove #{:deadlock} results)))))))

(deftest eight-threads-pushing-to-a-key-each-lose-nothing
  (let [ks (mapv #(str "k" %) (range threads))
        kv (adder ks)
        results (run-threads (fn [t] (pushes-and-pulls kv (ks t) (ndarray/full shape (inc t))
                                                       (double (inc t)))))
        outs (vec (repeatedly threads #(ndarray/zeros shape)))]
    (is (not-any? #{:deadlock} results))
    (is (every? nil? results) (str (remove nil? results)))
    (kvstore/pull kv ks outs)
    (doseq [t (range threads)]
      (is (= (float (* (inc t) pushes)) (first (ndarray/->vec (outs t)))) (ks t)))))

(deftest threads-sharing-one-key-and-owning-another-lose-nothing
  (let [ks (mapv #(str "own" %) (range threads))
        kv (adder (conj ks "shared"))
        results (run-threads
                 (fn [t]
                   (let [g (ndarray/ones shape)]
                     (dotimes [_ pushes]
                       (kvstore/push kv ["shared" (ks t)] [g g]))
                     :done)))
        outs (vec (repeatedly (inc threads) #(ndarray/zeros shape)))]
    (is (= (repeat threads :done) results))
    (kvstore/pull kv (conj ks "shared") outs)
    (is (= (float (* threads pushes)) (first (ndarray/->vec (peek outs)))) "the shared key")
    (is (every? #(= (float pushes) (first (ndarray/->vec %))) (pop outs)) "each own key")))
