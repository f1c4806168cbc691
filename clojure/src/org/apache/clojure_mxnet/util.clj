(ns org.apache.clojure-mxnet.util
  "Helpers shared by the API namespaces: spec validation with clojure-mxnet's
   messages, key-name conversion, n-dimensional sequence shapes."
  (:require [clojure.spec.alpha :as s]
            [clojure.string :as string]))

(def ^:private api-classes
  "Class-name prefixes of the API's own frames: its namespaces' functions,
   the bridge's Java classes and the handle and value classes."
  (conj (mapv #(str "org.apache.clojure_mxnet." % "$")
              ["base" "bridge" "context" "dtype" "kvstore" "kvstore_server" "lr_scheduler"
               "ndarray" "optimizer" "resource_scope" "shape" "util"
               "random" "ndarray_api" "ndarray_random_api"])
        "org.apache.clojure_mxnet.bridge." "org.apache.clojure_mxnet.ndarray."
        "org.apache.clojure_mxnet.kvstore." "org.apache.clojure_mxnet.context."
        "org.apache.clojure_mxnet.shape." "org.apache.clojure_mxnet.dtype."))

(defn- internal-frame? [^StackTraceElement f]
  (let [c (.getClassName f)]
    (boolean (or (some #(.startsWith c ^String %) api-classes)
                 (.startsWith c "clojure.lang.")
                 (.startsWith c "java.")
                 (.startsWith c "jdk.")
                 (.startsWith c "sun.")
                 (.startsWith c "py4j.")))))

(defn at-caller
  "Returns `e` with the API's own frames removed from the top of its stack
   trace, so that it points at the code that called the API (the REPL shows
   that frame as the error's location); the full story of an engine error is
   in its ex-data (:traceback)."
  [^Throwable e]
  (let [frames (.getStackTrace e)
        kept (drop-while internal-frame? frames)]
    (when (and (seq kept) (< (count kept) (alength frames)))
      (.setStackTrace e (into-array StackTraceElement kept)))
    e))

(defn invalid!
  "Throws ex-info with message `msg` and `data` plus `:type :invalid-argument`,
   pointing at the API's caller."
  ([msg] (invalid! msg {}))
  ([msg data]
   (throw (at-caller (ex-info msg (assoc data :type :invalid-argument))))))

(defn- fn-name
  "The name of function object `f` as a symbol, e.g. clojure.core/string?."
  [f]
  (symbol (string/replace (clojure.lang.Compiler/demunge (.getName (class f))) #"--\d+$" "")))

(defn- readable-pred [p]
  (cond (s/spec? p) (s/form p)
        (fn? p) (fn-name p)
        :else p))

(defn- readable-explain
  "Spec's explain-data with its predicates and spec as forms or names, not
   function objects, so that it prints readably."
  [data]
  (cond-> data
    (contains? data ::s/spec) (update ::s/spec readable-pred)
    (contains? data ::s/problems) (update ::s/problems
                                          (fn [ps] (mapv #(update % :pred readable-pred) ps)))))

(def ^:private pred-words
  "How `describe` reads the predicates the API's specs use."
  {'string? "a string" 'int? "an int" 'integer? "an integer" 'nat-int? "an int >= 0"
   'pos-int? "an int >= 1" 'number? "a number" 'boolean? "a boolean" 'keyword? "a keyword"
   'map? "a map" 'vector? "a vector" 'sequential? "a sequential collection"
   'any? "anything" 'pos? "positive" 'not-empty "not empty" 'ndarray? "an NDArray"})

(defn describe
  "What spec `spec` (a keyword, a predicate or a form) accepts, in words:
   (describe ::vs) => \"an NDArray or a vector of NDArray\". Forms it cannot
   read are printed as they are."
  [spec]
  (let [form (cond (keyword? spec) (s/form spec)
                   (s/spec? spec) (s/form spec)
                   (fn? spec) (fn-name spec)
                   :else spec)
        sym-name (fn [x] (when (symbol? x) (symbol (name x))))]
    (cond
      (and (keyword? form) (not= form spec)) (describe form)
      (symbol? form) (get pred-words (sym-name form) (str "a value satisfying " form))
      (seq? form)
      (let [[op & args] form
            op (sym-name op)]
        (case op
          or (string/join " or " (map describe (take-nth 2 (rest args))))
          and (string/join ", " (map describe args))
          coll-of (let [{:keys [kind min-count]} (apply hash-map (rest args))
                        k (some-> kind sym-name pred-words (string/replace #"^an? " ""))]
                    (str (if (and min-count (pos? min-count)) "a non-empty " "a ")
                         (or k "collection") " of " (string/replace (describe (first args))
                                                                     #"^an? " "")))
          map-of (str "a map of " (describe (first args)) " to " (describe (second args)))
          keys (str "a map with optional keys "
                    (string/join ", " (map #(str ":" (name %)) (mapcat second (partition 2 args)))))
          fn (let [body (last args)]
               (if (and (seq? body) (= 'instance? (sym-name (first body))))
                 (let [c (second body)]
                   (str "a " (if (class? c) (.getSimpleName ^Class c) (name c))))
                 (str "such that " (string/replace (pr-str body) "clojure.core/" ""))))
          (pr-str form)))
      :else (pr-str form))))

(defn- shown
  "`v` printed for a message, cut to 80 characters."
  [v]
  (let [t (binding [*print-length* 8 *print-level* 3] (pr-str v))]
    (if (> (count t) 80) (str (subs t 0 77) "...") t)))

(defn validate!
  "Throws ex-info unless `value` conforms to `spec`. The message is
   `error-msg` (clojure-mxnet's, for example \"Invalid keys\") followed by the
   argument (the spec's name, when `spec` is a keyword), what it accepts (see
   `describe`) and the value given: \"Invalid values: vs must be an NDArray or
   a vector of NDArray, got 1.0\". The ex-data holds the spec's explain-data
   (::s/problems, ::s/spec, ::s/value, printing readably) plus `:type
   :invalid-argument`, `:argument` and `:accepted`. Prints nothing
   (clojure-mxnet printed the explanation: `(s/explain-out (ex-data e))`
   prints it)."
  [spec value error-msg]
  (when-not (s/valid? spec value)
    (let [explained (s/explain-data spec value)
          {:keys [in via pred]} (first (::s/problems explained))
          ;; An option map: name the option at fault, not the map.
          [arg accepted got] (if (and (map? value) (seq in))
                               [(pr-str (first in)) (describe (or (last via) pred))
                                (get value (first in))]
                               [(when (keyword? spec) (name spec)) (describe spec) value])]
      (invalid! (str error-msg ": " (or arg "the argument") " must be " accepted
                     ", got " (shown got))
                (assoc (readable-explain explained) :argument arg :accepted accepted)))))

(defn check-options!
  "Refuses option map `opts` (for example an optimizer's) when it has a key
   not in `accepted` (keywords; a string key counts as its keyword): throws
   ex-info :invalid-argument naming the unknown keys and the accepted ones,
   with `error-msg` first. Returns nil."
  [opts accepted error-msg]
  (when (map? opts)
    (let [ok (set accepted)
          unknown (vec (remove #(ok (if (string? %) (keyword %) %)) (keys opts)))]
      (when (seq unknown)
        (invalid! (str error-msg ": unknown option" (when (next unknown) "s") " "
                       (string/join ", " (map pr-str unknown)) "; accepted: "
                       (string/join ", " (map pr-str (sort ok))))
                  {:unknown-keys unknown :accepted (vec (sort ok))})))))

(defn spec-keys
  "The unqualified keywords an `s/keys` spec names (:req-un and :opt-un)."
  [spec]
  (let [form (s/form spec)]
    (set (for [[kind ks] (partition 2 (rest form))
               :when (#{:req-un :opt-un} kind)
               k ks]
           (keyword (name k))))))

(defn validate-options!
  "`check-options!` against the keys of `spec` (an s/keys spec), then
   `validate!`: an option map with a misspelt key is refused, not ignored."
  [spec opts error-msg]
  (check-options! opts (spec-keys spec) error-msg)
  (validate! spec opts error-msg))

(defn parse-long-setting
  "The whole number that the text `raw` of the environment knob `var-name` holds,
   or `default` when `raw` is nil or blank. Accepts the forms the Python
   engine's `mxkv.base.env` accepts for an int (\"4096\", \"1e6\", \" 7 \"),
   refuses fractions rather than truncate them, and when `minimum` is given
   refuses smaller values; a refused value throws ex-info
   (`:type :invalid-argument`) naming the variable and the value."
  ([var-name raw default] (parse-long-setting var-name raw default nil))
  ([var-name ^String raw default minimum]
   (if (or (nil? raw) (string/blank? raw))
     default
     (let [text (string/trim raw)
           bad (fn [why]
                 (invalid! (str "environment variable " var-name "=" (pr-str raw) " " why)
                           {:name var-name :value raw}))
           v (or (try (Long/parseLong text) (catch NumberFormatException _ nil))
                 (let [d (try (Double/parseDouble text)
                              (catch NumberFormatException _ (bad "is not a valid int")))]
                   (if (and (== d (Math/rint d)) (< (Math/abs d) 9.2E18))
                     (long d)
                     (bad "is not a valid int (not a whole number)"))))]
       (when (and minimum (< (long v) (long minimum)))
         (bad (str "must be at least " minimum)))
       v))))

(defn env-long
  "The environment knob `var-name` read as a whole number (see
   `parse-long-setting`), `default` when it is unset or blank: every numeric
   knob of the Clojure side is read through here, so a bad value always gets
   the same error as on the Python side."
  ([var-name default] (env-long var-name default nil))
  ([var-name default minimum] (parse-long-setting var-name (System/getenv ^String var-name) default minimum)))

(defn keyword->snake-case
  "Transforms a keyword `kw` into a snake-case string.
  Ex:
    (keyword->snake-case :foo-bar) ;\"foo_bar\"
    (keyword->snake-case :foo)     ;\"foo\""
  [kw]
  (if (keyword? kw)
    (string/replace (name kw) "-" "_")
    kw))

(defn convert-map
  "A map with snake-case string keys (for parameters sent to the engine)."
  [param]
  (into {} (map (fn [[k v]] [(keyword->snake-case (if (symbol? k) (name k) k)) v])) param))

(s/def ::non-empty-seq (s/and sequential? not-empty))

(defn to-array-nd
  "Converts any N-D sequential structure to an array
   with the same dimensions."
  [nd-seq]
  (validate! ::non-empty-seq nd-seq "Invalid N-D sequence")
  (if (sequential? (first nd-seq))
    (to-array (mapv to-array-nd nd-seq))
    (to-array nd-seq)))

(defn nd-seq-shape
  "Computes the shape of a n-dimensional sequential structure"
  [nd-seq]
  (validate! ::non-empty-seq nd-seq "Invalid N-D sequence")
  (loop [s nd-seq
         shape [(count s)]]
    (if (sequential? (first s))
      (recur (first s) (conj shape (count (first s))))
      shape)))

(defn ->option
  "clojure-mxnet wrapped optional arguments in a Scala Option; mxkv passes
   them as they are (nil for none), so this returns `v`. Kept so that code
   referring to it (clojure-mxnet's ndarray-api tests) loads."
  [v]
  v)
