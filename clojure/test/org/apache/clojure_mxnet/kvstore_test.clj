(ns org.apache.clojure-mxnet.kvstore-test
  "The KVStore API as the tutorial uses it: making a store and asking what
   it is, init / push / pull (one key or many, one device or several, with
   and without an optimizer), the calls built on them (pushpull, broadcast,
   row-sparse-pull), the distributed-store calls on a local store, saving
   optimizer state, disposal, and one error scheme: bad arguments are
   :invalid-argument before anything reaches the engine, the engine's own
   refusals are :mxnet-error, a freed store is :disposed."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.context :as ctx]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.optimizer :as optimizer])
  (:import (clojure.lang ExceptionInfo)
           (java.io File StringWriter)))

(set! *warn-on-reflection* true)

(defn- quietly
  "Calls `f` with *out* discarded (spec validation prints its explanation)."
  [f]
  (binding [*out* (StringWriter.)] (f)))

(defn- close?
  "Same length, and each pair within `tol`."
  [tol xs ys]
  (and (= (count xs) (count ys))
       (every? true? (map #(<= (Math/abs (- (double %1) (double %2))) tol) xs ys))))

(defn- scratch-path
  "A fresh file name in the temp directory, removed when the JVM exits."
  ^String [tag]
  (let [f (File/createTempFile (str "mxkv-kvstore-test-" tag "-") ".states")]
    (.deleteOnExit f)
    (.getPath f)))

(defn- pulled
  "What `kv` holds under `k`, pulled into a fresh array of `shape-vec`."
  [kv k shape-vec]
  (let [out (nd/zeros shape-vec)]
    (kvstore/pull kv k out)
    (nd/->vec out)))

;;; ------------------------------------------------------------------ what a store is

(deftest create-gives-a-store-of-the-named-type
  (is (= "local" (kvstore/type (kvstore/create))) "local unless named")
  (is (= "local" (kvstore/type (kvstore/create "local"))))
  (is (= "device" (kvstore/type (kvstore/create "device")))))

(deftest a-misspelt-store-type-is-refused-naming-the-known-types
  ;; MXNet makes a local store for any name without "dist" or "nccl"
  ;; (docs/parity.md, D28): a typo would pass unseen
  (let [e (is (thrown? ExceptionInfo (kvstore/create "lcoal")))]
    (is (re-find #"unknown kvstore type 'lcoal': known types are .*'device'.*'dist_sync'.*'local'"
                 (str (ex-message e))))))

(deftest a-local-store-is-one-worker-of-rank-0
  (let [kv (kvstore/create "local")]
    (is (= 1 (kvstore/num-workers kv)))
    (is (= 0 (kvstore/rank kv)))))

(deftest counts-are-ints-as-in-clojure-mxnet
  (let [kv (kvstore/create)]
    (is (instance? Integer (kvstore/rank kv)))
    (is (instance? Integer (kvstore/num-workers kv)))))

(deftest stores-print-their-type
  (is (= "#<KVStore device>" (pr-str (kvstore/create "device")))))

;;; ------------------------------------------------------------------ init, push, pull

(deftest pull-copies-out-what-init-stored
  (let [kv (kvstore/create)
        out (nd/zeros [3 2])]
    (kvstore/init kv "w" (nd/array (range 6) [3 2]))
    (kvstore/pull kv "w" out)
    (is (= (mapv double (range 6)) (nd/->vec out)))))

(deftest init-copies-the-value-it-is-given
  (let [kv (kvstore/create)
        v (nd/full [2] 3)]
    (kvstore/init kv "c" v)
    (nd/+= v 1)
    (is (= [3.0 3.0] (pulled kv "c" [2])))))

(deftest without-an-optimizer-a-push-replaces-the-value
  (let [kv (kvstore/create)]
    (kvstore/init kv "w" (nd/zeros [2]))
    (kvstore/push kv "w" (nd/full [2] 2.5))
    (is (= [2.5 2.5] (pulled kv "w" [2])))
    (kvstore/push kv "w" (nd/full [2] -1))
    (is (= [-1.0 -1.0] (pulled kv "w" [2])) "replaced, not added to")))

(deftest init-push-and-pull-return-the-store-so-calls-thread
  (let [kv (kvstore/create)
        out (nd/zeros [2])]
    (is (identical? kv (-> kv
                           (kvstore/init "t" (nd/zeros [2]))
                           (kvstore/push "t" (nd/full [2] 6))
                           (kvstore/pull "t" out))))
    (is (= [6.0 6.0] (nd/->vec out)) "each call in the thread ran")))

(deftest push-and-pull-take-a-priority
  (let [kv (kvstore/create)
        out (nd/zeros [3])]
    (kvstore/init kv "p" (nd/zeros [3]))
    (kvstore/push kv "p" (nd/full [3] 8) -2)
    (kvstore/pull kv "p" out 5)
    (is (= [8.0 8.0 8.0] (nd/->vec out)))))

(deftest values-pushed-to-one-key-together-are-summed-and-pulled-to-every-out
  (doseq [[label kind ctxs] [["local store, one device" "local" (repeat 4 (ctx/cpu 0))]
                             ["device store, four devices" "device" (map ctx/cpu (range 4))]]]
    (testing label
      (let [kv (kvstore/create kind)
            grads (mapv #(nd/full [2 2] %2 {:ctx %1}) ctxs [1 2 3 4])
            outs (mapv #(nd/zeros [2 2] {:ctx %}) ctxs)
            total (double (+ 1 2 3 4))]
        (kvstore/init kv "g" (nd/zeros [2 2]))
        (kvstore/push kv "g" grads)
        (kvstore/pull kv "g" outs)
        (is (= (vec (repeat 4 (vec (repeat 4 total)))) (mapv nd/->vec outs)))))))

(deftest a-vector-of-keys-takes-a-vector-of-values-one-each
  (let [kv (kvstore/create)
        ks ["x" "y" "z"]
        outs (mapv (fn [_] (nd/zeros [2])) ks)]
    (kvstore/init kv ks (mapv #(nd/full [2] %) [1 2 3]))
    (kvstore/push kv ks (mapv #(nd/full [2] (* 10 %)) [1 2 3]))
    (kvstore/pull kv ks outs)
    (is (= [[10.0 10.0] [20.0 20.0] [30.0 30.0]] (mapv nd/->vec outs)))))

(deftest integer-keys-work-like-string-keys
  (let [kv (kvstore/create)]
    (kvstore/init kv 7 (nd/full [2] 1))
    (kvstore/init kv [8 9] [(nd/full [2] 2) (nd/full [2] 3)])
    (is (= [[1.0 1.0] [2.0 2.0] [3.0 3.0]] (mapv #(pulled kv % [2]) [7 8 9])))))

(deftest a-key-listed-twice-in-one-push-gets-the-sum
  (let [kv (kvstore/create)]
    (kvstore/init kv 7 (nd/zeros [2]))
    (kvstore/push kv [7 7] [(nd/full [2] 1.5) (nd/full [2] 4)])
    (is (= [5.5 5.5] (pulled kv 7 [2])))))

(deftest a-store-keeps-to-one-kind-of-key
  (let [kv (kvstore/create)]
    (kvstore/init kv 1 (nd/ones [2]))
    (let [e (is (thrown? ExceptionInfo (kvstore/init kv "one" (nd/ones [2]))))]
      (is (= :mxnet-error (:type (ex-data e))))
      (is (re-find #"mixed key types" (ex-message e))))))

;;; ------------------------------------------------------------------ calls built on push and pull

(deftest pushpull-pushes-then-pulls-into-the-outs
  (let [kv (kvstore/create)
        outs [(nd/zeros [2]) (nd/zeros [2])]]
    (kvstore/init kv "pp" (nd/zeros [2]))
    (is (identical? kv (kvstore/pushpull kv "pp" [(nd/full [2] 2) (nd/full [2] 5)] outs)))
    (is (= [[7.0 7.0] [7.0 7.0]] (mapv nd/->vec outs)))))

(deftest pushpull-without-outs-writes-the-result-into-the-values
  (let [kv (kvstore/create)
        v (nd/full [2] 9)]
    (kvstore/init kv "pp" (nd/zeros [2]))
    (kvstore/pushpull kv "pp" v)
    (is (= [9.0 9.0] (nd/->vec v)))
    (is (= [9.0 9.0] (pulled kv "pp" [2])))))

(deftest broadcast-initializes-the-key-and-fills-every-out
  (let [kv (kvstore/create)
        outs [(nd/zeros [2 2]) (nd/zeros [2 2] {:ctx (ctx/cpu 1)})]]
    (is (identical? kv (kvstore/broadcast kv "bc" (nd/full [2 2] 0.5) outs)))
    (is (= [(vec (repeat 4 0.5)) (vec (repeat 4 0.5))] (mapv nd/->vec outs)))
    (is (= (vec (repeat 4 0.5)) (pulled kv "bc" [2 2])) "the key now holds the value")))

(deftest row-sparse-pull-fills-only-the-requested-rows
  (let [kv (kvstore/create)
        rows (vec (for [r (range 5)] [(* 10 r) (inc (* 10 r))]))
        wanted #{1 3 4}
        out (nd/full [5 2] -1)]
    (kvstore/init kv "emb" (nd/tostype (nd/->ndarray rows) "row_sparse"))
    (is (identical? kv (kvstore/row-sparse-pull kv "emb" out (nd/array (sort wanted) [3]))))
    (is (= (vec (for [r (range 5)] (if (wanted r) (mapv double (rows r)) [0.0 0.0])))
           (nd/->nd-vec out))
        "the other rows become 0")))

;;; ------------------------------------------------------------------ optimizers

(deftest set-optimizer-makes-a-push-an-update
  (let [kv (kvstore/create)
        lr 0.25 w0 [2.0 4.0] g [1.0 -1.0]]
    (kvstore/init kv "w" (nd/array w0 [2]))
    (is (identical? kv (kvstore/set-optimizer kv (optimizer/sgd {:learning-rate lr :wd 0.0}))))
    (kvstore/push kv "w" (nd/array g [2]))
    (is (close? 1e-6 (mapv #(- %1 (* lr %2)) w0 g) (pulled kv "w" [2])))))

(deftest an-unknown-optimizer-is-an-engine-error
  (let [e (is (thrown? ExceptionInfo
                       (kvstore/set-optimizer (kvstore/create) (optimizer/->Optimizer "nosuch" {}))))]
    (is (= :mxnet-error (:type (ex-data e))))
    (is (= "mxkv.base.UnknownOptimizerError" (:python-class (ex-data e))))))

(deftest saved-optimizer-states-carry-the-momentum-to-another-store
  ;; sgd with momentum mu: m <- mu*m - lr*g, w <- w + m. One push of g=1 on
  ;; w=1 gives m1 and w1; a second push gives w2, which a store started at
  ;; w1 with m1 loaded must reach too (without m1 it would reach w1 - lr).
  (let [lr 0.1 mu 0.5
        m1 (- (* lr 1)) w1 (+ 1 m1)
        w2 (+ w1 (- (* mu m1) (* lr 1)))
        opt #(optimizer/sgd {:learning-rate lr :momentum mu :wd 0.0})
        path (scratch-path "momentum")
        first-store (kvstore/create)
        second-store (kvstore/create)]
    (kvstore/init first-store "w" (nd/ones [2]))
    (kvstore/set-optimizer first-store (opt))
    (kvstore/push first-store "w" (nd/ones [2]))
    (is (identical? first-store (kvstore/save-optimizer-states first-store path)))
    (kvstore/push first-store "w" (nd/ones [2]))
    (is (close? 1e-6 [w2 w2] (pulled first-store "w" [2])))
    (kvstore/init second-store "w" (nd/full [2] w1))
    (kvstore/set-optimizer second-store (opt))
    (is (identical? second-store (kvstore/load-optimizer-states second-store path)))
    (kvstore/push second-store "w" (nd/ones [2]))
    (is (close? 1e-6 [w2 w2] (pulled second-store "w" [2])))))

(deftest optimizer-state-files-are-named-by-strings
  (is (thrown-with-msg? ExceptionInfo #"Invalid filename"
                        (quietly #(kvstore/save-optimizer-states (kvstore/create) 42))))
  (is (thrown-with-msg? ExceptionInfo #"Invalid filename"
                        (quietly #(kvstore/load-optimizer-states (kvstore/create) nil)))))

(deftest gradient-compression-needs-a-device-store
  (let [kv (kvstore/create "device")]
    (is (identical? kv (kvstore/set-gradient-compression kv {:type "2bit" :threshold 0.25}))))
  (is (thrown-with-msg? ExceptionInfo #"not supported"
                        (kvstore/set-gradient-compression (kvstore/create "local")
                                                          {:type "2bit" :threshold 0.25}))))

;;; ------------------------------------------------------------------ distributed calls, locally

(deftest barrier-returns-at-once-with-the-store
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/barrier kv)))))

(deftest a-local-store-has-no-dead-nodes
  (is (= 0 (kvstore/num-dead-node (kvstore/create) 1))))

(deftest set-barrier-before-exit-takes-a-boolean
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/set-barrier-before-exit kv true)))
    (is (identical? kv (kvstore/set-barrier-before-exit kv false)))
    (is (thrown-with-msg? ExceptionInfo #"Invalid barrier-before-exit"
                          (quietly #(kvstore/set-barrier-before-exit kv "no"))))))

(deftest send-command-to-servers-takes-an-int-head-and-a-string-body
  (let [kv (kvstore/create)]
    (is (identical? kv (kvstore/send-command-to-servers kv 3 "anything")))
    (is (thrown-with-msg? ExceptionInfo #"Invalid head"
                          (quietly #(kvstore/send-command-to-servers kv "3" "anything"))))
    (is (thrown-with-msg? ExceptionInfo #"Invalid body"
                          (quietly #(kvstore/send-command-to-servers kv 3 :anything))))))

;;; ------------------------------------------------------------------ errors

(deftest each-argument-of-a-push-or-pull-is-checked
  (let [kv (kvstore/create)
        e (is (thrown? ExceptionInfo (quietly #(kvstore/init kv [:a :b] [(nd/ones [1]) (nd/ones [1])]))))]
    (is (= (str "Invalid keys: ks must be a string or an int or a vector of string or a vector "
                "of int, got [:a :b]") (ex-message e)))
    (is (= "ks" (:argument (ex-data e))))
    (is (= :invalid-argument (:type (ex-data e)))))
  (doseq [[label f msg] [["values" #(kvstore/push (kvstore/create) "k" [1.0]) #"Invalid values"]
                         ["outs" #(kvstore/pull (kvstore/create) "k" (float-array 1)) #"Invalid outs"]
                         ["priority" #(kvstore/push (kvstore/create) "k" (nd/ones [1]) 2.5)
                          #"Invalid priority"]]]
    (testing label
      (is (thrown-with-msg? ExceptionInfo msg (quietly f))))))

(deftest keys-and-values-must-pair-up
  (let [kv (kvstore/create)
        e (is (thrown? ExceptionInfo (kvstore/init kv "x" [(nd/ones [1]) (nd/ones [1])])))]
    (is (= :invalid-argument (:type (ex-data e))))
    (is (= "init: 1 key(s) [\"x\"] for 2 values; init takes one value per key" (ex-message e))))
  (let [e (is (thrown? ExceptionInfo
                       (kvstore/push (kvstore/create) ["p" "q" "r"] [(nd/ones [1]) (nd/ones [1])])))]
    (is (re-find #"^push: 3 keys \[\"p\" \"q\" \"r\"\] for 2 values" (ex-message e)))))

(deftest a-key-never-initialized-is-an-engine-error-naming-it
  (doseq [[label f] [["pull" #(kvstore/pull (kvstore/create) "ghost" (nd/zeros [1]))]
                     ["push" #(kvstore/push (kvstore/create) "ghost" (nd/ones [1]))]]]
    (testing label
      (let [e (is (thrown? ExceptionInfo (f)))
            {:keys [type python-class traceback]} (ex-data e)]
        (is (re-find #"ghost" (ex-message e)))
        (is (= :mxnet-error type))
        (is (re-find #"^mxkv\.base\.MXNet" python-class))
        (is (string? traceback))))))

(deftest a-first-argument-that-is-no-store-is-an-invalid-argument
  (doseq [f [#(kvstore/type "local") #(kvstore/rank nil) #(kvstore/dispose [])
             #(kvstore/init :kv "k" (nd/ones [1])) #(kvstore/pull 0 "k" (nd/ones [1]))
             #(kvstore/set-optimizer {} (optimizer/sgd)) #(kvstore/barrier (nd/ones [1]))]]
    (let [e (is (thrown? ExceptionInfo (f)))]
      (is (= :invalid-argument (:type (ex-data e))))
      (is (re-find #"Invalid kvstore: expected a KVStore" (ex-message e))))))

;; A plain map is not an optimizer: option maps, or a map shaped like one,
;; were either ignored ({:name "sgd" :learning-rate 0.1} set sgd's defaults)
;; or reached the engine (Optimizer.__init__()'s message).
(deftest an-optimizer-that-is-no-optimizer-value-is-an-invalid-argument
  (let [kv (doto (kvstore/create)
             (kvstore/init "w" (nd/ones [2]))
             (kvstore/set-optimizer (optimizer/sgd {:learning-rate 0.5 :wd 0.0})))]
    (doseq [[bad got] [[{:learning-rate 0.1} "a plain map {:learning-rate 0.1}"]
                       [{:name "sgd" :learning-rate 0.1} "a plain map {:name \"sgd\", :learning-rate 0.1}"]
                       [{:name "sgd" :params {:learning-rate 0.1}} "a plain map {:name \"sgd\", :params {:learning-rate 0.1}}"]
                       [{:name "sgd" :params {"learning_rate" 0.1}} "a plain map {:name \"sgd\", :params {\"learning_rate\" 0.1}}"]
                       [nil "nil"]
                       ["sgd" "a java.lang.String: \"sgd\""]
                       [(optimizer/->Optimizer :sgd {}) "the record #org.apache.clojure_mxnet.optimizer.Optimizer{:name :sgd, :params {}}"]
                       [(optimizer/->Optimizer "sgd" [0.1]) "the record #org.apache.clojure_mxnet.optimizer.Optimizer{:name \"sgd\", :params [0.1]}"]]]
      (testing (pr-str bad)
        (let [e (is (thrown? ExceptionInfo (kvstore/set-optimizer kv bad)))
              {:keys [type value expected]} (ex-data e)]
          (is (= :invalid-argument type))
          (is (identical? bad value) "ex-data names the value passed")
          (is (re-find #"^an Optimizer made by org\.apache\.clojure-mxnet\.optimizer" expected))
          (is (= (str "Invalid optimizer: expected " expected ", got " got) (ex-message e))))))
    (testing "the store keeps the optimizer it had: w = 1 - 0.5 * 1"
      (kvstore/push kv "w" (nd/ones [2]))
      (let [out (nd/zeros [2])]
        (kvstore/pull kv "w" out)
        (is (= [0.5 0.5] (nd/->vec out)))))))

;;; ------------------------------------------------------------------ disposal

(deftest dispose-frees-the-store-and-every-later-call-says-so
  (let [kv (kvstore/create)]
    (is (nil? (kvstore/dispose kv)))
    (is (re-find #"disposed" (pr-str kv)))
    (doseq [f [#(kvstore/type kv) #(kvstore/rank kv) #(kvstore/init kv "k" (nd/ones [1]))
               #(kvstore/barrier kv)]]
      (let [e (is (thrown? ExceptionInfo (f)))]
        (is (= :disposed (:type (ex-data e))))
        (is (re-find #"disposed" (ex-message e)))))))
