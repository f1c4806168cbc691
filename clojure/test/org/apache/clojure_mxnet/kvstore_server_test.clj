(ns org.apache.clojure-mxnet.kvstore-server-test
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.kvstore-server :as kvstore-server]))

(deftest init-validates-and-sets-the-engine-environment
  (is (nil? (kvstore-server/init {"MXKV_TEST_ROLE" "worker"})))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid environment map"
                        (binding [*out* (java.io.StringWriter.)]
                          (kvstore-server/init {:role 1})))))

(deftest start-validates-its-timeout
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"Invalid setting"
                        (binding [*out* (java.io.StringWriter.)]
                          (kvstore-server/start "soon")))))
