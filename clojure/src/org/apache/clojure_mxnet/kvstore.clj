(ns org.apache.clojure-mxnet.kvstore
  "MXNet's KVStore, run by the Python engine.

   A KVStore here is a handle to a store in the engine. Push and pull send
   keys and array handles, never array contents: one engine call per function
   call. Keys are strings or integers (not mixed); values are NDArrays.
   A single key with a vector of values means the same key once per value
   (one value per device), as in the tutorial. The store is freed when it is
   garbage-collected or disposed."
  (:refer-clojure :exclude [type])
  (:require [clojure.spec.alpha :as s]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.util :as util])
  (:import (org.apache.clojure_mxnet.bridge Handles$Handle)))

(set! *warn-on-reflection* true)

(deftype KVStore [conn ^Handles$Handle handle kv-type]
  Object
  (toString [_] (str "KVStore " kv-type (when (.isReleased handle) " disposed"))))

(defmethod print-method KVStore [kv ^java.io.Writer w]
  (.write w (str "#<" kv ">")))

(defn- hid ^long [^KVStore kv]
  (bridge/handle-id (.-handle kv) "KVStore"))

(defn- conn-of [^KVStore kv] (.-conn kv))

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
(s/def ::priority int?)

(defn- as-vec [x] (if (vector? x) x [x]))

(defn- keys-for
  "The key list for values `vals`: `ks` itself when a vector, else `ks`
   repeated once per value."
  [ks vals]
  (if (vector? ks) ks (vec (repeat (count vals) ks))))

(defn- handles [arrays]
  (mapv ndarray/handle arrays))

(defn create
  " Create a new KVStore
   WARNING: it is your responsibility to clear this object through dispose.
   - name : #{local, device, dist_sync, ...} (default is local)
        The type of KVStore
        - local works for multiple devices on a single machine (single process)
        - dist works for multi-machines (multiple processes)"
  ([name]
   (util/validate! string? name "Invalid kvstore name")
   (let [conn (bridge/connection)
         [h t] (bridge/call conn "kv.create" [name])]
     (bridge/tracked conn h #(KVStore. conn % t))))
  ([]
   (create "local")))

(defn dispose
  "Release the engine's store now (the GC would, later).
   The object shall never be used after it is disposed."
  [^KVStore kvstore]
  (.dispose ^Handles$Handle (.-handle kvstore))
  nil)

(defn init
  "Initialize a single or a sequence of key-value pairs into the store.
    For each key, one must init it before push and pull.
    Only worker 0's (rank == 0) data are used.
    This function returns after data have been initialized successfully
    kvstore - KVstore
    ks - keys (vec or strings or single string; integers work too)
    vs - values (vec or NDArrays or single ndarry)"
  [kvstore ks vs]
  (util/validate! ::ks ks "Invalid keys")
  (util/validate! ::vs vs "Invalid values")
  (bridge/call (conn-of kvstore) "kv.init" [(hid kvstore) (as-vec ks) (handles (as-vec vs))])
  kvstore)

(defn push
  " Push a single or a sequence of key-value pairs into the store.
    Data consistency:
    1. this function returns after adding an operator to the engine.
    2. push is always called after all previous push and pull on the same key are finished
    3. there is no synchronization between workers. One can use _barrier() to sync all workers

   -ks Keys
   -vs values  According values
   - priority
           The priority of the push operation.
           The higher the priority, the faster this action is likely
           to be executed before other push actions."
  ([kvstore ks vs priority]
   (util/validate! ::ks ks "Invalid keys")
   (util/validate! ::vs vs "Invalid values")
   (util/validate! ::priority priority "Invalid priority")
   (let [store-vals (as-vec vs)]
     (bridge/call (conn-of kvstore) "kv.push"
                  [(hid kvstore) (keys-for ks store-vals) (handles store-vals) priority]))
   kvstore)
  ([kvstore ks vs]
   (push kvstore ks vs 0)))

(defn pull
  " Pull a single value or a sequence of values from the store.
    Data consistency:
    1. this function returns after adding an operator to the engine. But any
       further read on out will be blocked until it is finished.
    2. pull is always called after all previous push and pull on the same key are finished
    3. It pulls the newest value from the store.
   - kvstore
   - ks single or vector of (strings)
   - outs single or vector of outs (NDArrays)
   - priority
       The priority of the push operation.
       The higher the priority, the faster this action is likely
       to be executed before other push actions."
  ([kvstore ks outs priority]
   (util/validate! ::ks ks "Invalid keys")
   (util/validate! ::outs outs "Invalid outs")
   (util/validate! ::priority priority "Invalid priority")
   (let [store-vals (as-vec outs)]
     (bridge/call (conn-of kvstore) "kv.pull"
                  [(hid kvstore) (keys-for ks store-vals) (handles store-vals) priority]))
   kvstore)
  ([kvstore ks outs]
   (pull kvstore ks outs 0)))

(defn pushpull
  "Push values then pull the result into outs, in one call (MXNet's
   pushpull). Without outs, the values themselves receive the result.
   - ks single key or vector of keys (aligned with vs, and with outs)
   - vs values (NDArray or vector)
   - outs outputs (NDArray or vector), optional"
  ([kvstore ks vs outs priority]
   (util/validate! ::ks ks "Invalid keys")
   (util/validate! ::vs vs "Invalid values")
   (when outs (util/validate! ::outs outs "Invalid outs"))
   (util/validate! ::priority priority "Invalid priority")
   (let [store-vals (as-vec vs)
         store-outs (when outs (as-vec outs))]
     (bridge/call (conn-of kvstore) "kv.pushpull"
                  [(hid kvstore) (keys-for ks store-vals) (handles store-vals)
                   (when outs (keys-for ks store-outs)) (when outs (handles store-outs)) priority]))
   kvstore)
  ([kvstore ks vs outs]
   (pushpull kvstore ks vs outs 0))
  ([kvstore ks vs]
   (pushpull kvstore ks vs nil 0)))

(defn broadcast
  "Initialize keys with vs, then pull them into outs (MXNet's broadcast).
   - ks single key or vector of keys
   - vs initial values, one per key
   - outs outputs (NDArray or vector; a single key fills all of them)"
  ([kvstore ks vs outs priority]
   (util/validate! ::ks ks "Invalid keys")
   (util/validate! ::vs vs "Invalid values")
   (util/validate! ::outs outs "Invalid outs")
   (util/validate! ::priority priority "Invalid priority")
   (let [store-vals (as-vec vs)
         store-outs (as-vec outs)]
     (bridge/call (conn-of kvstore) "kv.broadcast"
                  [(hid kvstore) (keys-for ks store-vals) (handles store-vals)
                   (keys-for ks store-outs) (handles store-outs) priority]))
   kvstore)
  ([kvstore ks vs outs]
   (broadcast kvstore ks vs outs 0)))

(s/def ::row-ids ::outs)

(defn row-sparse-pull
  "Pull only the rows `row-ids` (NDArrays of row indices, one per out) of
   row_sparse keys into outs; other rows of the outs become 0.
   - ks single key or vector of keys
   - outs outputs (NDArray or vector)
   - row-ids NDArray or vector of NDArrays, aligned with outs"
  ([kvstore ks outs row-ids priority]
   (util/validate! ::ks ks "Invalid keys")
   (util/validate! ::outs outs "Invalid outs")
   (util/validate! ::row-ids row-ids "Invalid row ids")
   (util/validate! ::priority priority "Invalid priority")
   (let [store-outs (as-vec outs)
         ids (as-vec row-ids)
         ids (if (and (= 1 (count ids)) (> (count store-outs) 1))
               (vec (repeat (count store-outs) (first ids)))
               ids)]
     (bridge/call (conn-of kvstore) "kv.row_sparse_pull"
                  [(hid kvstore) (keys-for ks store-outs) (handles store-outs) (handles ids) priority]))
   kvstore)
  ([kvstore ks outs row-ids]
   (row-sparse-pull kvstore ks outs row-ids 0)))

(s/def ::compression-params (s/map-of (s/or :k keyword? :s string?) any?))

(defn set-gradient-compression
  "Compress gradients pushed to the store, e.g. {:type \"2bit\" :threshold 0.5}."
  [kvstore compression-params]
  (util/validate! ::compression-params compression-params "Invalid compression parameters")
  (bridge/call (conn-of kvstore) "kv.set_gradient_compression"
               [(hid kvstore) (util/convert-map compression-params)])
  kvstore)

(defn type
  "Get the type of the kvstore"
  [^KVStore kvstore]
  (.-kv-type kvstore))

(defn num-workers
  "Get the number of worker nodes"
  [kvstore]
  (bridge/call (conn-of kvstore) "kv.num_workers" [(hid kvstore)]))

(defn rank
  "Get the rank of this worker node
   returns The rank of this node, which is in [0, get_num_workers()) "
  [kvstore]
  (bridge/call (conn-of kvstore) "kv.rank" [(hid kvstore)]))

(s/def ::optimizer #(and (map? %) (string? (:name %))))

(defn set-optimizer
  "Register an optimizer to the store (a value from
   org.apache.clojure-mxnet.optimizer); the engine runs it on every push.
   If there are multiple machines, this process (should be a worker node)
   will pack this optimizer and send it to all servers. It returns after
   this action is done"
  [kvstore optimizer]
  (util/validate! ::optimizer optimizer "Invalid optimizer")
  (bridge/call (conn-of kvstore) "kv.set_optimizer"
               [(hid kvstore) (:name optimizer) (:params optimizer)])
  kvstore)

(defn barrier
  "Global barrier among all worker nodes
    For example, assume there are n machines, we want to let machine 0 first
    init the values, and then pull the inited value to all machines. Before
    pulling, we can place a barrier to guarantee that the initialization is
    finished."
  [kvstore]
  (bridge/call (conn-of kvstore) "kv.barrier" [(hid kvstore)])
  kvstore)

(s/def ::node-id int?)

(defn num-dead-node
  "Number of dead nodes in group `node-id` (0 for a local store)."
  [kvstore node-id]
  (util/validate! ::node-id node-id "Invalid node id")
  (bridge/call (conn-of kvstore) "kv.num_dead_node" [(hid kvstore) node-id]))

(defn set-barrier-before-exit
  " Whether to do barrier when the kvstore finalizes
   - kvstore
   - barrier-before-exit boolean"
  [kvstore barrier-before-exit]
  (bridge/call (conn-of kvstore) "kv.set_barrier_before_exit"
               [(hid kvstore) (boolean barrier-before-exit)])
  kvstore)

(s/def ::head int?)
(s/def ::body string?)

(defn send-command-to-servers
  "Send a command to all server nodes
    Send a command to all server nodes, which will make each server node run
    KVStoreServer.controller
    This function returns after the command has been executed in all server nodes
   -kvstore
   -head the head of the command
   - body the body of the command"
  [kvstore head body]
  (util/validate! ::head head "Invalid head")
  (util/validate! ::body body "Invalid body")
  (bridge/call (conn-of kvstore) "kv.send_command_to_servers" [(hid kvstore) head body])
  kvstore)

(s/def ::fname string?)

(defn save-optimizer-states
  "Save optimizer (updater) state to file
   - kvstore
   - fname Path to output states file."
  [kvstore fname]
  (util/validate! ::fname fname "Invalid filename")
  (bridge/call (conn-of kvstore) "kv.save_optimizer_states" [(hid kvstore) fname false])
  kvstore)

(defn load-optimizer-states
  "Load optimizer (updater) state from file
   - kvstore
   -fname Path to input states file."
  [kvstore fname]
  (util/validate! ::fname fname "Invalid filename")
  (bridge/call (conn-of kvstore) "kv.load_optimizer_states" [(hid kvstore) fname])
  kvstore)
