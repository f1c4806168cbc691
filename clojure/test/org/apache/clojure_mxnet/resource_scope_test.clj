(ns org.apache.clojure-mxnet.resource-scope-test
  "Resource scopes: what a scope disposes, what it keeps, and that the
   engine has freed the arrays when the scope returns."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as nd]
            [org.apache.clojure-mxnet.resource-scope :as scope]))

(defn- live [] (:handles (bridge/stats)))

(deftest arrays-made-inside-are-disposed-the-result-kept
  (let [outside (nd/ones [2])
        made (atom [])
        result (scope/using
                (let [x (nd/ones [2]) y (nd/+ outside 1)]
                  (swap! made conj x y)
                  (nd/+ x y)))]
    (is (every? nd/is-disposed @made))
    (is (not (nd/is-disposed result)))
    (is (not (nd/is-disposed outside)))
    (is (= [3.0 3.0] (nd/->vec result)))))

(deftest the-engine-has-freed-them-when-the-scope-returns
  (let [mid (atom nil)
        arrays (atom nil)]
    (scope/using
     (reset! arrays (vec (repeatedly 50 #(nd/ones [1000]))))
     (reset! mid (live))
     :done)
    ;; the engine dropped all 50 before `using` returned (others may have
    ;; gone too, freed by the GC meanwhile)
    (is (<= (live) (- @mid 50)))
    (is (every? nd/is-disposed @arrays))))

(deftest arrays-inside-the-returned-value-are-kept
  (let [made (atom nil)
        {:keys [pair lazy]} (scope/using
                             (let [a (nd/ones [1]) b (nd/zeros [1]) c (nd/ones [1])]
                               (reset! made [a b c])
                               {:pair [a (list b)] :lazy (map identity [c])}))]
    (is (= [false false true] (mapv nd/is-disposed @made))
        "a lazy seq is not realized by the scope, so what it holds is not kept")
    (is (= [1.0] (nd/->vec (first pair))))
    (is (= [0.0] (nd/->vec (first (second pair)))))
    (is (seq? lazy))))

(deftest nested-scopes-hand-kept-arrays-outward
  (let [made (atom {})
        result (scope/using
                (let [inner-kept (scope/using
                                  (let [t (nd/ones [1]) k (nd/ones [1])]
                                    (swap! made assoc :temp t :kept k)
                                    k))]
                  (is (nd/is-disposed (:temp @made)) "the inner scope freed its temporary")
                  (is (not (nd/is-disposed inner-kept)))
                  (nd/+ inner-kept 1)))]
    (is (nd/is-disposed (:kept @made)) "the outer scope freed what the inner one returned")
    (is (= [2.0] (nd/->vec result)))))

(deftest with-let-and-with-do
  (let [made (atom [])
        r1 (scope/with-let [x (nd/ones [3 1]) y (nd/ones [3 1])]
             (swap! made conj x y)
             (nd/+ x y))
        r2 (scope/with-do
             (swap! made conj (nd/ones [1]))
             :all-cleaned-up)]
    (is (every? nd/is-disposed @made))
    (is (= [2.0 2.0 2.0] (nd/->vec r1)))
    (is (= :all-cleaned-up r2))))

(deftest an-exception-closes-the-scope
  (let [made (atom nil)]
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"boom"
                          (scope/using (reset! made (nd/ones [1]))
                                       (throw (ex-info "boom" {})))))
    (is (nd/is-disposed @made))
    (is (= :ok (scope/using :ok)) "the failed scope is closed: new scopes work")))

(deftest stores-belong-to-scopes-too
  (let [kv (scope/using (let [kv (kvstore/create)] (kvstore/init kv "k" (nd/ones [1])) kv))
        gone (atom nil)]
    (is (= "local" (kvstore/type kv)) "returned, so kept")
    (scope/using (reset! gone (kvstore/create)) nil)
    (is (= :disposed (:type (ex-data (is (thrown? clojure.lang.ExceptionInfo (kvstore/type @gone)))))))))

(deftest other-threads-arrays-are-not-the-scopes
  (let [theirs (atom nil)]
    (scope/using
     @(future (reset! theirs (nd/ones [1])))
     nil)
    (is (not (nd/is-disposed @theirs)))))

(deftest disposed-arrays-inside-are-fine
  (is (= :ok (scope/using (nd/dispose (nd/ones [1])) :ok))))
