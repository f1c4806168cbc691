(ns mxkv.transcript
  "Runs a Clojure file form by form, printing a REPL transcript: the prompt
   and source of each form, then its printed value. A form followed on its
   line by a `;=> expected` comment is checked: its printed value must equal
   the expected text (whitespace-insensitive).

   An expectation may hold objects another implementation printed
   unreadably, `#object[org.apache.mxnet.Shape 0x583c865 \"(2,3)\"]`. Then
   the value is compared structurally (maps by key, sequences by element,
   plain data by =), and such an object matches a value whose printed form
   contains its text (here `(2,3)`); when that text is only the class name
   and a hash (`org.apache.mxnet.NDArray@43d85753`), a value of a class with
   the same simple name (NDArray).

   Exits non-zero on any mismatch or error.

   Usage: clojure -M -m mxkv.transcript FILE"
  (:require [clojure.string :as str])
  (:import (clojure.lang LineNumberingPushbackReader)
           (java.io StringReader)))

(defn- squash [s] (str/replace (str/trim s) #"\s+" " "))

(defrecord Unreadable [class-name text])

(defn- read-expected
  "The expected text read as data when it holds #object[...] forms (each an
   Unreadable), else nil: such expectations are matched structurally."
  [text]
  (when (str/includes? text "#object[")
    (try
      (binding [*default-data-reader-fn*
                (fn [tag v]
                  (if (and (= 'object tag) (vector? v) (= 3 (count v)))
                    (->Unreadable (str (first v)) (str (nth v 2)))
                    (throw (ex-info (str "unknown tag #" tag) {}))))
                *read-eval* false]
        (read-string text))
      (catch Exception _ nil))))

(defn- simple-name [class-name] (last (str/split class-name #"\.")))

(defn- matches?
  "True when `value` matches the expected data `want` (see the ns doc)."
  [want value]
  (cond
    (instance? Unreadable want)
    (let [{:keys [class-name text]} want]
      (if (re-matches (re-pattern (str "\\Q" class-name "\\E@[0-9a-f]+")) text)
        (and (some? value) (= (simple-name class-name) (.getSimpleName (class value))))
        (str/includes? (pr-str value) text)))
    (map? want) (and (map? value) (= (set (keys want)) (set (keys value)))
                     (every? (fn [[k v]] (matches? v (get value k))) want))
    (sequential? want) (and (sequential? value) (= (count want) (count value))
                            (every? true? (map matches? want value)))
    :else (= want value)))

(defn- check
  "Whether `value` (printed as `shown`) meets the expectation text `want`."
  [want value shown]
  (if-let [data (read-expected want)]
    (matches? data value)
    (= (squash shown) (squash want))))

(defn- trailing-comment
  "Reads the rest of the current line when it holds only a comment; returns
   the comment's text (nil otherwise, consuming only blanks)."
  [^LineNumberingPushbackReader r]
  (loop []
    (let [c (.read r)]
      (cond
        (or (= c (int \space)) (= c (int \tab))) (recur)
        (= c (int \;)) (str ";" (.readLine r))
        (= c -1) nil
        :else (do (.unread r c) nil)))))

(defn- expected [comment]
  (when comment
    (when-let [[_ e] (re-find #"^;+\s*=>\s*(.*)$" comment)]
      e)))

(defn run
  "Runs `file`; returns {:forms n :checked n :failures [...]}."
  [file]
  (let [r (LineNumberingPushbackReader. (StringReader. (slurp file)))
        eof (Object.)]
    (binding [*ns* (create-ns 'user)]
      (refer-clojure)
      (loop [forms 0 checked 0 failures []]
        (let [[form src] (read+string {:eof eof :read-cond :allow} r)]
          (if (identical? form eof)
            {:forms forms :checked checked :failures failures}
            (let [line (.getLineNumber r)
                  comment (trailing-comment r)
                  want (expected comment)
                  prompt (str (ns-name *ns*) "=> ")
                  lines (str/split-lines (str/trim src))
                  [notes code] (split-with #(or (str/blank? %) (str/starts-with? (str/triml %) ";")) lines)]
              (doseq [n notes :when (not (str/blank? n))] (println n))
              (println (str prompt (str/join "\n" code)))
              (let [[ok value] (try [true (eval form)]
                                    (catch Throwable t [false t]))
                    shown (if ok (pr-str value) (str "Execution error: " (.getMessage ^Throwable value)))]
                (println shown)
                (when want
                  (if (and ok (check want value shown))
                    (println (str ";; ok: matches ;=> " want))
                    (println (str ";; MISMATCH (line " line "): expected " want))))
                (println)
                (flush)
                (recur (inc forms)
                       (if want (inc checked) checked)
                       (cond-> failures
                         (not ok) (conj {:line line :form (str/join "\n" code) :error shown})
                         (and ok want (not (check want value shown)))
                         (conj {:line line :form (str/join "\n" code) :expected want :actual shown})))))))))))

(defn -main [& [file]]
  (let [{:keys [forms checked failures]} (run (or file "clojure/tutorial/kvstore.clj"))]
    (println (format ";; %d forms evaluated, %d values checked against ;=>, %d failures"
                     forms checked (count failures)))
    (doseq [f failures] (println ";; FAILED:" (pr-str f)))
    (flush)
    (System/exit (if (empty? failures) 0 1))))
