;; Data-parallel training of a small MLP (64 -> 32 relu -> 10 softmax) on
;; the digits images, written against clojure-mxnet's API:
;;   weights initialised with org.apache.clojure-mxnet.random,
;;   gradients computed with the ndarray API (by hand: forward and backward),
;;   updates by the store's optimizer (SGD with momentum, run by the store).
;;
;;   mxkv launch -n 2 -s 1 -- mxkv clj examples/digits/train.clj dist_sync OUT
;;   mxkv clj examples/digits/train.clj local OUT
;;
;; Each global batch of 200 images is split into 2 parts of 100. With
;; dist_sync, worker r computes the gradient of part r and the servers sum
;; the two pushes before the update; in one process (local) the same two
;; parts are pushed together, one value per part, and the store sums them
;; the same way. So both runs apply the same updates and end with the same
;; loss. Writes OUT/losses-clj-<mode>-<rank>.txt (step and this process's share
;; of the batch loss) and, from rank 0, OUT/result-clj-<mode>.edn.

(require '[clojure.java.io :as io]
         '[clojure.string :as str]
         '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as nd]
         '[org.apache.clojure-mxnet.ndarray-api :as nd-api]
         '[org.apache.clojure-mxnet.optimizer :as optimizer]
         '[org.apache.clojure-mxnet.random :as random]
         '[org.apache.clojure-mxnet.resource-scope :as resource-scope])

(def config {:hidden 32 :batch 200 :parts 2 :epochs 20 :learning-rate 0.1 :momentum 0.9
             :seed 42})

(def here (.getParentFile (.getAbsoluteFile (io/file *file*))))

(defn read-digits
  "[[label pixel0 ... pixel63] ...] from digits.csv.gz (see export_digits.py)."
  []
  (with-open [r (io/reader (java.util.zip.GZIPInputStream.
                            (io/input-stream (io/file here "digits.csv.gz"))))]
    (mapv (fn [line] (mapv #(Integer/parseInt %) (str/split line #","))) (line-seq r))))

(defn ->arrays
  "Images (pixels / 16, shape [n 64]) and labels (shape [n]) of `rows`."
  [rows]
  [(nd/array (vec (mapcat #(map (fn [p] (/ p 16.0)) (rest %)) rows)) [(count rows) 64])
   (nd/array (mapv first rows) [(count rows)])])

(def param-keys ["w1" "b1" "w2" "b2"])

(defn forward
  "Hidden pre-activations, hidden activations and logits of images `x`."
  [{:strs [w1 b1 w2 b2]} x]
  (let [z1 (nd-api/broadcast-add (nd/dot x w1) b1)
        h (nd-api/relu {:data z1})]
    [z1 h (nd-api/broadcast-add (nd/dot h w2) b2)]))

(defn gradients
  "The gradients of this part's share of the batch's mean cross-entropy
   (`n` images in the whole batch), and that share of the loss."
  [params x y n]
  (let [[z1 h logits] (forward params x)
        onehot (nd/one-hot y 10)
        dlogits (nd/div (nd/- (nd/softmax logits) onehot) n)
        dh (nd/* (nd/dot dlogits (get params "w2") false true) (nd/> z1 0))
        loss (nd/div (nd/sum (nd/* onehot (nd/log-softmax logits))) (- n))]
    [{"w1" (nd/dot x dh true false) "b1" (nd/sum dh 0 true)
      "w2" (nd/dot h dlogits true false) "b2" (nd/sum dlogits 0 true)}
     (double (nd/to-scalar loss))]))

(defn evaluate
  "Mean cross-entropy and accuracy of `params` on images `x`, labels `y`."
  [params x y]
  (resource-scope/using
   (let [[_ _ logits] (forward params x)
         n (first (nd/shape-vec y))
         loss (nd/to-scalar (nd/div (nd/sum (nd/* (nd/one-hot y 10) (nd/log-softmax logits)))
                                    (- n)))
         hits (nd/to-scalar (nd/sum (nd/equal (nd/argmax logits 1) y)))]
     [(double loss) (/ (double hits) n)])))

(defn -main [mode out-dir]
  (let [{:keys [hidden batch parts epochs learning-rate momentum seed]} config
        kv (kvstore/create mode)
        rank (kvstore/rank kv)
        workers (kvstore/num-workers kv)
        _ (when-not (or (= workers parts) (= workers 1))
            (throw (ex-info (str "run with 1 or " parts " workers, not " workers) {})))
        ;; this process computes these parts of every batch
        mine (if (= workers 1) (range parts) [rank])
        rows (read-digits)
        [x-train y-train] (->arrays (keep-indexed #(when (not= 4 (mod %1 5)) %2) rows))
        [x-test y-test] (->arrays (keep-indexed #(when (= 4 (mod %1 5)) %2) rows))
        _ (random/seed seed)
        init {"w1" (random/normal 0 0.1 [64 hidden]) "b1" (nd/zeros [1 hidden])
              "w2" (random/normal 0 0.1 [hidden 10]) "b2" (nd/zeros [1 10])}
        params (into {} (map (fn [k] [k (nd/zeros (nd/shape-vec (init k)))])) param-keys)
        steps-per-epoch (quot (first (nd/shape-vec y-train)) batch)
        part (quot batch parts)
        losses (io/file out-dir (str "losses-clj-" mode "-" rank ".txt"))
        started (System/nanoTime)]
    (kvstore/init kv param-keys (mapv init param-keys))
    (kvstore/set-optimizer kv (optimizer/sgd {:learning-rate learning-rate
                                              :momentum momentum :wd 0.0}))
    (kvstore/pull kv param-keys (mapv params param-keys))
    (with-open [w (io/writer losses)]
      (dotimes [step (* epochs steps-per-epoch)]
        (resource-scope/using
         (let [start (* batch (mod step steps-per-epoch))
               results (for [p mine
                             :let [from (+ start (* p part))]]
                         (gradients params (nd/slice x-train from (+ from part))
                                    (nd/slice y-train from (+ from part)) batch))
               ks (vec (for [k param-keys _ results] k))
               gs (vec (for [k param-keys [g _] results] (g k)))]
           (kvstore/push kv ks gs)
           (kvstore/pull kv param-keys (mapv params param-keys))
           (.write w (str step " " (reduce + (map second results)) "\n"))))))
    (when (zero? rank)
      (let [[train-loss _] (evaluate params x-train y-train)
            [test-loss accuracy] (evaluate params x-test y-test)
            result {:mode mode :workers workers :steps (* epochs steps-per-epoch)
                    :final-train-loss train-loss :held-out-loss test-loss
                    :held-out-accuracy accuracy
                    :seconds (/ (- (System/nanoTime) started) 1e9)}]
        (spit (io/file out-dir (str "result-clj-" mode ".edn")) (pr-str result))
        (println "digits" (pr-str result))))
    (kvstore/dispose kv)))

(apply -main *command-line-args*)
