(ns org.apache.clojure-mxnet.kvstore
  "MXNet's KVStore, run by the Python engine.

   A KVStore here is a handle to a store in the engine. Push and pull send
   keys and array handles, never array contents: one engine call per function
   call. Keys are strings or integers (not mixed); values are NDArrays.
   A single key with a vector of values means the same key once per value
   (one value per device), as in the tutorial.

   Calls are synchronous: each returns once the store has done the work, so
   a pull's output holds the value when `pull` returns, and `priority`
   orders nothing in a local store (it is accepted and passed on, as MXNet's
   API has it). A store is freed when it is garbage-collected, disposed, or
   its resource scope closes, or at the end of `with-open` (a KVStore is
   AutoCloseable; closing twice does nothing). Every function throws ex-info
   {:type :invalid-argument} when its first argument is not a KVStore, and
   {:type :disposed} when it was disposed."
  (:refer-clojure :exclude [type])
  (:require [clojure.spec.alpha :as s]
            [clojure.string :as string]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]
            [org.apache.clojure-mxnet.resource-scope :as resource-scope]
            [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.bridge Handles$Handle)
           (org.apache.clojure_mxnet.kvstore KVStore)))

(set! *warn-on-reflection* true)

;; KVStore is a JVM class (org.apache.clojure_mxnet.kvstore.KVStore) holding
;; the connection, the engine handle and the type string: stores made before
;; any namespace is reloaded stay usable, and it is AutoCloseable (close =
;; dispose), so `with-open` works.

(defn ->KVStore
  "The KVStore for engine handle `handle` of connection `conn`, of type
   `kv-type` (the store is made by `create`)."
  [conn handle kv-type]
  (KVStore. conn handle kv-type))

(defmethod print-method KVStore [kv ^java.io.Writer w]
  (.write w (str "#<" kv ">")))

(defn- hid
  "The engine id of store `kv`: ex-info :invalid-argument for a non-store,
   :disposed for a disposed one."
  ^long [kv]
  (when-not (instance? KVStore kv)
    (util/invalid! (str "Invalid kvstore: expected a KVStore (from kvstore/create), got "
                        (if (nil? kv) "nil" (.getName (class kv))))
                   {:value kv}))
  (bridge/handle-id (.-handle ^KVStore kv) "KVStore"))

(defn- conn-of [kv] (hid kv) (.-conn ^KVStore kv))

(s/def ::kvstore #(instance? KVStore %))
(s/def ::key (s/or :string string? :int int?))
(s/def ::ks (s/or :string string?
                  :int int?
                  :vec-of-string (s/coll-of string? :kind vector?)
                  :vec-of-int (s/coll-of int? :kind vector?)))
(s/def ::ndarray ndarray/ndarray?)
(s/def ::vs (s/or :ndarray ::ndarray
                  :vec-of-ndarray (s/coll-of ::ndarray :kind vector?)))
(s/def ::outs (s/or :ndarray ::ndarray
                    :vec-of-ndarray (s/coll-of ::ndarray :kind vector?)))
(defn- as-vec [x] (if (vector? x) x [x]))

(defn- keys-for
  "The key list for values `vals`: `ks` itself when a vector, else `ks`
   repeated once per value."
  [ks vals]
  (if (vector? ks) ks (vec (repeat (count vals) ks))))

(defn- handles [arrays]
  (mapv ndarray/handle arrays))

(defn- check-counts!
  "Refuses a vector of keys whose count differs from the values'."
  [what ks vals]
  (when (and (vector? ks) (not= (count ks) (count vals)))
    (util/invalid! (str what ": " (count ks) " keys " (pr-str ks) " for " (count vals)
                        " values; give one key per value, or a single key for all of them")
                   {:keys ks :count (count vals)})))

(defn- refuse-unknown-type!
  "Rethrows the engine's refusal `e` of kvstore type `name` (an
   MXNetValueError, which names the known types) as :invalid-argument, its
   bad argument and the known types in the ex-data (:accepted); any other
   error as it is."
  [e name]
  (let [{:keys [python-class traceback]} (ex-data e)
        msg (str (ex-message e))]
    (if (= python-class "mxkv.base.MXNetValueError")
      (util/invalid! (str "Invalid kvstore name: " (string/replace-first msg #"^create: " ""))
                     {:argument "name" :value name
                      :accepted (mapv second (re-seq #"'([^']+)'"
                                                     (second (re-find #"known types are ([^(]*)" msg))))
                      :python-class python-class :traceback traceback})
      (throw e))))

(defn create
  "A new store of type `name` (a string, default \"local\"): \"local\" and
   \"device\" reduce on one machine (\"device\" sums on the values' devices);
   MXNet's other type strings (\"dist_sync\", \"nccl\" ...) are parsed as MXNet
   does; any other name (a typo such as \"lcoal\") is refused with ex-info
   {:type :invalid-argument :argument \"name\" :accepted [known types]}, where
   MXNet makes a local store. Freeing it is optional: the GC does, or `dispose`."
  ([name]
   (util/validate! string? name "Invalid kvstore name")
   (let [conn (bridge/connection)
         [h t] (try (bridge/call conn "kv.create" [name])
                    (catch clojure.lang.ExceptionInfo e
                      (refuse-unknown-type! e name)))
         kv (bridge/tracked conn h #(KVStore. conn % t))]
     (resource-scope/track! kv (.-handle ^KVStore kv))))
  ([]
   (create "local")))

(defn dispose
  "Frees the engine's store now instead of when the GC finds it
   unreachable (as `.close` does). Any later use throws ex-info
   {:type :disposed}; disposing it again does nothing. Returns nil."
  [kvstore]
  (when-not (instance? KVStore kvstore)
    (hid kvstore))
  (.close ^KVStore kvstore)
  nil)

(s/def ::priority int?)

(defn- keyed-call
  "Push or pull (`what`): validates the call, then sends the keys (a single
   key repeated once per array) and the arrays' handles in one engine call.
   Returns the store."
  [kvstore what ks arrays arrays-spec arrays-msg priority]
  (let [id (hid kvstore)]
    (util/validate! ::ks ks "Invalid keys")
    (util/validate! arrays-spec arrays arrays-msg)
    (util/validate! ::priority priority "Invalid priority")
    (let [arrays (as-vec arrays)]
      (check-counts! what ks arrays)
      (bridge/call (conn-of kvstore) (str "kv." what)
                   [id (keys-for ks arrays) (handles arrays) priority])))
  kvstore)

(defn init
  "Gives keys their first values; every key must be initialized once before
   it is pushed or pulled, and only once.
   - ks  a key (string or int) or a vector of keys
   - vs  an NDArray or a vector of NDArrays, one per key
   The store copies the values. Returns the store."
  [kvstore ks vs]
  (let [id (hid kvstore)]
    (util/validate! ::ks ks "Invalid keys")
    (util/validate! ::vs vs "Invalid values")
    (let [ks (as-vec ks) vals (as-vec vs)]
      (when (not= (count ks) (count vals))
        (util/invalid! (str "init: " (count ks) " key(s) " (pr-str ks) " for " (count vals)
                            " values; init takes one value per key")
                       {:keys ks :count (count vals)}))
      (bridge/call (conn-of kvstore) "kv.init" [id ks (handles vals)])))
  kvstore)

(defn push
  "Sends values to keys. Values pushed to one key in one call are summed
   (a single key with a vector of values: one value per device); with an
   optimizer set, that sum is the gradient the optimizer applies to the
   stored weight, else it replaces the stored value.
   - ks  a key or a vector of keys (aligned with vs)
   - vs  an NDArray or a vector of NDArrays
   - priority  an int, accepted as in MXNet's API; calls are synchronous here,
     so it orders nothing in a local store
   Returns the store once the push is applied."
  ([kvstore ks vs priority]
   (keyed-call kvstore "push" ks vs ::vs "Invalid values" priority))
  ([kvstore ks vs]
   (push kvstore ks vs 0)))

(defn pull
  "Copies the stored values of keys into `outs`.
   - ks  a key or a vector of keys (a single key fills every out)
   - outs  an NDArray or a vector of NDArrays, each of its key's shape
   - priority  an int; orders nothing in a local store (calls are synchronous)
   Returns the store once the outs hold the values."
  ([kvstore ks outs priority]
   (keyed-call kvstore "pull" ks outs ::outs "Invalid outs" priority))
  ([kvstore ks outs]
   (pull kvstore ks outs 0)))

(defn pushpull
  "Push values then pull the result into outs, in one call (MXNet's
   pushpull). Without outs, the values themselves receive the result.
   - ks single key or vector of keys (aligned with vs, and with outs)
   - vs values (NDArray or vector)
   - outs outputs (NDArray or vector), optional
   - priority an int; orders nothing in a local store"
  ([kvstore ks vs outs priority]
   (let [id (hid kvstore)]
     (util/validate! ::ks ks "Invalid keys")
     (util/validate! ::vs vs "Invalid values")
     (when outs (util/validate! ::outs outs "Invalid outs"))
     (util/validate! ::priority priority "Invalid priority")
     (let [store-vals (as-vec vs)
           store-outs (when outs (as-vec outs))]
       (check-counts! "pushpull" ks store-vals)
       (bridge/call (conn-of kvstore) "kv.pushpull"
                    [id (keys-for ks store-vals) (handles store-vals)
                     (when outs (keys-for ks store-outs)) (when outs (handles store-outs)) priority])))
   kvstore)
  ([kvstore ks vs outs]
   (pushpull kvstore ks vs outs 0))
  ([kvstore ks vs]
   (pushpull kvstore ks vs nil 0)))

(defn broadcast
  "Initialize keys with vs, then pull them into outs (MXNet's broadcast).
   - ks single key or vector of keys
   - vs initial values, one per key
   - outs outputs (NDArray or vector; a single key fills all of them)
   - priority an int; orders nothing in a local store"
  ([kvstore ks vs outs priority]
   (let [id (hid kvstore)]
     (util/validate! ::ks ks "Invalid keys")
     (util/validate! ::vs vs "Invalid values")
     (util/validate! ::outs outs "Invalid outs")
     (util/validate! ::priority priority "Invalid priority")
     (let [store-vals (as-vec vs)
           store-outs (as-vec outs)]
       (check-counts! "broadcast" ks store-vals)
       (bridge/call (conn-of kvstore) "kv.broadcast"
                    [id (keys-for ks store-vals) (handles store-vals)
                     (keys-for ks store-outs) (handles store-outs) priority])))
   kvstore)
  ([kvstore ks vs outs]
   (broadcast kvstore ks vs outs 0)))

(s/def ::row-ids ::outs)

(defn row-sparse-pull
  "Pull only the rows `row-ids` (NDArrays of row indices, one per out) of
   row_sparse keys into outs; other rows of the outs become 0.
   - ks single key or vector of keys
   - outs outputs (NDArray or vector)
   - row-ids NDArray or vector of NDArrays, aligned with outs
   - priority an int; orders nothing in a local store"
  ([kvstore ks outs row-ids priority]
   (let [id (hid kvstore)]
     (util/validate! ::ks ks "Invalid keys")
     (util/validate! ::outs outs "Invalid outs")
     (util/validate! ::row-ids row-ids "Invalid row ids")
     (util/validate! ::priority priority "Invalid priority")
     (let [store-outs (as-vec outs)
           ids (as-vec row-ids)
           ids (if (and (= 1 (count ids)) (> (count store-outs) 1))
                 (vec (repeat (count store-outs) (first ids)))
                 ids)]
       (check-counts! "row-sparse-pull" ks store-outs)
       (bridge/call (conn-of kvstore) "kv.row_sparse_pull"
                    [id (keys-for ks store-outs) (handles store-outs) (handles ids) priority])))
   kvstore)
  ([kvstore ks outs row-ids]
   (row-sparse-pull kvstore ks outs row-ids 0)))

(s/def ::compression-params (s/map-of (s/or :k keyword? :s string?) any?))

(defn set-gradient-compression
  "Compress gradients pushed to the store, e.g. {:type \"2bit\" :threshold 0.5}
   (keys :type and :threshold, keywords or strings; any other key is
   refused with ex-info {:type :invalid-argument})."
  [kvstore compression-params]
  (let [id (hid kvstore)]
    (util/validate! ::compression-params compression-params "Invalid compression parameters")
    (util/check-options! compression-params #{:type :threshold} "Invalid compression parameters")
    (bridge/call (conn-of kvstore) "kv.set_gradient_compression"
                 [id (util/convert-map compression-params)]))
  kvstore)

(defn type
  "The store's type string, e.g. \"local\"."
  [kvstore]
  (hid kvstore)
  (.-kvType ^KVStore kvstore))

(defn num-workers
  "How many worker processes share the store (an int; 1 for a local store)."
  [kvstore]
  (int (bridge/call (conn-of kvstore) "kv.num_workers" [(hid kvstore)])))

(defn rank
  "This worker's index among the store's workers (an int in
   [0, num-workers); 0 for a local store)."
  [kvstore]
  (int (bridge/call (conn-of kvstore) "kv.rank" [(hid kvstore)])))

(defn set-optimizer
  "Makes every later push an update: the store builds, in the engine, the
   optimizer `optimizer` describes (an Optimizer value from
   org.apache.clojure-mxnet.optimizer: `(optimizer/sgd {:learning-rate 0.1})`)
   and applies it to the stored weight with the pushed sum as gradient. A
   distributed store runs it on its servers. Returns the store. Anything
   else, a plain map included, is refused with ex-info :invalid-argument
   naming the value (`optimizer/check!`)."
  [kvstore optimizer]
  (let [id (hid kvstore)]
    (optimizer/check! optimizer)
    (bridge/call (conn-of kvstore) "kv.set_optimizer" [id (:name optimizer) (:params optimizer)]))
  kvstore)

(defn barrier
  "Waits until every worker of a distributed store has reached this call
   (for example, so that all see worker 0's init before pulling). Returns at
   once for a local store. Returns the store."
  [kvstore]
  (bridge/call (conn-of kvstore) "kv.barrier" [(hid kvstore)])
  kvstore)

(s/def ::node-id int?)

(defn num-dead-node
  "How many nodes of group `node-id` (an int) a distributed store has lost
   (an int; 0 for a local store)."
  [kvstore node-id]
  (let [id (hid kvstore)]
    (util/validate! ::node-id node-id "Invalid node id")
    (int (bridge/call (conn-of kvstore) "kv.num_dead_node" [id node-id]))))

(s/def ::barrier-before-exit boolean?)

(defn set-barrier-before-exit
  "Whether a distributed store waits for all workers when it shuts down.
   - barrier-before-exit  true or false (anything else is refused)
   Returns the store."
  [kvstore barrier-before-exit]
  (let [id (hid kvstore)]
    (util/validate! ::barrier-before-exit barrier-before-exit "Invalid barrier-before-exit")
    (bridge/call (conn-of kvstore) "kv.set_barrier_before_exit" [id barrier-before-exit]))
  kvstore)

(s/def ::head int?)
(s/def ::body string?)

(defn send-command-to-servers
  "Runs a command on every server of a distributed store and returns once
   all have run it.
   - head  an int, the command's kind
   - body  a string, its argument
   Returns the store."
  [kvstore head body]
  (let [id (hid kvstore)]
    (util/validate! ::head head "Invalid head")
    (util/validate! ::body body "Invalid body")
    (bridge/call (conn-of kvstore) "kv.send_command_to_servers" [id head body]))
  kvstore)

(s/def ::fname string?)

(defn save-optimizer-states
  "Writes the state the store's optimizer keeps per key (momentum, moments
   ...) to file `fname` (a string). Returns the store."
  [kvstore fname]
  (let [id (hid kvstore)]
    (util/validate! ::fname fname "Invalid filename")
    (bridge/call (conn-of kvstore) "kv.save_optimizer_states" [id fname false]))
  kvstore)

(defn load-optimizer-states
  "Reads optimizer state written by `save-optimizer-states` from file
   `fname` (a string) into the store's optimizer. Returns the store."
  [kvstore fname]
  (let [id (hid kvstore)]
    (util/validate! ::fname fname "Invalid filename")
    (bridge/call (conn-of kvstore) "kv.load_optimizer_states" [id fname]))
  kvstore)
