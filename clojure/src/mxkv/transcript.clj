(ns mxkv.transcript
  "Runs a Clojure file form by form, printing a REPL transcript: the prompt
   and source of each form, then its printed value. A form followed on its
   line by a `;=> expected` comment is checked: its printed value must equal
   the expected text (whitespace-insensitive). Exits non-zero on any
   mismatch or error.

   Usage: clojure -M -m mxkv.transcript FILE"
  (:require [clojure.string :as str])
  (:import (clojure.lang LineNumberingPushbackReader)
           (java.io StringReader)))

(defn- squash [s] (str/replace (str/trim s) #"\s+" " "))

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
                  (if (and ok (= (squash shown) (squash want)))
                    (println (str ";; ok: matches ;=> " want))
                    (println (str ";; MISMATCH (line " line "): expected " want))))
                (println)
                (flush)
                (recur (inc forms)
                       (if want (inc checked) checked)
                       (cond-> failures
                         (not ok) (conj {:line line :form (str/join "\n" code) :error shown})
                         (and ok want (not= (squash shown) (squash want)))
                         (conj {:line line :form (str/join "\n" code) :expected want :actual shown})))))))))))

(defn -main [& [file]]
  (let [{:keys [forms checked failures]} (run (or file "clojure/tutorial/kvstore.clj"))]
    (println (format ";; %d forms evaluated, %d values checked against ;=>, %d failures"
                     forms checked (count failures)))
    (doseq [f failures] (println ";; FAILED:" (pr-str f)))
    (flush)
    (System/exit (if (empty? failures) 0 1))))
