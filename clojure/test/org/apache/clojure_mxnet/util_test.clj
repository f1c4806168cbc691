(ns org.apache.clojure-mxnet.util-test
  "Numeric environment knobs: every one is read through util/env-long, which
   accepts what the Python engine's mxkv.base.env accepts for an int and
   refuses the rest with an error naming the variable and the value."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.util :as util])
  (:import (clojure.lang ExceptionInfo)))

(defn- refusal
  "The ex-info that parsing `raw` as MXKV_X throws, or nil."
  [raw minimum]
  (try (util/parse-long-setting "MXKV_X" raw 7 minimum) nil
       (catch ExceptionInfo e e)))

(deftest unset-and-blank-give-the-default
  (is (= 7 (util/parse-long-setting "MXKV_X" nil 7)))
  (is (= 7 (util/parse-long-setting "MXKV_X" "" 7)))
  (is (= 7 (util/parse-long-setting "MXKV_X" "   " 7)))
  (is (nil? (util/parse-long-setting "MXKV_X" nil nil))))

(deftest whole-numbers-in-the-forms-python-accepts
  (is (= 4096 (util/parse-long-setting "MXKV_X" "4096" 7)))
  (is (= 5 (util/parse-long-setting "MXKV_X" " 5 " 7)))
  (is (= 1000000 (util/parse-long-setting "MXKV_X" "1e6" 7)))
  (is (= 3 (util/parse-long-setting "MXKV_X" "3.0" 7)))
  (is (= -2 (util/parse-long-setting "MXKV_X" "-2" 7)))
  (testing "a long beyond a double's exact range is kept exactly"
    (is (= 9007199254740993 (util/parse-long-setting "MXKV_X" "9007199254740993" 7)))))

(deftest bad-values-name-the-variable-and-the-value
  (doseq [[raw why] [["abc" "is not a valid int"]
                     ["1.5" "not a whole number"]
                     ["NaN" "not a whole number"]
                     ["Infinity" "not a whole number"]
                     ["1e30" "not a whole number"]
                     ["12 MB" "is not a valid int"]]]
    (let [e (refusal raw nil)]
      (is (some? e) (str raw " was accepted"))
      (when e
        (is (= :invalid-argument (:type (ex-data e))))
        (is (= "MXKV_X" (:name (ex-data e))))
        (is (= raw (:value (ex-data e))))
        (is (.contains (.getMessage e) (str "environment variable MXKV_X=" (pr-str raw))))
        (is (.contains (.getMessage e) why) (.getMessage e))))))

(deftest minimum-bounds-from-below
  (is (= 0 (util/parse-long-setting "MXKV_X" "0" 7 0)))
  (let [e (refusal "-1" 0)]
    (is (some? e))
    (is (= "environment variable MXKV_X=\"-1\" must be at least 0" (some-> e .getMessage)))))

(deftest env-long-reads-the-process-environment
  (testing "an unset variable gives the default"
    (is (= 11 (util/env-long "MXKV_SURELY_UNSET_KNOB_FOR_UTIL_TEST" 11))))
  (testing "a set variable is parsed (PATH is set and is not a number)"
    (is (thrown-with-msg? ExceptionInfo #"environment variable PATH=.* is not a valid int"
                          (util/env-long "PATH" 1)))))
