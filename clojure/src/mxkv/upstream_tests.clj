(ns mxkv.upstream-tests
  "Runs clojure.test files written for another implementation of the API (a
   copy of clojure-mxnet's own test directory, kept outside this repository)
   against mxkv, and reports what passes, test by test.

   Such files may require namespaces mxkv does not provide (symbol, module
   ...) or call functions it lacks. Rather than failing a whole file, each
   file is loaded form by form: requires of missing namespaces are dropped
   (and listed), helper namespaces found in the same directory (test-util)
   are loaded from there, and every top-level form that does not compile is
   listed with the reason. The tests that did load then run, one by one.

   Usage: clojure -M -m mxkv.upstream-tests DIR [FILE-REGEX...]
   (`mxkv clj -m mxkv.upstream-tests DIR`; tools/upstream-clj-tests.sh).
   Prints one line per file, `FILE: N tests: P passed, F failed, E errors,
   U not loaded`, the name and first message of each test that did not
   pass, and exits 0 when every loaded test passed."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :as t])
  (:import (clojure.lang LineNumberingPushbackReader)
           (java.io File)))

(defn- ns->path [sym]
  (str (-> (name sym) (str/replace "-" "_") (str/replace "." "/")) ".clj"))

(defn- lib-of [spec] (if (sequential? spec) (first spec) spec))

(defn- available?
  "Loads library `sym` if needed (from the classpath, else from `dir`);
   true when it is loaded."
  [dir sym]
  (or (some? (find-ns sym))
      (some? (io/resource (ns->path sym)))
      (let [f (io/file dir (ns->path sym))]
        (when (.isFile f)
          (load-file (.getPath f))
          true))))

(defn- read-forms [^File f]
  (let [r (LineNumberingPushbackReader. (io/reader f))
        eof (Object.)]
    (loop [acc []]
      (let [line (inc (.getLineNumber r))
            form (read {:eof eof :read-cond :allow} r)]
        (if (identical? form eof)
          acc
          (recur (conj acc {:form form :line line})))))))

(defn- trim-ns-form
  "The ns form without requires of libraries that cannot be loaded; returns
   [form missing-libs]."
  [dir [_ ns-sym & clauses]]
  (let [missing (atom [])
        clauses (for [c clauses]
                  (if (and (seq? c) (= :require (first c)))
                    (cons :require (filterv (fn [spec]
                                             (let [lib (lib-of spec)]
                                               (or (available? dir lib)
                                                   (do (swap! missing conj lib) false))))
                                           (rest c)))
                    c))]
    [(list* 'ns ns-sym (doall clauses)) @missing]))

(defn- form-name [form]
  (when (and (seq? form) (symbol? (second form))) (second form)))

(defn- root-message [^Throwable e]
  (loop [e e]
    (if-let [c (.getCause e)]
      (if (instance? clojure.lang.Compiler$CompilerException e) (recur c) (.getMessage e))
      (.getMessage e))))

(defn- load-test-file
  "Evaluates `f`'s forms one by one; returns {:ns sym :missing [...] :not-loaded [...]}."
  [dir ^File f]
  (let [[{ns-form :form} & forms] (read-forms f)
        [ns-form missing] (trim-ns-form dir ns-form)
        ns-sym (second ns-form)]
    (binding [*ns* *ns*]
      (try (eval ns-form)
           (catch Throwable e
             (throw (ex-info (str "cannot load " (.getName f) ": " (root-message e)) {} e))))
      (let [not-loaded (vec (for [{:keys [form line]} forms
                                  :let [err (try (eval form) nil
                                                 (catch Throwable e (root-message e)))]
                                  :when err]
                              {:name (form-name form) :line line :error err
                               :deftest? (and (seq? form) (= 'deftest (first form)))}))]
        {:ns ns-sym :missing missing :not-loaded not-loaded}))))

(defn- run-test-var
  "Runs one test var; returns {:name :pass :fail :error :first-problem}."
  [v]
  (let [counts (atom {:pass 0 :fail 0 :error 0})
        problem (atom nil)]
    (binding [t/report (fn [m]
                         (case (:type m)
                           :pass (swap! counts update :pass inc)
                           (:fail :error)
                           (do (swap! counts update (:type m) inc)
                               (when-not @problem
                                 (reset! problem
                                         (str (name (:type m)) ": "
                                              (some-> (:message m) (str " "))
                                              "expected " (pr-str (:expected m))
                                              ", actual " (let [a (:actual m)]
                                                            (if (instance? Throwable a)
                                                              (str (.getName (class a)) " " (.getMessage ^Throwable a))
                                                              (pr-str a)))))))
                           nil))
              *out* (java.io.StringWriter.)]
      (t/test-vars [v]))
    (merge {:name (:name (meta v)) :line (:line (meta v)) :problem @problem} @counts)))

(defn- needs-unloaded
  "The not-loaded helper a test's error shows it called, if that is why it
   failed (\"Attempting to call unbound fn: #'ns/helper\")."
  [{:keys [problem error fail]} not-loaded]
  (when (and (pos? error) (zero? fail) problem)
    (when-let [[_ helper] (re-find #"Attempting to call unbound fn: #'[^/]+/(\S+)" problem)]
      (some #(when (= helper (str (:name %))) %) not-loaded))))

(defn run-file
  "Loads and runs the test file `f` found under `dir`; returns its report.
   A test that failed only because it called a helper that did not load is
   counted as not loaded."
  [dir ^File f]
  (let [{:keys [ns missing not-loaded]} (load-test-file dir f)
        vars (->> (ns-interns ns) vals (filter (comp :test meta)) (sort-by (comp :line meta)))
        ran (mapv run-test-var vars)
        blocked (keep (fn [r] (when-let [h (needs-unloaded r not-loaded)]
                                {:name (:name r) :line (:line r) :deftest? true
                                 :error (str "calls " (:name h) ", which did not load: " (:error h))}))
                      ran)
        blocked-names (set (map :name blocked))
        results (filterv #(not (blocked-names (:name %))) ran)
        not-loaded (into not-loaded blocked)
        unloaded-tests (filterv :deftest? not-loaded)]
    {:file (.getName f) :ns ns :missing missing :not-loaded not-loaded
     :results results
     :passed (count (filter #(zero? (+ (:fail %) (:error %))) results))
     :failed (count (filter #(and (pos? (:fail %)) (zero? (:error %))) results))
     :errors (count (filter #(pos? (:error %)) results))
     :unloaded (count (distinct (map :name unloaded-tests)))}))

(defn test-files
  "The *_test.clj files under `dir` whose names match any of `patterns`
   (all when none)."
  [dir patterns]
  (->> (file-seq (io/file dir))
       (filter #(str/ends-with? (.getName ^File %) "_test.clj"))
       (filter (fn [^File f] (or (empty? patterns)
                                 (some #(re-find (re-pattern %) (.getName f)) patterns))))
       (sort-by #(.getPath ^File %))))

(defn print-report [{:keys [file missing not-loaded results passed failed errors unloaded]}]
  (println (format "%s: %d tests: %d passed, %d failed, %d errors, %d not loaded"
                   file (+ (count results) unloaded) passed failed errors unloaded))
  (when (seq missing)
    (println "  requires dropped (not provided):" (str/join ", " missing)))
  (doseq [{:keys [name line error deftest?]} not-loaded]
    (println (format "  NOT LOADED %s%s (line %d): %s" (if deftest? "" "form ") (or name "") line error)))
  (doseq [{:keys [name problem fail error]} results
          :when (pos? (+ fail error))]
    (println (format "  %s %s: %s" (if (pos? error) "ERROR" "FAIL") name problem))))

(defn -main [dir & patterns]
  (let [reports (doall (for [f (test-files dir patterns)]
                         (let [r (try (run-file dir f)
                                      (catch clojure.lang.ExceptionInfo e
                                        ;; the ns form itself failed: no test loaded
                                        (let [tests (->> (read-forms f) (map :form)
                                                         (filter #(and (seq? %) (= 'deftest (first %))))
                                                         (map second) distinct count)]
                                          {:file (.getName ^File f) :missing [] :results []
                                           :not-loaded [{:name nil :line 1 :error (ex-message e)}]
                                           :passed 0 :failed 0 :errors 0 :unloaded tests})))]
                           (print-report r)
                           (flush)
                           r)))
        total (fn [k] (reduce + (map k reports)))]
    (println (format "upstream tests: %d files, %d passed, %d failed, %d errors, %d not loaded"
                     (count reports) (total :passed) (total :failed) (total :errors) (total :unloaded)))
    (flush)
    (System/exit (if (zero? (+ (total :failed) (total :errors))) 0 1))))
