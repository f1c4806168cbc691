(ns org.apache.clojure-mxnet.property-test
  "Generated invalid calls through the Clojure API: each must throw the
   documented ex-info (:invalid-argument when the API refuses an argument,
   :mxnet-error when the engine does; the counts by :type are printed) with
   ex-data that prints readably, printing nothing, with a message naming the fault (the
   key, shape, dtype, parameter or path; a spec failure starts with
   clojure-mxnet's \"Invalid keys\", then names the argument, what it
   accepts and the value given), and leave every
   stored value exactly as it was.

   The calls come from a seeded generator (no test.check offline): wrong key
   types, mixed keys, unknown keys, duplicate init, wrong shapes and dtypes,
   wrong contexts, empty and mismatched lists, nil, NaN and infinite values,
   huge and negative shapes, bad optimizer and compression parameters, bad
   file paths, truncated and corrupt files. MXKV_PROPERTY_CALLS sets how many
   (default 10000), MXKV_PROPERTY_SEED replays a run (the seed is in every
   failure message).

   The stored values are compared with the originals after every tenth call
   (MXKV_PROPERTY_CHECK_EVERY) and at the end: a value a call changed stays
   changed, so this finds every such call, and a failure lists the calls
   since the last check."
  (:require [clojure.spec.alpha :as s]
            [clojure.string :as str]
            [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.context :as context]
            [org.apache.clojure-mxnet.kvstore :as kvstore]
            [org.apache.clojure-mxnet.ndarray :as ndarray]
            [org.apache.clojure-mxnet.optimizer :as optimizer]
            [org.apache.clojure-mxnet.util :as util])
  (:import (clojure.lang ExceptionInfo)
           (java.io File StringWriter)
           (java.nio.file Files OpenOption)
           (java.util SplittableRandom)))

(set! *warn-on-reflection* true)

(def ^:private calls (util/env-long "MXKV_PROPERTY_CALLS" 10000))
(def ^:private check-every (max 1 (util/env-long "MXKV_PROPERTY_CHECK_EVERY" 10)))

;;; ------------------------------------------------------------------ the generator

(defn- pick [^SplittableRandom r xs] (nth xs (.nextInt r (count xs))))
(defn- int-in [^SplittableRandom r lo hi] (.nextInt r (int lo) (int hi)))

(defn- py-shape
  "A shape as Python prints a tuple: (3,) or (2, 3)."
  [dims]
  (if (= 1 (count dims))
    (str "(" (first dims) ",)")
    (str "(" (str/join ", " dims) ")")))

(defn- quoted [k] (if (string? k) (str "'" k "'") (str k)))

(defn- other-shape
  "A random shape (1 to 3 dims of 1 to 5) other than `shape`."
  [r shape]
  (first (remove #(= % shape)
                 (repeatedly #(vec (repeatedly (int-in r 1 4) (fn [] (int-in r 1 6))))))))

(defn- q
  "Regex matching `s` literally."
  [s]
  (re-pattern (java.util.regex.Pattern/quote s)))

(def ^:private bad-keys
  [nil :k 'sym 1.5 ##NaN ##Inf {} #{} true (Object.) [1 "a"] ["a" :b] [[1]] [nil] '("a")])

(def ^:private bad-values
  [nil 1.0 "x" :v [1.0] {} (float-array 2) [nil] #{}])

(def ^:private bad-priorities [1.5 ##NaN ##Inf ##-Inf "1" :p 1e100 nil [0]])

(def ^:private bad-numbers ["abc" ##NaN ##Inf ##-Inf [1] {"x" 1} true])

(defn- fresh-key [r] (str "fresh" (int-in r 0 1000000)))

(defn- case-of
  "One generated invalid call on world `w`: {:what (description) :f (thunk)
   :type (expected :type) :msg (regex the message must match) :data (optional
   pred on ex-data) :after (optional check returning nil or a problem)}."
  [^SplittableRandom r {:keys [kv kvi kvd shapes good-states good-nd dir] :as w}]
  (let [k (pick r ["a" "b"])
        shape (shapes k)
        good (fn [] (ndarray/ones shape))]
    (case (int (.nextInt r 26))
      0 (let [bad (pick r bad-keys)
              [what f] (pick r [["push" #(kvstore/push kv bad (good))]
                                ["pull" #(kvstore/pull kv bad (good))]
                                ["init" #(kvstore/init kv bad (good))]
                                ["pushpull" #(kvstore/pushpull kv bad (good) (good))]])]
          {:what (str what " with key " (pr-str bad)) :f f :type :invalid-argument
           :msg #"^Invalid keys: ks must be a string or an int or a vector of string or a vector of int, got " :data #(= (pr-str bad) (pr-str (::s/value %)))})
      1 (let [bad (pick r bad-values)
              [what f msg] (pick r [["push" #(kvstore/push kv k bad) #"^Invalid values: vs must be an NDArray or a vector of NDArray, got "]
                                    ["init" #(kvstore/init kv (fresh-key r) bad) #"^Invalid values: vs must be an NDArray or a vector of NDArray, got "]
                                    ["pull" #(kvstore/pull kv k bad) #"^Invalid outs: outs must be an NDArray or a vector of NDArray, got "]])]
          {:what (str what " with value " (pr-str bad)) :f f :type :invalid-argument :msg msg
           :data #(= (pr-str bad) (pr-str (::s/value %)))})
      2 (let [bad (pick r bad-priorities)]
          {:what (str "push with priority " (pr-str bad)) :f #(kvstore/push kv k (good) bad)
           :type :invalid-argument :msg #"^Invalid priority: priority must be an int, got "})
      3 (let [bad (pick r [nil "kv" 1 {} [kv]])
              [what f] (pick r [["push" #(kvstore/push bad k (good))]
                                ["pull" #(kvstore/pull bad k (good))]
                                ["init" #(kvstore/init bad k (good))]
                                ["set-optimizer" #(kvstore/set-optimizer bad (optimizer/sgd))]
                                ["type" #(kvstore/type bad)]
                                ["barrier" #(kvstore/barrier bad)]])]
          {:what (str what " on " (pr-str bad)) :f f :type :invalid-argument
           :msg #"^Invalid kvstore: expected a KVStore"})
      4 (let [fk (fresh-key r)
              [what f] (pick r [["push" #(kvstore/push kv fk (good))]
                                ["pull" #(kvstore/pull kv fk (good))]])]
          {:what (str what " of unknown key " fk) :f f :type :mxnet-error
           :msg (q (str "key '" fk "' has not been initialized"))})
      5 (let [ik (pick r [(int-in r -1000000000 0) (int-in r 3 1000000000)])]
          {:what (str "push of unknown int key " ik) :f #(kvstore/push kvi ik (ndarray/ones [2]))
           :type :mxnet-error :msg (q (str "key " ik " has not been initialized"))})
      6 (let [ik (int-in r -1000 1000)]
          (pick r [{:what (str "int key " ik " on a string-keyed store")
                    :f #(kvstore/push kv ik (good)) :type :mxnet-error
                    :msg (q (str "key " ik " is int but this store uses str keys"))}
                   {:what (str "string key " k " on an int-keyed store")
                    :f #(kvstore/pull kvi k (ndarray/ones [2])) :type :mxnet-error
                    :msg (q (str "key '" k "' is str but this store uses int keys"))}]))
      7 (let [fk (fresh-key r)
              [what f dup] (pick r [["init of an initialized key" #(kvstore/init kv k (good)) k]
                                    ["init of a fresh key and an initialized one"
                                     #(kvstore/init kv [fk k] [(good) (good)]) k]
                                    ["init of a fresh key twice in one call"
                                     #(kvstore/init kv [fk fk] [(good) (good)]) fk]])]
          {:what what :f f :type :mxnet-error :msg (q (str "duplicate init of key '" dup "'"))
           :after #(when-not (try (kvstore/pull kv fk (good)) false
                                  (catch ExceptionInfo _ true))
                     (str "the failed init left key " fk " initialized"))})
      8 (let [bad (other-shape r shape)
              [what f verb] (pick r [["push" #(kvstore/push kv k (ndarray/ones bad)) "pushed shape"]
                                     ["pull" #(kvstore/pull kv k (ndarray/zeros bad)) "pulled into shape"]
                                     ["pushpull" #(kvstore/pushpull kv k (good) (ndarray/zeros bad))
                                      "pulled into shape"]])]
          {:what (str what " of key " k " with shape " bad) :f f :type :mxnet-error
           :msg (q (str "key '" k "' was " verb " " (py-shape bad)))})
      9 (let [dt (pick r [:float64 :int32 :float16 :uint8 :int8 :int64])]
          ;; (an update from a gradient of another dtype, which MXNet drops silently)
          {:what (str "push to key " k " as " (name dt))
           :f #(kvstore/push kv k (ndarray/ones shape {:dtype dt})) :type :mxnet-error
           :msg (q (str "key '" k "' was pushed dtype " (name dt)))})
      10 (let [bad (other-shape r (shapes "b"))]
           {:what (str "push of a good a and a bad b " bad)
            :f #(kvstore/push kv ["a" "b"] [(ndarray/ones (shapes "a")) (ndarray/ones bad)])
            :type :mxnet-error :msg (q (str "key 'b' was pushed shape " (py-shape bad)))})
      11 (let [n (int-in r 0 4)
               m (first (remove #(= % n) (repeatedly #(int-in r 0 4))))
               ks (vec (repeat n k))
               vs (vec (repeatedly m good))]
           (if (zero? n)
             {:what (str "push of no keys with " m " values") :f #(kvstore/push kv ks vs)
              :type :invalid-argument :msg #"^push: 0 keys \[\] for \d values"}
             (pick r [{:what (str "push of " n " keys with " m " values") :f #(kvstore/push kv ks vs)
                       :type :invalid-argument :msg (re-pattern (str "^push: " n " keys .* for " m " values"))}
                      {:what (str "init of " n " keys with " m " values")
                       :f #(kvstore/init kv (mapv (fn [_] (fresh-key r)) ks) vs)
                       :type :invalid-argument
                       :msg (re-pattern (str "^init: " n " key\\(s\\) .* for " m " values"))}])))
      12 (let [bad (pick r [nil [-1] [2 -3] [##NaN] [##Inf 2] [1.5] ["2"] [[2]] "23" :s 5])
               f (pick r [ndarray/zeros ndarray/ones ndarray/empty])]
           {:what (str "an array of shape " (pr-str bad)) :f #(f bad) :type :invalid-argument
            :msg #"^Invalid shape: shape-vec must be a sequential collection of int >= 0, got " :data #(= (pr-str bad) (pr-str (::s/value %)))})
      13 (let [dims (vec (repeatedly (int-in r 3 5) #(int-in r 1000000 100000000)))]
           {:what (str "a huge array of shape " dims) :f #(ndarray/zeros dims) :type :mxnet-error
            :msg (q (str "cannot make an array of shape " (py-shape dims)))})
      14 (let [dt (pick r [:float128 :complex64 "int3" 'double nil 32])]
           {:what (str "an array of dtype " (pr-str dt)) :f #(ndarray/zeros [2] {:dtype dt})
            :type :invalid-argument :msg (q (str "unknown dtype " (pr-str dt)))})
      15 (let [i (+ (:gpus w) (int-in r 0 8))]
           (pick r [{:what (str "an array on gpu(" i ")")
                     :f #(ndarray/zeros [2] {:ctx (context/gpu i)}) :type :mxnet-error
                     :msg (q (str "gpu(" i ")"))}
                    {:what "an array on a context that is not one"
                     :f #(ndarray/zeros [2] {:ctx (pick r ["cpu" :gpu 0 {}])}) :type :invalid-argument
                     :msg #"^Invalid context: ctx must be a Context, got "}]))
      16 (let [[oname params] (pick r [["sgd" ["learning_rate" "momentum" "wd" "rescale_grad"]]
                                       ["adam" ["beta1" "beta2" "epsilon" "learning_rate"]]
                                       ["rmsprop" ["gamma1" "gamma2" "epsilon"]]])
               p (pick r params)
               bad (pick r bad-numbers)]
           {:what (str "set-optimizer " oname " with " p " " (pr-str bad))
            :f #(kvstore/set-optimizer kv (optimizer/->Optimizer oname {p bad})) :type :mxnet-error
            :msg (re-pattern (str "^\\w+: " (java.util.regex.Pattern/quote p) " must be"))})
      17 (let [oname (str "no-such-optimizer-" (int-in r 0 1000))]
           (pick r [{:what (str "set-optimizer " oname)
                     :f #(kvstore/set-optimizer kv (optimizer/->Optimizer oname {})) :type :mxnet-error
                     :msg (q (str "Cannot find optimizer " oname))}
                    {:what "set-optimizer with no optimizer"
                     :f #(kvstore/set-optimizer kv (pick r [nil {} {:name 1} "sgd" {:params {}}
                                                                {:name "sgd" :params {}}]))
                     :type :invalid-argument :msg #"^Invalid optimizer: expected an Optimizer made by "}
                    {:what "an sgd optimizer with a bad learning rate"
                     :f #(optimizer/sgd {:learning-rate (pick r ["x" nil :lr [0.1]])})
                     :type :invalid-argument :msg #"^Incorrect sgd optimizer options: :learning-rate must be a number, got "}]))
      18 (pick r [{:what "compression of an unknown type"
                   :f #(kvstore/set-gradient-compression kvd {:type (pick r ["3bit" "" "0bit" "2bits"])})
                   :type :mxnet-error :msg #"Unknown type for gradient compression"}
                  (let [bad (pick r [##NaN -1 0 -0.5 ##-Inf])]
                    {:what (str "2bit compression with threshold " bad)
                     :f #(kvstore/set-gradient-compression kvd {:type "2bit" :threshold bad})
                     :type :mxnet-error :msg #"threshold must be (greater than 0|finite)"})
                  {:what "2bit compression with a threshold that is not a number"
                   :f #(kvstore/set-gradient-compression kvd {:type "2bit" :threshold (pick r ["x" "" "1/2"])})
                   :type :mxnet-error :msg #"for threshold expect float"}
                  {:what "compression parameters that are not a map"
                   :f #(kvstore/set-gradient-compression kvd (pick r [nil "2bit" [:type "2bit"] 2]))
                   :type :invalid-argument :msg #"^Invalid compression parameters: compression-params must be a map of a keyword or a string to anything, got "}])
      19 (let [path (str "/nonexistent-" (int-in r 0 1000000) "/x.states")]
           (pick r [{:what (str "save optimizer states to " path)
                     :f #(kvstore/save-optimizer-states kv path) :type :mxnet-error :msg (q path)}
                    {:what (str "load optimizer states from " path)
                     :f #(kvstore/load-optimizer-states kv path) :type :mxnet-error :msg (q path)}
                    {:what (str "load arrays from " path)
                     :f #(ndarray/load path) :type :mxnet-error :msg (q path)}
                    {:what (str "save arrays to " path)
                     :f #(ndarray/save path {"x" (good)}) :type :mxnet-error
                     :msg (q (str (.getParent (File. path))))}
                    {:what "optimizer states file that is not a string"
                     :f #(kvstore/load-optimizer-states kv (pick r [nil 1 :f (File. "x")]))
                     :type :invalid-argument :msg #"^Invalid filename: fname must be a string, got "}]))
      20 (let [f (File. ^File dir (str "states-" (int-in r 0 1000000)))
               kind (int-in r 0 3)
               ;; pickles (protocol 2) of things that are not states: 42, {"a" "b"}, [1 2]
               wrong-thing {0 [0x80 2 0x4b 42 0x2e]
                            1 [0x80 2 0x7d 0x71 0 0x58 1 0 0 0 0x61 0x71 1 0x58 1 0 0 0 0x62 0x71 2 0x73 0x2e]
                            2 [0x80 2 0x5d 0x71 0 0x28 0x4b 1 0x4b 2 0x65 0x2e]}]
           (if (zero? (int-in r 0 4))
             (let [bytes (byte-array (map unchecked-byte (wrong-thing kind)))]
               (Files/write (.toPath f) ^bytes bytes ^"[Ljava.nio.file.OpenOption;" (make-array OpenOption 0))
               {:what (str "load optimizer states from a valid pickle of the wrong thing (" kind ")")
                :f #(try (kvstore/load-optimizer-states kv (.getPath f)) (finally (.delete f)))
                :type :mxnet-error :msg (q (str (.getPath f) "': "))})
           (let [bytes (if (.nextBoolean r)
                       ;; cut inside the pickle: mxkv's 12-byte CRC trailer is optional,
                       ;; so a cut where it starts leaves a whole file (MXNet's own form)
                       (java.util.Arrays/copyOf ^bytes good-states
                                                (int (int-in r 0 (- (alength ^bytes good-states) 12))))
                       (byte-array (cons (unchecked-byte 0xff)
                                         (repeatedly (int-in r 0 64) #(unchecked-byte (int-in r 0 256))))))]
           (Files/write (.toPath f) ^bytes bytes ^"[Ljava.nio.file.OpenOption;" (make-array OpenOption 0))
           {:what (str "load optimizer states from a corrupt file of " (alength ^bytes bytes) " bytes")
            :f #(try (kvstore/load-optimizer-states kv (.getPath f)) (finally (.delete f)))
            :type :mxnet-error :msg (q (str (.getPath f) "': not an optimizer states file"))})))
      21 (let [f (File. ^File dir (str "arrays-" (int-in r 0 1000000)))
               ;; not at the start of mxkv's optional 12-byte trailer (b"MXKVCRC1" and
               ;; a CRC-32): what comes before it is a whole file in MXNet's format
               n (first (remove #(= % (- (alength ^bytes good-nd) 12))
                                (repeatedly #(int-in r 0 (alength ^bytes good-nd)))))]
           (Files/write (.toPath f) (java.util.Arrays/copyOf ^bytes good-nd (int n))
                        ^"[Ljava.nio.file.OpenOption;" (make-array OpenOption 0))
           {:what (str "load arrays from a file truncated to " n " bytes")
            :f #(try (ndarray/load (.getPath f)) (finally (.delete f)))
            :type :mxnet-error :msg (q (str "'" (.getPath f) "'"))})
      22 (let [bad (pick r [nil "x" 1.0 [1.0] :a])
               [fname f msg] (pick r [["->vec" ndarray/->vec #"^Invalid input array: ndarray must be an NDArray, got "]
                                      ["shape-vec" ndarray/shape-vec #"must be an NDArray, got"]
                                      ["dispose" ndarray/dispose #"must be an NDArray, got"]
                                      ["copy" ndarray/copy #"must be an NDArray, got"]])]
           {:what (str fname " of " (pr-str bad)) :f #(f bad) :type :invalid-argument :msg msg})
      23 (let [[fname f] (pick r [["sgd" optimizer/sgd] ["adam" optimizer/adam] ["nag" optimizer/nag]
                                  ["rms-prop" optimizer/rms-prop] ["ada-grad" optimizer/ada-grad]])
               bad (pick r [:lerning-rate :learning_rate :lr :momentun :beta :weight-decay])]
           (pick r [{:what (str "an " fname " optimizer with option " bad)
                     :f #(f {bad 0.1}) :type :invalid-argument
                     :msg (re-pattern (str "^Incorrect " fname " optimizer options: unknown option "
                                           (java.util.regex.Pattern/quote (pr-str bad))
                                           "; accepted: .*:wd"))
                     :data #(= [bad] (:unknown-keys %))}
                    {:what (str "an sgd optimizer whose schedule has key " bad)
                     :f #(optimizer/sgd {:lr-scheduler {:type "factor" :step 2 bad 0.5}})
                     :type :invalid-argument
                     :msg (re-pattern (str "^Invalid lr-scheduler: unknown option "
                                           (java.util.regex.Pattern/quote (pr-str bad))))}
                    {:what (str "compression with key " bad)
                     :f #(kvstore/set-gradient-compression kvd {:type "2bit" bad 0.5})
                     :type :invalid-argument
                     :msg (re-pattern (str "^Invalid compression parameters: unknown option "
                                           (java.util.regex.Pattern/quote (pr-str bad))
                                           "; accepted: :threshold, :type$"))}]))
      24 (let [bad (pick r ["a" nil :x [1] {} \c])
               i (int-in r 0 3)
               src (assoc [1.0 2.0 3.0] i bad)]
           (pick r [{:what (str "an array from " (pr-str src)) :f #(ndarray/array src [3])
                     :type :invalid-argument
                     :msg (re-pattern (str "^the source must hold numbers only; element " i " is "))
                     :data #(= i (:index %))}
                    {:what (str "set an array to " (pr-str src)) :f #(ndarray/set (good) src)
                     :type :invalid-argument
                     :msg (re-pattern (str "^the values must hold numbers only; element " i " is "))}]))
      25 (let [n (first (remove #(= % (reduce * shape)) (repeatedly #(int-in r 0 30))))]
           {:what (str "set an array of shape " shape " to " n " values")
            :f #(ndarray/set (good) (vec (repeat n 1.0))) :type :invalid-argument
            :msg (re-pattern (str "^set: " n " values for an array of " (reduce * shape) " elements"))}))))

;;; ------------------------------------------------------------------ the world

(defn- temp-dir ^File []
  (let [d (.toFile (Files/createTempDirectory "mxkv-property-"
                                              (make-array java.nio.file.attribute.FileAttribute 0)))]
    (.deleteOnExit d)
    d))

(defn- bytes-of ^bytes [^File f] (Files/readAllBytes (.toPath f)))

(defn- world
  "The stores the calls are tried on: string keys with an optimizer and its
   state, int keys, a device store with compression; good files to corrupt."
  []
  (let [dir (temp-dir)
        shapes {"a" [2 3] "b" [4]}
        kv (kvstore/create "local")
        kvi (kvstore/create "local")
        kvd (kvstore/create "device")
        states (File. dir "good.states")
        arrays (File. dir "good.nd")]
    (kvstore/init kv ["a" "b"] [(ndarray/array [0 1 2 3 4 5] [2 3]) (ndarray/full [4] 3)])
    (kvstore/set-optimizer kv (optimizer/sgd {:learning-rate 0.1 :momentum 0.9}))
    (kvstore/push kv ["a" "b"] [(ndarray/ones [2 3]) (ndarray/ones [4])])
    (kvstore/init kvi [1 2] [(ndarray/ones [2]) (ndarray/full [3] 7)])
    (kvstore/init kvd "c" (ndarray/full [4] 2))
    (kvstore/set-gradient-compression kvd {:type "2bit" :threshold 0.5})
    (kvstore/save-optimizer-states kv (.getPath states))
    (ndarray/save (.getPath arrays) {"x" (ndarray/ones [3 4]) "y" (ndarray/zeros [2])})
    {:kv kv :kvi kvi :kvd kvd :shapes shapes :dir dir
     :good-states (bytes-of states) :good-nd (bytes-of arrays)
     :gpus (long (bridge/call (bridge/connection) "context.num_gpus"))
     :outs {:kv [(ndarray/zeros [2 3]) (ndarray/zeros [4])]
            :kvi [(ndarray/zeros [2]) (ndarray/zeros [3])]
            :kvd [(ndarray/zeros [4])]}}))

(defn- stored
  "Every stored value of `w`, pulled and copied out."
  [{:keys [kv kvi kvd outs]}]
  (kvstore/pull kv ["a" "b"] (:kv outs))
  (kvstore/pull kvi [1 2] (:kvi outs))
  (kvstore/pull kvd ["c"] (:kvd outs))
  (mapv ndarray/->vec (concat (:kv outs) (:kvi outs) (:kvd outs))))

(defn- outcome
  "nil when `c`'s call failed as documented, else what went wrong."
  [c]
  (let [{:keys [f type msg data after]} c
        e (try (f) nil (catch Throwable t t))
        d (ex-data e)]
    (cond
      (nil? e) "it did not throw"
      (not (instance? ExceptionInfo e)) (str "it threw " (class e) ": " (ex-message e))
      (not= type (:type d)) (str "its :type was " (:type d) ", not " type ": " (ex-message e))
      (not (re-find msg (str (ex-message e)))) (str "its message " (pr-str (ex-message e))
                                                    " does not match " msg)
      ;; every refused argument is named with what is accepted, not only
      ;; clojure-mxnet's bare "Invalid values"
      (and (= :invalid-argument type)
           (not (re-find #"(must|accepted|expected|unknown|for an array|hold numbers|give one|takes one)"
                         (str (ex-message e)))))
      (str "its message " (pr-str (ex-message e)) " does not say what is accepted")
      (and data (not (data d))) (str "its ex-data does not name the value: " (pr-str (dissoc d :traceback)))
      ;; a function object prints as #object[clojure.core$string_QMARK_ ...]
      (re-find #"#object\[[^ \]]*\$" (pr-str d)) (str "its ex-data does not print readably: "
                                                    (pr-str (dissoc d :traceback)))
      after (after))))

;;; ------------------------------------------------------------------ the test

(deftest generated-invalid-calls-throw-the-documented-error-and-change-nothing
  (let [seed (util/env-long "MXKV_PROPERTY_SEED" (System/nanoTime))
        r (SplittableRandom. seed)
        w (world)
        before (stored w)
        failures (volatile! [])
        tried (volatile! 0)
        by-type (volatile! (sorted-map))
        printed (StringWriter.)
        start (System/nanoTime)]
    (binding [*out* printed] ; nothing may print: kept to check
      (loop [i 0 since [] baseline before]
        (let [last? (= i calls)
              now (when (or last? (= (count since) check-every)) (stored w))]
          (when (and now (not= baseline now))
            (vswap! failures conj (str "a stored value changed after one of: "
                                       (str/join "; " since))))
          (when (and (not last?) (< (count @failures) 10))
            (let [c (case-of r w)]
              (vswap! tried inc)
              (vswap! by-type update (:type c) (fnil inc 0))
              (when-let [problem (outcome c)]
                (vswap! failures conj (str "call " i " (" (:what c) "): " problem)))
              (recur (inc i)
                     (conj (if now [] since) (str "call " i " (" (:what c) ")"))
                     (or now baseline)))))))
    (let [secs (/ (- (System/nanoTime) start) 1e9)]
      (is (empty? @failures)
          (str "MXKV_PROPERTY_SEED=" seed " replays this run; first failures:\n"
               (str/join "\n" @failures)))
      (is (= calls @tried) "every call was tried")
      (is (= "" (str printed)) "refused calls print nothing")
      (println (format "property-test: %d invalid calls over %s, seed %d, %.1f s, %d failed; refusals by :type (each checked): %s"
                       @tried (name (bridge/kind (bridge/connection))) seed secs
                       (count @failures)
                       (str/join ", " (map (fn [[t n]] (str t " " n)) @by-type)))))
    (testing "the stores still work"
      (let [{:keys [kv kvi]} w
            out (ndarray/zeros [3])
            b (ndarray/zeros [4])]
        (kvstore/push kvi 2 (ndarray/full [3] 5))
        (kvstore/pull kvi 2 out)
        (is (= [5.0 5.0 5.0] (ndarray/->vec out)))
        (kvstore/push kv "b" (ndarray/ones [4]))
        (kvstore/pull kv "b" b)
        (is (every? #(< % 2.9) (ndarray/->vec b)) "the optimizer still updates b (from 2.9)")))
    (testing "nothing is left in its temp directory"
      ;; (deleteOnExit cannot remove a directory that still holds files)
      (let [^File dir (:dir w)]
        (doseq [^String n ["good.states" "good.nd"]] (.delete (File. dir n)))
        (is (= [] (vec (sort (map #(.getName ^File %) (.listFiles dir)))))
            "every generated case deleted its file")
        (is (.delete dir) (str "the temp directory " dir " is removed"))))))
