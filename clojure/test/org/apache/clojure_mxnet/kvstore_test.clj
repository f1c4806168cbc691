(ns org.apache.clojure-mxnet.kvstore-test
  (:require [clojure.java.io :as io]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.context :as context]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]))

(defmacro quietly [& body]
  `(binding [*out* (java.io.StringWriter.)] ~@body))

(defn- approx= [tol xs ys]
  (and (= (count xs) (count ys))
       (every? (fn [[x y]] (<= (Math/abs (- (double x) (double y))) tol)) (map vector xs ys))))

;;; clojure-mxnet's own kvstore tests

(deftest test-init-and-pull
  (let [kv (kvstore/create)
        shape [2 1]
        out (ndarray/zeros shape)]
    (-> kv
        (kvstore/init "3" (ndarray/ones shape))
        (kvstore/pull "3" out))
    (is (= [1.0 1.0] (ndarray/->vec out)))))

(deftest test-push-and-pull
  (let [kv (kvstore/create)
        shape [2 1]
        out (ndarray/zeros shape)]
    (-> kv
        (kvstore/init "3" (ndarray/ones shape))
        (kvstore/push "3" (ndarray/* (ndarray/ones shape) 4))
        (kvstore/pull "3" out))
    (is (= [4.0 4.0] (ndarray/->vec out)))))

(deftest test-aggregate
  (let [shape [4 4]
        ks ["b" "c" "d"]
        kv (kvstore/create)
        num-devs 4
        devs (mapv (fn [_] (context/cpu)) (range num-devs))
        vals (mapv #(ndarray/ones shape {:ctx %}) devs)]
    (-> kv
        (kvstore/init "a" (ndarray/zeros shape))
        (kvstore/init ks [(ndarray/zeros shape) (ndarray/zeros shape) (ndarray/zeros shape)])
        (kvstore/push "a" vals)
        (kvstore/pull "a" vals))
    (is (= 0.0 (->> vals
                    (mapv ndarray/->vec)
                    flatten
                    (map #(- % num-devs))
                    (apply +))))
    (let [result (for [k ks]
                   (let [tmp-vals (mapv #(ndarray/* (ndarray/ones shape {:ctx %}) 2.0) devs)]
                     (-> kv
                         (kvstore/push k tmp-vals)
                         (kvstore/pull k tmp-vals))
                     (map ndarray/->vec tmp-vals)))]
      (is (= 0.0 (->> result
                      (flatten)
                      (map #(- % (* num-devs 2)))
                      (apply +)))))))

(deftest test-type
  (is (= "local" (-> (kvstore/create "local")
                     (kvstore/type)))))

(deftest test-get-numworkers
  (is (= 1 (-> (kvstore/create "local")
               (kvstore/num-workers)))))

(deftest test-get-rank
  (is (= 0 (-> (kvstore/create "local")
               (kvstore/rank)))))

;;; the rest of the public surface

(deftest create-device-store-has-its-type
  (is (= "device" (kvstore/type (kvstore/create "device")))))

(deftest push-and-pull-with-priority
  (let [kv (kvstore/create)
        out (ndarray/zeros [3])]
    (kvstore/init kv "p" (ndarray/zeros [3]))
    (kvstore/push kv "p" (ndarray/full [3] 5) 7)
    (kvstore/pull kv "p" out 7)
    (is (= [5.0 5.0 5.0] (ndarray/->vec out)))))

(deftest push-sums-values-from-several-devices
  (let [kv (kvstore/create "device")
        vals (mapv #(ndarray/full [2] (inc %) {:ctx (context/cpu %)}) (range 3))
        out (ndarray/zeros [2])]
    (kvstore/init kv "s" (ndarray/zeros [2]))
    (kvstore/push kv "s" vals)
    (kvstore/pull kv "s" out)
    (is (= [6.0 6.0] (ndarray/->vec out)))))

(deftest integer-keys-work
  (let [kv (kvstore/create)
        out (ndarray/zeros [2])]
    (kvstore/init kv 3 (ndarray/ones [2]))
    (kvstore/init kv [4 5] [(ndarray/ones [2]) (ndarray/ones [2])])
    (kvstore/push kv [3 3] [(ndarray/ones [2]) (ndarray/ones [2])])
    (kvstore/pull kv 3 out)
    (is (= [2.0 2.0] (ndarray/->vec out)))))

(deftest mixing-key-types-is-an-engine-error
  (let [kv (kvstore/create)]
    (kvstore/init kv 3 (ndarray/ones [2]))
    (let [e (is (thrown? clojure.lang.ExceptionInfo (kvstore/init kv "a" (ndarray/ones [2]))))]
      (is (re-find #"mixed key types" (ex-message e)))
      (is (= :mxnet-error (:type (ex-data e)))))))

(deftest invalid-keys-fail-validation
  (let [kv (kvstore/create)
        e (is (thrown? clojure.lang.ExceptionInfo (quietly (kvstore/init kv [:k] [(ndarray/ones [1])]))))]
    (is (= "Invalid keys" (ex-message e)))
    (is (= :invalid-argument (:type (ex-data e)))))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid values"
                        (quietly (kvstore/push (kvstore/create) "k" [1 2]))))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid outs"
                        (quietly (kvstore/pull (kvstore/create) "k" "not an array"))))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid priority"
                        (quietly (kvstore/push (kvstore/create) "k" (ndarray/ones [1]) 1.5)))))

(deftest pulling-an-uninitialized-key-is-an-engine-error
  (let [e (is (thrown? clojure.lang.ExceptionInfo
                       (kvstore/pull (kvstore/create) "nope" (ndarray/zeros [1]))))]
    (is (re-find #"nope" (ex-message e)))
    (is (string? (:traceback (ex-data e))))))

(deftest set-optimizer-runs-sgd-in-the-engine
  (let [kv (kvstore/create)
        out (ndarray/zeros [2])]
    (kvstore/init kv "w" (ndarray/ones [2]))
    (is (identical? kv (kvstore/set-optimizer kv (optimizer/sgd {:learning-rate 0.1 :wd 0.0}))))
    (kvstore/push kv "w" (ndarray/ones [2]))
    (kvstore/pull kv "w" out)
    (is (approx= 1e-6 [0.9 0.9] (ndarray/->vec out)))))

(deftest optimizer-states-save-and-load
  (let [kv (kvstore/create)
        f (str (io/file (System/getProperty "java.io.tmpdir") (str "mxkv-states-" (System/nanoTime))))]
    (kvstore/init kv "w" (ndarray/ones [2]))
    (kvstore/set-optimizer kv (optimizer/sgd {:learning-rate 0.1 :momentum 0.9}))
    (kvstore/push kv "w" (ndarray/ones [2]))
    (is (identical? kv (kvstore/save-optimizer-states kv f)))
    (is (.exists (io/file f)))
    (is (identical? kv (kvstore/load-optimizer-states kv f)))
    (io/delete-file f true)
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid filename"
                          (quietly (kvstore/save-optimizer-states kv 42))))))

(deftest barrier-returns-the-store
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/barrier kv)))))

(deftest num-dead-node-is-zero-locally
  (is (= 0 (kvstore/num-dead-node (kvstore/create) 0))))

(deftest set-barrier-before-exit-returns-the-store
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/set-barrier-before-exit kv false)))))

(deftest send-command-to-servers-validates-and-runs
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/send-command-to-servers kv 0 "noop")))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid head"
                          (quietly (kvstore/send-command-to-servers kv "0" "x"))))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid body"
                          (quietly (kvstore/send-command-to-servers kv 0 1))))))

(deftest pushpull-pushes-then-pulls
  (let [kv (kvstore/create)
        outs [(ndarray/zeros [2]) (ndarray/zeros [2])]]
    (kvstore/init kv "pp" (ndarray/zeros [2]))
    (kvstore/pushpull kv "pp" [(ndarray/ones [2]) (ndarray/ones [2])] outs)
    (is (= [[2.0 2.0] [2.0 2.0]] (mapv ndarray/->vec outs)))
    (let [v (ndarray/full [2] 3)]
      (kvstore/pushpull kv "pp" v)
      (is (= [3.0 3.0] (ndarray/->vec v))))))

(deftest broadcast-inits-and-fills-outs
  (let [kv (kvstore/create)
        outs [(ndarray/zeros [2 2]) (ndarray/zeros [2 2] {:ctx (context/cpu 1)})]]
    (kvstore/broadcast kv "bc" (ndarray/full [2 2] 5) outs)
    (is (= [[5.0 5.0 5.0 5.0] [5.0 5.0 5.0 5.0]] (mapv ndarray/->vec outs)))))

(deftest row-sparse-pull-fills-requested-rows
  (let [kv (kvstore/create)
        w (ndarray/tostype (ndarray/array [1 2 3 4 5 6 7 8] [4 2]) "row_sparse")
        out (ndarray/full [4 2] 9)]
    (kvstore/init kv "emb" w)
    (kvstore/row-sparse-pull kv "emb" out (ndarray/array [0 2] [2]))
    (is (= [1.0 2.0 0.0 0.0 5.0 6.0 0.0 0.0] (ndarray/->vec out)))))

(deftest gradient-compression-is-an-engine-decision
  (let [kv (kvstore/create "device")]
    (is (identical? kv (kvstore/set-gradient-compression kv {:type "2bit" :threshold 0.5}))))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"not supported"
                        (kvstore/set-gradient-compression (kvstore/create "local")
                                                          {:type "2bit" :threshold 0.5}))))

(deftest dispose-frees-the-store
  (let [kv (kvstore/create)]
    (is (nil? (kvstore/dispose kv)))
    (is (re-find #"disposed" (pr-str kv)))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"disposed" (kvstore/rank kv)))))

(deftest stores-print-their-type
  (is (= "#<KVStore local>" (pr-str (kvstore/create "local")))))

;;; one error scheme

(deftest a-non-store-first-argument-is-an-invalid-argument
  (doseq [f [#(kvstore/type nil) #(kvstore/push "kv" "k" (ndarray/ones [1]))
             #(kvstore/pull 3 "k" (ndarray/ones [1])) #(kvstore/rank {}) #(kvstore/dispose nil)
             #(kvstore/set-optimizer nil (optimizer/sgd)) #(kvstore/barrier (ndarray/ones [1]))]]
    (let [e (is (thrown? clojure.lang.ExceptionInfo (f)))]
      (is (= :invalid-argument (:type (ex-data e))))
      (is (re-find #"Invalid kvstore: expected a KVStore" (ex-message e))))))

(deftest a-disposed-store-says-so-everywhere
  (let [kv (kvstore/create)]
    (kvstore/dispose kv)
    (doseq [f [#(kvstore/type kv) #(kvstore/rank kv) #(kvstore/init kv "k" (ndarray/ones [1]))]]
      (is (= :disposed (:type (ex-data (is (thrown? clojure.lang.ExceptionInfo (f))))))))))

(deftest barrier-before-exit-takes-a-boolean
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/set-barrier-before-exit kv false)))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid barrier-before-exit"
                          (quietly (kvstore/set-barrier-before-exit kv "false"))))))

(deftest init-counts-keys-and-values
  (let [kv (kvstore/create)
        e (is (thrown? clojure.lang.ExceptionInfo
                       (kvstore/init kv "x" [(ndarray/ones [1]) (ndarray/ones [1])])))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (= "init: 1 key(s) [\"x\"] for 2 values; init takes one value per key" (ex-message e)))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"push: 2 keys \[\"a\" \"b\"\] for 1 values"
                          (kvstore/push kv ["a" "b"] [(ndarray/ones [1])])))))

(deftest counts-are-ints-as-clojure-mxnet
  (let [kv (kvstore/create)]
    (is (instance? Integer (kvstore/rank kv)))
    (is (instance? Integer (kvstore/num-workers kv)))))

(deftest engine-errors-have-one-type
  (let [kv (kvstore/create)
        e (is (thrown? clojure.lang.ExceptionInfo (kvstore/set-optimizer kv (optimizer/->Optimizer "nosuch" {}))))]
    (is (= :mxnet-error (:type (ex-data e))))
    (is (= "mxkv.base.UnknownOptimizerError" (:python-class (ex-data e)))))
  (let [kv (kvstore/create)
        e (is (thrown? clojure.lang.ExceptionInfo (kvstore/push kv "never-initialized" (ndarray/ones [1]))))]
    (is (= :mxnet-error (:type (ex-data e))))
    (is (re-find #"^mxkv\.base\.MXNet" (:python-class (ex-data e))))))
