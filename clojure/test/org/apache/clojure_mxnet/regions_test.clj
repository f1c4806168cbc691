(ns org.apache.clojure-mxnet.regions-test
  "Large ->vec results own a region of the engine's region file instead of a
   float[]: they are values (equal, hashed and printed like a vector of
   floats, unaffected by later changes to the array), their regions are
   freed by the GC and reused, and they outlive their engine. Also the
   JVM-side region allocator on its own."
  (:require [clojure.test :refer :all]
            [org.apache.clojure-mxnet.bridge :as bridge]
            [org.apache.clojure-mxnet.ndarray :as ndarray])
  (:import (java.io ByteArrayInputStream ByteArrayOutputStream File ObjectInputStream
                    ObjectOutputStream RandomAccessFile)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute PosixFilePermissions)
           (org.apache.clojure_mxnet.bridge FloatVector Py4JTransport Regions)))

(def ^:private MiB (* 1024 1024))

(def ^:private region-floats
  "The smallest array whose ->vec owns a region (1 MiB of float32)."
  (quot MiB 4))

(defn- mapped? [v] (and (instance? FloatVector v) (.isMapped ^FloatVector v)))

(defn- wait-until [timeout-ms pred]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (loop []
      (or (pred)
          (when (< (System/currentTimeMillis) deadline)
            (System/gc)
            (Thread/sleep 20)
            (recur))))))

(defn- with-engine
  "Runs (f conn) with a fresh engine as the default connection, then closes
   it; `regions` replaces its region allocator."
  ([f] (with-engine nil f))
  ([regions f]
   (let [old (bridge/connection)
         conn (cond-> (bridge/start) regions (assoc :regions regions))]
     (try
       (bridge/use-connection! conn)
       (f conn)
       (finally
         (bridge/use-connection! old)
         (bridge/close! conn))))))

;;; ------------------------------------------------------------------ values

(deftest large-vectors-own-a-region-small-ones-a-float-array
  (is (mapped? (ndarray/->vec (ndarray/zeros [region-floats]))))
  (is (mapped? (ndarray/->float-vec (ndarray/zeros [2 region-floats]))))
  (let [v (ndarray/->vec (ndarray/zeros [(dec region-floats)]))]
    (is (instance? FloatVector v))
    (is (not (mapped? v)))))

(deftest a-region-backed-vector-is-the-array-as-a-vector-of-floats
  (let [n region-floats
        a (ndarray/arange 0 n)
        v (ndarray/->vec a)
        plain (vec (map float (range n)))
        small-plain (vec (map float (range 5)))]
    (is (mapped? v))
    (is (= n (count v)))
    (is (= (float 0) (v 0)))
    (is (= (float (dec n)) (v (dec n)) (nth v (dec n)) (peek v)))
    (is (= :none (nth v n :none)))
    (is (thrown? IndexOutOfBoundsException (v n)))
    (is (thrown? IndexOutOfBoundsException (v -1)))
    (testing "= both ways, equals, hash and hashCode like a vector of floats"
      (is (= plain v))
      (is (= v plain))
      (is (.equals ^Object v plain))
      (is (.equals ^Object plain v))
      (is (= (hash plain) (hash v)))
      (is (= (.hashCode ^Object plain) (.hashCode ^Object v)))
      (is (= v (ndarray/->vec a)) "two region-backed vectors of the same array")
      (is (not= v (ndarray/->vec (ndarray/+ a 1)))))
    (testing "printing"
      (is (= (pr-str plain) (pr-str v)))
      (is (= (str plain) (str v)))
      (is (= "[0.0 1.0 2.0 3.0 4.0]" (pr-str (subvec v 0 5)) (pr-str small-plain))))
    (testing "seq, reduce, into, transducers, rseq, subvec"
      (is (= (take 3 plain) (take 3 v)))
      (is (= (reduce + plain) (reduce + v)))
      (is (= (reduce + 0.0 plain) (reduce + 0.0 v)))
      (is (= 3.0 (reduce (fn [_ x] (if (>= x 3.0) (reduced x) x)) v)))
      (is (= (transduce (map double) + plain) (transduce (map double) + v)))
      (is (= (last plain) (first (rseq v))))
      (is (= (subvec plain 10 20) (subvec v 10 20)))
      (is (= (vec (.toFloatArray ^FloatVector v)) plain)))
    (testing "conj, assoc, pop give ordinary vectors; metadata shares the region"
      (is (= (conj plain 1) (conj v 1)))
      (is (= (assoc plain 0 7.0) (assoc v 0 7.0)))
      (is (= (pop plain) (pop v)))
      (let [m (with-meta v {:k 1})]
        (is (mapped? m))
        (is (= {:k 1} (meta m)))
        (is (= plain m))))))

(deftest other-dtypes-are-converted-to-float32
  (let [n region-floats
        v64 (ndarray/->vec (ndarray/arange 0 n {:dtype :float64}))
        v32i (ndarray/->vec (ndarray/full [n] 7 {:dtype :int32}))]
    (is (mapped? v64))
    (is (= (float 12345) (v64 12345)))
    (is (mapped? v32i))
    (is (every? #(= (float 7) %) (take 10 v32i)))
    (is (= (float 7) (peek v32i)))))

(deftest the-vector-keeps-its-values-when-the-array-changes-or-goes
  (let [n (* 2 region-floats)
        a (ndarray/ones [n])
        v (ndarray/->vec a)]
    (ndarray/+= a 1)
    (is (= (float 2) (peek (ndarray/->vec a))) "the array changed")
    (is (every? #(= (float 1) %) v) "the vector did not")
    (ndarray/dispose a)
    (is (thrown? clojure.lang.ExceptionInfo (ndarray/->vec a)))
    (is (= n (count v)))
    (is (= (float 1) (v 0) (v (dec n))))
    (is (= (float n) (reduce + v)))))

(deftest ->vec-after-->vec-of-the-same-array-each-keep-their-values
  (let [a (ndarray/zeros [region-floats])
        vs (vec (for [i (range 4)]
                  (let [v (ndarray/->vec a)] (ndarray/+= a 1) v)))]
    (is (= [0.0 1.0 2.0 3.0] (map peek vs)))))

(deftest concurrent-->vec-calls-get-their-own-arrays
  (let [arrays (mapv #(ndarray/full [region-floats] %) (range 6))
        vs (->> arrays (mapv #(future (ndarray/->vec %))) (mapv deref))]
    (is (every? mapped? vs))
    (is (= (map float (range 6)) (map peek vs)))
    (is (= (map float (range 6)) (map first vs)))))

(deftest a-vector-serialises-as-a-heap-copy
  (let [v (ndarray/->vec (ndarray/arange 0 region-floats))
        bytes (let [bo (ByteArrayOutputStream.)]
                (with-open [o (ObjectOutputStream. bo)] (.writeObject o v))
                (.toByteArray bo))
        back (with-open [i (ObjectInputStream. (ByteArrayInputStream. bytes))] (.readObject i))]
    (is (instance? FloatVector back))
    (is (not (mapped? back)))
    (is (= v back))))

;;; ------------------------------------------------------------------ lifetime

(deftest a-failed-read-returns-its-region
  (let [conn (bridge/connection)
        before (:live (bridge/region-stats conn))
        e (is (thrown? clojure.lang.ExceptionInfo (bridge/read-vec conn 987654321 region-floats)))]
    (is (re-find #"unknown handle" (ex-message e)))
    (is (= before (:live (bridge/region-stats conn))))))

(deftest dropped-vectors-free-their-regions-and-the-file-stays-bounded
  (with-engine
    (Regions. (* 128 MiB) Regions/MAX_CAP)
    (fn [conn]
      (let [n (* 4 MiB) ; 16 MB
            a (ndarray/ones [n])
            gc-at (:gc-at (bridge/region-stats conn))]
        (is (= (* 128 MiB) gc-at))
        (dotimes [_ 200]
          (when-not (= n (count (ndarray/->vec a)))
            (throw (ex-info "short vector" {}))))
        (let [{:keys [allocations reused extent collections]} (bridge/region-stats conn)
              resident (:regions_resident (bridge/stats conn))]
          (is (= 200 allocations))
          (is (>= reused 150) "regions are reused")
          (is (pos? collections) "a GC ran before the region space grew past gc-at")
          (is (<= extent (+ gc-at (* 16 MiB))) "the region space stays below gc-at")
          (is (<= resident (+ gc-at (* 16 MiB))) "so does the memory the file uses"))
        (is (wait-until 60000 #(zero? (:live (bridge/region-stats conn))))
            "after a GC every region is free")))))

(deftest vectors-outlive-their-engine
  (with-engine
    (fn [conn]
      (let [n (* 2 region-floats)
            v (ndarray/->vec (ndarray/arange 0 n))]
        (if (= :py4j (bridge/kind conn))
          (.waitFor (.destroyForcibly (.process ^Py4JTransport (:transport conn))))
          ((:close conn))) ; in this process (JPype) an engine ends by closing
        (is (not (bridge/alive? conn)))
        (is (mapped? v))
        (is (= (float (dec n)) (peek v)))
        (is (= (vec (map float (range n))) v) "readable after the engine died")
        (let [live (:live (bridge/region-stats conn))
              e (is (thrown? clojure.lang.ExceptionInfo (bridge/read-vec conn 1 n)))]
          (is (= :engine-dead (:type (ex-data e))))
          (is (= live (:live (bridge/region-stats conn))) "a failed call to a dead engine keeps no region")))
      (is (wait-until 60000 #(zero? (:live (bridge/region-stats conn))))
          "a dead engine's vector frees its region when dropped, without a call"))))

;;; ------------------------------------------------------------------ the allocator

(deftest the-allocator-aligns-splits-coalesces-and-reuses
  (let [p Regions/PAGE
        r (Regions. (* 64 p) (* 64 p))
        stats #(into {} (map (fn [[k v]] [(keyword k) v])) (.stats r))
        a (.allocate r 1)
        b (.allocate r (inc p))
        c (.allocate r p)]
    (is (= [0 p (* 3 p)] [a b c]) "page-aligned, bump allocation")
    (is (= (* 4 p) (:live (stats))))
    (.free r b (inc p))
    (is (= 1 (:free-blocks (stats))))
    (is (= p (.allocate r 10)) "first fit reuses the hole")
    (is (= (* 2 p) (.allocate r 10)) "and its rest")
    (.free r p 10)
    (.free r (* 2 p) 10)
    (is (= 1 (:free-blocks (stats))) "neighbours coalesce")
    (.free r c p)
    (is (= p (:top (stats))) "a free block at the top lowers the top")
    (is (zero? (:free-blocks (stats))))
    (is (thrown? IllegalArgumentException (.free r c p)) "double free above the top")
    (is (thrown? IllegalStateException (do (.allocate r (* 2 p)) (.free r 0 1) (.free r 0 1)))
        "double free below the top")
    (is (= -1 (.allocate r (* 65 p))) "larger than the cap: the caller copies instead")
    (is (thrown? IllegalArgumentException (.allocate r 0)))))

(defn- temp-region-file
  "A file of `bytes` bytes that only this user may read or write, as the
   engine makes its region file (the JVM refuses to map anything else)."
  ^File [bytes]
  (let [f (.toFile (Files/createTempFile
                    "mxkv-regions-test" ".bin"
                    (into-array FileAttribute [(PosixFilePermissions/asFileAttribute
                                                (PosixFilePermissions/fromString "rw-------"))])))]
    (.deleteOnExit f)
    (with-open [raf (RandomAccessFile. f "rw")] (.setLength raf bytes))
    f))

(deftest the-allocator-collects-dropped-vectors-before-it-grows
  (let [p Regions/PAGE
        region (* 16 p)
        r (Regions. (* 4 region) (* 8 region))
        f (temp-region-file (* 8 region))
        stats #(into {} (map (fn [[k v]] [(keyword k) v])) (.stats r))
        take-vec (fn [] (let [off (.allocate r region)]
                          (when-not (neg? off)
                            (.vector r (.getPath f) (.length f) off (int (quot region 4))))))]
    (testing "dropped vectors: a GC before growing past gc-at, then reuse"
      (is (= 40 (count (filter true? (repeatedly 40 #(mapped? (take-vec)))))))
      (let [s (stats)]
        (is (<= (:extent s) (* 4 region)))
        (is (pos? (:collections s)))
        (is (>= (:reused s) 30))))
    (testing "held vectors: the space grows to the cap, then allocation falls back"
      (let [held (doall (repeatedly 8 take-vec))]
        (is (every? mapped? held))
        (is (nil? (take-vec)) "full: -1, the caller copies")
        (is (= (* 8 region) (:live (stats))))
        (is (= (* 8 region) (:gc-at (stats))) "gc-at grew, up to the cap")
        (is (= 8 (count held)))))))
