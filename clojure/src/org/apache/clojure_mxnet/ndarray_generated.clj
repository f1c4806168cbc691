;; The operator functions generated from the engine's operator table (loaded
;; by ndarray.clj into org.apache.clojure-mxnet.ndarray, last).
;;
;; gen/operators.edn is written from the table by tools/gen_clojure_ops.py
;; (a test fails when it is out of date); this file reads it when the
;; namespace loads and interns one function per clojure-mxnet name, each a
;; closure over its operator: nothing per operator to compile, so loading
;; stays as fast as before. `intern-operators!` makes ndarray-api's and
;; ndarray-random-api's functions from the same specs.

(in-ns 'org.apache.clojure-mxnet.ndarray)

(def operator-specs
  "The engine's operators as clojure-mxnet's generator names them (see
   tools/gen_clojure_ops.py): a vector of maps with :op (MXNet's name),
   :ndarray, :api and :random-api (the function names in each namespace),
   :inputs, :variadic, :optional and :params ([mxnet-name kebab-name type
   required? default], MXNet's order), :doc."
  (with-open [r (java.io.PushbackReader.
                 (io/reader (or (io/resource "org/apache/clojure_mxnet/gen/operators.edn")
                                (throw (IllegalStateException.
                                        "gen/operators.edn is not on the classpath")))))]
    (edn/read r)))

(defn clojure-case
  "clojure-mxnet's name for an MXNet name (its generator's clojure-case):
   \"broadcast_add\" is broadcast-add, \"FullyConnected\" fully-connected."
  [s]
  (-> s
      (string/replace #"(\s+)([A-Z][a-z]+)" "$1-$2")
      (string/replace #"([A-Z]+)([A-Z][a-z]+)" "$1-$2")
      (string/replace #"([a-z0-9])([A-Z])" "$1-$2")
      (string/lower-case)
      (string/replace "_" "-")
      (string/replace "/" "div")))

(defn operator-doc
  "The docstring of a generated function: the operator's line, then its
   inputs and parameters (type, default) in MXNet's order."
  [{:keys [op doc inputs variadic optional params]} form]
  (str doc " (MXNet's " op ")\n\n   " form "\n"
       (apply str (for [i inputs]
                    (str "   `" i "`: NDArray" (when variadic "s (one or more)")
                         (when (some #{i} optional) " (optional)") "\n")))
       (apply str (for [[_ k t required? default] params]
                    (str "   `" k "`: " t (if required? ", required" (str ", default " default)) "\n")))))

(defn intern-operators!
  "Interns in namespace `ns` the function `(make spec fname)` gives (a pair
   [function metadata]) under each name `(names-of spec)` lists, for every
   operator spec; a name `ns` defines by hand keeps its own function (a name
   clojure.core defines is replaced). Returns the names interned."
  [ns names-of make]
  (let [ns (the-ns ns)]
    (into []
          (for [spec operator-specs
                fname (names-of spec)
                :let [sym (symbol fname)
                      existing (get (ns-map ns) sym)
                      own? (and (var? existing) (= ns (.-ns ^clojure.lang.Var existing)))]
                :when (not (and own? (not (::generated (meta existing)))))]
            (let [[f m] (make spec fname)]
              (when (and existing (not own?))
                (ns-unmap ns sym))
              (intern ns (with-meta sym (assoc m ::generated true :mxnet-op (:op spec))) f)
              fname)))))

(def generated-operators
  "The names of the functions generated in this namespace."
  (intern-operators!
   *ns* :ndarray
   (fn [{:keys [op inputs] :as spec} fname]
     [(if (seq inputs)
        (fn [& nd-array-and-params]
          (when-not (some ndarray? nd-array-and-params)
            (util/invalid! (str fname " needs an NDArray argument (its inputs: "
                                (string/join ", " inputs) ")")
                           {:args (vec nd-array-and-params)}))
          (invoke op nd-array-and-params))
        (fn [& params] (invoke op params)))
      {:doc (operator-doc spec (str "(" (first (:ndarray spec)) " ndarray-inputs... params... "
                                    "{:param value ... :out ndarray})"))
       :arglists '([& nd-array-and-params])}])))
