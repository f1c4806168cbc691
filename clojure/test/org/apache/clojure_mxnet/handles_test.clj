(ns org.apache.clojure-mxnet.handles-test
  "Stores and arrays as a Clojure programmer holds them: JVM classes that
   close (`with-open`; disposing twice does nothing) and that survive
   reloading any namespace of the API, with `:reload` or `:reload-all`:
   objects made before keep working with the reloaded functions, with
   objects made after, and the specs accept both."
  (:require [clojure.spec.alpha :as s]
            [clojure.string :as str]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.context :as ctx]
            [org.apache.clojure-mxnet.dtype :as dtype]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.kvstore-server]
            [org.apache.clojure-mxnet.lr-scheduler]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.optimizer :as optimizer]
            [org.apache.clojure-mxnet.shape :as shape])
  (:import (clojure.lang ExceptionInfo)))

(defn- api-namespaces
  "Every loaded namespace of the API (the bridge's included), by name."
  []
  (sort (for [n (map (comp str ns-name) (all-ns))
              :when (str/starts-with? n "org.apache.clojure-mxnet.")
              :when (not (str/ends-with? n "-test"))
              :when (not= n "org.apache.clojure-mxnet.test-support")]
          (symbol n))))

(defn- pulled [kv k shape-vec]
  (let [out (nd/zeros shape-vec)]
    (kvstore/pull kv k out)
    (nd/->vec out)))

(deftest with-open-closes-stores-and-arrays
  (let [[kv a] (with-open [kv (kvstore/create "local")
                           a (nd/ones [2])]
                 (kvstore/init kv "w" a)
                 (is (= [1.0 1.0] (pulled kv "w" [2])))
                 [kv a])]
    (is (nd/is-disposed a) "the array was closed")
    (is (= :disposed (:type (ex-data (is (thrown? ExceptionInfo (kvstore/pull kv "w" (nd/zeros [2]))))))))
    (is (re-find #"disposed" (str kv)))))

(deftest disposing-twice-does-nothing
  (let [kv (kvstore/create)
        a (nd/ones [2])]
    (is (nil? (kvstore/dispose kv)))
    (is (nil? (kvstore/dispose kv)) "a store")
    (.close ^java.lang.AutoCloseable kv)
    (is (nil? (nd/dispose a)))
    (is (nil? (nd/dispose a)) "an array")
    (.close ^java.lang.AutoCloseable a)
    (is (nd/is-disposed a))))

(deftest reloading-every-namespace-keeps-old-objects-working
  (let [kv-old (doto (kvstore/create "local")
                 (kvstore/init "w" (nd/zeros [2]))
                 (kvstore/set-optimizer (optimizer/sgd {:learning-rate 0.5 :wd 0.0})))
        a-old (nd/array [1 2] [2])
        out-old (nd/zeros [2])
        opt-old (optimizer/sgd {:learning-rate 0.1})
        nss (api-namespaces)]
    (is (>= (count nss) 12) (str "the API's namespaces: " (vec nss)))
    (doseq [[how opts] [[":reload" [:reload]] [":reload-all" [:reload-all]]]]
      (testing how
        (doseq [n nss] (apply require n opts))
        (let [kv-new (kvstore/create "local")
              a-new (nd/array [10 20] [2])]
          (testing "the specs accept old and new objects"
            (is (s/valid? ::kvstore/kvstore kv-old))
            (is (s/valid? ::nd/ndarray a-old))
            (is (s/valid? ::kvstore/kvstore kv-new))
            (is (nd/ndarray? a-new)))
          (testing "values made before equal values made after"
            (is (= dtype/FLOAT32 (nd/dtype a-old)))
            (is (= (ctx/cpu) (nd/context a-old)))
            (is (= (shape/->shape [2]) (nd/shape a-old)))
            (is (= (nd/array [1 2] [2]) a-old) "an old array equals a new one with its contents"))
          (testing "an old store with old and new arrays"
            (kvstore/push kv-old "w" a-old)
            (kvstore/push kv-old "w" a-new)
            (kvstore/pull kv-old "w" out-old))
          (testing "a new store with old arrays"
            (kvstore/init kv-new "k" a-old)
            (kvstore/push kv-new "k" (nd/+ a-old a-new))
            (is (= [11.0 22.0] (pulled kv-new "k" [2]))))
          (testing "an optimizer made before"
            (kvstore/set-optimizer kv-new opt-old)
            (let [st (optimizer/create-state opt-old 0 a-new)]
              (is (nil? st) "plain sgd keeps no state")))
          (testing "old objects close as new ones do"
            (with-open [_ kv-new _ a-new])
            (is (nd/is-disposed a-new))))))
    ;; two pushes per round, each an sgd step of rate 0.5 from 0: w -= 0.5 * g
    (is (= [-11.0 -22.0] (nd/->vec out-old)) "the old store applied every push")
    (println (format "handles-test: reloaded %d namespaces with :reload, then :reload-all; the store and arrays made before still push, pull and close: %s"
                     (count nss) (str/join " " (map #(str/replace (str %) "org.apache.clojure-mxnet." "") nss))))))
