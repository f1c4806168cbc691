(ns org.apache.clojure-mxnet.ndarray-api
  "NDArray operators in clojure-mxnet's ndarray-api form, generated from the
   engine's operator table (gen/operators.edn): each takes one map of
   arguments by name (kebab-case, with an optional `:out` NDArray to write
   into and return), and, when the operator has other than one required
   argument (its inputs and required parameters, MXNet's order), those by
   position too.
   Ex:
     (reshape {:data a :shape [2 -1]})
     (cast a \"int32\")            (cast {:data a :dtype \"int32\" :out b})
     (one-hot labels 10)          (slice-axis a 1 0 2)

   The operators run in the engine and give new arrays (copies). A key the
   operator does not take is refused, naming the keys it does take.
   Results match MXNet 1.9.1's (tests/golden/clj_ops.json, ops.json.gz),
   except where docs/operators.md says otherwise (a `reshape` to a shape of
   another size is refused: MXNet reads past the array)."
  (:refer-clojure :exclude [abs cast concat flatten max min])
  (:require [clojure.string :as string]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.util :as util]))

(set! *warn-on-reflection* true)

(defn- check-keys [fname m accepted]
  (when-not (map? m)
    (util/invalid! (str fname " takes a map of arguments by name, got "
                        (if (nil? m) "nil" (.getName (class m))))
                   {:value m}))
  (let [unknown (remove (clojure.core/set accepted) (keys m))]
    (when (seq unknown)
      (util/invalid! (str fname ": unknown argument " (string/join ", " unknown)
                          "; it takes " (string/join ", " accepted))
                     {:keys (vec unknown) :accepted (vec accepted)}))))

(defn call-op
  "Runs MXNet operator `op-name` for function `fname` on the argument map
   `m`: `inputs` are the keys of its NDArray inputs (in order; a nil
   optional input is left out), `params` those of its parameters,
   `required` the keys that must be present (an input: not nil, unless
   `optional` lists it). An input may be a vector of arrays (concat's :data)."
  ([fname op-name inputs params required m]
   (call-op fname op-name inputs params required [] m))
  ([fname op-name inputs params required optional m]
   (check-keys fname m (clojure.core/concat inputs params [:out]))
   (doseq [k required
           :when (not (some #{k} optional))
           ;; a required parameter may be nil where MXNet allows None (slice-axis's :end)
           :when (if (some #{k} inputs) (nil? (get m k)) (not (contains? m k)))]
     (util/invalid! (str fname ": argument " k " is required") {:key k :args (vec (keys m))}))
   (ndarray/operator-call op-name
                          (vec (clojure.core/mapcat #(let [v (get m %)] (if (sequential? v) v (when v [v])))
                                                    inputs))
                          []
                          ;; nil: the parameter's default, or its None where it is required
                          (into {} (filter #(or (some? (val %)) (some #{(key %)} required)))
                                (select-keys m params))
                          (:out m))))

(defn api-function
  "The ndarray-api form of an operator spec (see ndarray/operator-specs)
   named `fname`, as [function metadata]: a map arity and, unless the
   operator has exactly one required argument, a positional arity of the
   required ones (clojure-mxnet's generator's rule)."
  [{:keys [op inputs optional params] :as spec} fname]
  (let [ins (mapv keyword inputs)
        ps (mapv (comp keyword second) params)
        required (into ins (keep (fn [[_ k _ req?]] (when req? (keyword k)))) params)
        opt (mapv keyword optional)
        by-map (fn [m] (call-op fname op ins ps required opt m))
        arglists (if (= 1 (count required))
                   '([opts])
                   (list (mapv (comp symbol name) required) '[opts]))]
    [(case (count required)
       1 by-map
       0 (fn ([] (by-map {})) ([m] (by-map m)))
       (fn ([m] (by-map m))
         ([a & more]
          (let [vs (cons a more)]
            (when-not (= (count vs) (count required))
              (throw (clojure.lang.ArityException. (count vs) fname)))
            (by-map (zipmap required vs))))))
     {:doc (ndarray/operator-doc spec (str "(" fname " " (string/join " " (map name required))
                                           ") or (" fname " {" (string/join " " (map str (clojure.core/concat ins ps [:out])))
                                           "})"))
      :arglists arglists}]))

(defn softmax-output
  "The forward pass of MXNet's SoftmaxOutput (a loss layer the engine's table
   leaves out: its point is the gradient of its backward pass), composed of
   the table's softmax: each row of `data` flattened (`:multi-output`: along
   axis 1; `:preserve-shape`: along the last axis). `label` and the gradient
   options only shape the backward pass. (softmax-output data label) or
   {:data :label :multi-output :preserve-shape ... :out}"
  ([data label] (softmax-output {:data data :label label}))
  ([m]
   (check-keys "softmax-output" m [:data :label :grad-scale :ignore-label :multi-output
                                   :use-ignore :preserve-shape :normalization :out-grad
                                   :smooth-alpha :out])
   (doseq [k [:data :label] :when (nil? (get m k))]
     (util/invalid! (str "softmax-output: argument " k " is required") {:key k}))
   (let [data (:data m)
         [op named] (cond (:multi-output m) ["softmax" {:axis 1}]
                          (:preserve-shape m) ["softmax" {:axis -1}]
                          :else ["SoftmaxActivation" {}])]
     (ndarray/operator-call op [data] [] named (:out m)))))

(def generated-operators
  "The names of the functions generated in this namespace."
  (ndarray/intern-operators! *ns* :api api-function))
