;; The calls the other namespaces are built on (loaded by ndarray.clj into
;; org.apache.clojure-mxnet.ndarray): `operator-call` (ndarray-api and
;; ndarray-random-api: an operator of the engine's table by MXNet's name) and
;; `random-call` (random: the engine's random.seed and random.draw).

(in-ns 'org.apache.clojure-mxnet.ndarray)

(defn operator-call
  "Runs engine operator `op-name` (MXNet's name) on the NDArrays `arrays`
   with `positional` parameters (MXNet's order) and `named` ones (a map,
   kebab-case keys); a new NDArray (a vector for several outputs), or, when
   `out` is an NDArray, the result written into `out`, which is returned.
   What ndarray-api and ndarray-random-api are built on."
  [op-name arrays positional named out]
  (doseq [a arrays] (check-ndarray a (str op-name "'s input")))
  (run-op op-name arrays positional named out))

(defn random-call
  "Runs random engine operation `op` (\"random.draw\", \"random.invoke\")
   with `args`; a new NDArray, `out` (an NDArray) written in place, or nil
   for an operation that returns nothing. What the random namespaces are
   built on."
  [op args out]
  (when (and (some? out) (not (ndarray? out)))
    (util/invalid! (str ":out must be an NDArray, got " (.getName (class out))) {:value out}))
  (let [conn (if out (conn-of out) (bridge/connection))
        r (bridge/call conn op (mapv param args))]
    (cond out out
          r (wrap conn r))))
