(ns org.apache.clojure-mxnet.resource-scope
  "Deterministic freeing of engine arrays: a scope disposes, when its body
   returns or throws, every NDArray and KVStore created inside it on this
   thread, except those in the value it returns.

   Without a scope nothing leaks either: the GC frees an array's engine
   memory some time after the array becomes unreachable. A scope frees it at
   a known point, in one engine call for all its arrays.

   - Only objects created by the scope's own thread, while it is open, belong
     to it; arrays from outside (and arrays made on other threads) are never
     touched.
   - The returned value is kept: the arrays in it, at any depth of maps,
     vectors, lists, sets and the realized part of lazy seqs, are not
     disposed. They move to the enclosing scope, if any, which disposes them
     when it closes unless it returns them too. Realize a lazy result inside
     the scope (doall) if it computes with the scope's arrays.
   - Scopes nest; an exception closes the scope (disposing all its objects)
     and propagates."
  (:import (java.util ArrayList IdentityHashMap)
           (org.apache.clojure_mxnet.bridge FloatVector Handles Handles$Handle)))

(set! *warn-on-reflection* true)

;; Each thread's open scopes, innermost last. A scope is an IdentityHashMap
;; from each object created in it to the object's engine handle.
(defonce ^:private ^ThreadLocal open-scopes (ThreadLocal.))

(defn track!
  "Registers `obj`, holding engine handle `handle`, with this thread's
   innermost open scope (if any); returns `obj`. Called by the API
   namespaces for every NDArray and KVStore they create."
  [obj ^Handles$Handle handle]
  (when-let [^ArrayList scopes (.get open-scopes)]
    (when-not (.isEmpty scopes)
      (.put ^IdentityHashMap (.get scopes (dec (.size scopes))) obj handle)))
  obj)

(defn begin!
  "Opens a scope on this thread and returns it. Prefer `using`."
  ^IdentityHashMap []
  (let [^ArrayList scopes (or (.get open-scopes)
                              (let [s (ArrayList.)] (.set open-scopes s) s))
        scope (IdentityHashMap.)]
    (.add scopes scope)
    scope))

(defn- walk-kept
  "Calls (keep! x) on `x` and everything inside it: map keys and values,
   collection elements, the realized part of lazy seqs (a vector of floats
   from ->vec holds no arrays and is skipped)."
  [x keep!]
  (keep! x)
  (cond
    (instance? FloatVector x) nil
    (map? x) (doseq [[k v] x] (walk-kept k keep!) (walk-kept v keep!))
    (and (seq? x) (instance? clojure.lang.IPending x))
    (when (realized? x)
      (loop [s (seq x)]
        (when s
          (walk-kept (first s) keep!)
          (let [r (.more ^clojure.lang.ISeq s)]
            (when (or (not (instance? clojure.lang.IPending r)) (realized? r))
              (recur (seq r)))))))
    (coll? x) (doseq [e x] (walk-kept e keep!))))

(defn end!
  "Closes `scope` (which must be this thread's innermost): disposes its
   objects except those in `ret`, which move to the enclosing scope.
   Prefer `using`."
  [^IdentityHashMap scope ret]
  (let [^ArrayList scopes (.get open-scopes)
        idx (if scopes (.lastIndexOf scopes scope) -1)]
    (when (neg? idx)
      (throw (ex-info "this resource scope is not open on this thread"
                      {:type :invalid-argument})))
    (.remove scopes (int idx))
    (let [^IdentityHashMap outer (when (pos? idx) (.get scopes (dec idx)))
          kept (IdentityHashMap.)]
      (when (and ret (not (.isEmpty scope)))
        (walk-kept ret (fn [x] (when (.containsKey scope x) (.put kept x true)))))
      (let [doomed (ArrayList.)]
        (doseq [^java.util.Map$Entry e (.entrySet scope)]
          (if (.containsKey kept (.getKey e))
            (when outer (.put outer (.getKey e) (.getValue e)))
            (.add doomed (.getValue e))))
        (.clear scope)
        (Handles/disposeAll doomed)))
    ret))

(defmacro using
  "Evaluates `forms` in a new resource scope and returns the last one's
   value. When the forms return (or throw), every NDArray and KVStore
   created inside on this thread is disposed, except those in the returned
   value (see the namespace doc).
   Example: one step whose temporaries are freed at once
   (resource-scope/using
     (let [g (ndarray/* grad 0.5)]          ; freed on exit
       (kvstore/push kv \"w\" g)
       (kvstore/pull kv \"w\" w)))            ; returns kv, made outside: kept"
  [& forms]
  `(let [scope# (begin!)
         ret# (try
                (do ~@forms)
                (catch Throwable t#
                  (end! scope# nil)
                  (throw t#)))]
     (end! scope# ret#)))

(defmacro with-do
  "`using` around a `do`: evaluates `forms` in a scope, returns the last value.
   Example: (resource-scope/with-do (kvstore/push kv \"w\" (ndarray/ones [2])) :pushed)"
  [& forms]
  `(using (do ~@forms)))

(defmacro with-let
  "`using` around a `let`: `(with-let [bindings*] body*)`.
   Example: (resource-scope/with-let [d (ndarray/- a b)] (ndarray/norm d))
   frees the difference and keeps its norm."
  [& forms]
  `(using (let ~@forms)))
