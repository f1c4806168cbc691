;; The data side of org.apache.clojure-mxnet.ndarray (loaded by ndarray.clj
;; into that namespace): contents out of an array and into it (copies), new
;; arrays made from arrays (slices, reshapes, copies, casts), and files.

(in-ns 'org.apache.clojure-mxnet.ndarray)

;;; ------------------------------------------------------------------ contents out (copies)

(defn to-array
  "COPIES the contents into a new float[] (converted to float32)."
  ^floats [ndarray]
  (bridge/read-floats (conn-of ndarray) (hid ndarray) (element-count ndarray)))

(defn to-scalar
  "The one element of a shape-[1] array, as a float. Throws ex-info
   \"The current array is not a scalar\" for any other shape."
  [ndarray]
  (let [id (hid ndarray)]
    (when-not (= [1] (.-shape ^NDArray ndarray))
      (util/invalid! "The current array is not a scalar" {:shape (.-shape ^NDArray ndarray)}))
    (aget ^floats (bridge/read-floats (conn-of ndarray) id 1) 0)))

(defn to-float64-array
  "COPIES the contents into a new double[] (converted to float64)."
  ^doubles [ndarray]
  (bridge/read-array (conn-of ndarray) (hid ndarray) (element-count ndarray) :double))

(defn to-float64-scalar
  "The one element of a shape-[1] array, as a double. Throws ex-info
   \"The current array is not a scalar\" for any other shape."
  [ndarray]
  (when-not (= [1] (shape-vec ndarray))
    (util/invalid! "The current array is not a scalar" {:shape (shape-vec ndarray)}))
  (aget ^doubles (to-float64-array ndarray) 0))

(defn ->vec
  "The contents as a flat vector of floats, in row-major order: a COPY (a
   large array's lives in shared memory, owned by the vector); no element is
   boxed until it is read."
  [ndarray]
  (util/validate! ::ndarray ndarray "Invalid input array")
  (bridge/read-vec (conn-of ndarray) (hid ndarray) (element-count ndarray)))

(defn ->float-vec
  "The contents as a vector of floats (a copy); same as `->vec`."
  [ndarray]
  (->vec ndarray))

(defn ->double-vec
  "The contents as a vector of doubles (a copy)."
  [ndarray]
  (vec (bridge/read-array (conn-of ndarray) (hid ndarray) (element-count ndarray) :double)))

(defn ->int-vec
  "The contents as a vector of ints (a copy): floats are truncated toward
   zero, saturated at the int range, NaN gives 0 (as the JVM converts)."
  [ndarray]
  (vec (bridge/read-array (conn-of ndarray) (hid ndarray) (element-count ndarray) :int)))

(defn ->raw
  "The contents' bytes in the array's own dtype, little-endian (a copy)."
  ^bytes [ndarray]
  (bridge/read-array (conn-of ndarray) (hid ndarray) (element-count ndarray) :raw))

(defn ->byte-vec
  "The contents as a vector of bytes (a copy): each element's low 8 bits
   after conversion to int, so uint8 200 is the byte -56, as clojure-mxnet."
  [ndarray]
  (mapv unchecked-byte (->int-vec ndarray)))

(s/def ::shape-vec-match-vec
  (fn [[v vec-shape]] (= (count v) (reduce clojure.core/* 1 vec-shape))))

(defn- vec->nd-vec
  "Nests the flat vector `v` into vectors following `shape-vec`:
   (vec->nd-vec [1 2 3 4 5 6] [3 2]) is [[1 2] [3 4] [5 6]]."
  [v [s1 & ss :as shape-vec]]
  (util/validate! ::sequential v "Invalid input vector `v`")
  (util/validate! ::sequential shape-vec "Invalid input vector `shape-vec`")
  (util/validate! ::shape-vec-match-vec
                  [v shape-vec]
                  "Mismatch between vector `v` and vector `shape-vec`")
  (if-not (seq ss)
    (vec v)
    (->> v
         (partition (clojure.core/quot (count v) s1))
         vec
         (mapv #(vec->nd-vec % ss)))))

(defn ->nd-vec
  "The contents as nested vectors of floats following the array's shape (a
   COPY): an array of shape [3 1 2] holding 1..6 gives
   [[[1.0 2.0]] [[3.0 4.0]] [[5.0 6.0]]]."
  [ndarray]
  (util/validate! ::ndarray ndarray "Invalid input array")
  (vec->nd-vec (->vec ndarray) (shape-vec ndarray)))

(defn serialize
  "The array (dense or row_sparse) as bytes in MXNet's own layout (what
   MXNet's MXNDArraySaveRawBytes writes): dtype, shape, context and data.
   A copy; `deserialize` reads it back."
  ^bytes [ndarray]
  (let [^String text (bridge/call (conn-of ndarray) "nd.serialize" [(hid ndarray)])]
    (.decode (Base64/getDecoder) text)))

(defn deserialize
  "A new NDArray from the bytes `serialize` (or MXNet) wrote, on the context
   it was saved from."
  [byte-array]
  (when-not (bytes? byte-array)
    (util/invalid! "deserialize takes a byte array (from serialize)" {:value byte-array}))
  (let [conn (bridge/connection)]
    (wrap conn (bridge/call conn "nd.deserialize"
                            [(.encodeToString (Base64/getEncoder) ^bytes byte-array)]))))

;;; ------------------------------------------------------------------ contents in (copies)

(defn set
  "Writes into `ndarray` and returns it: a number fills every element; an
   NDArray's contents are copied in (same shape); a vector of numbers (or a
   float array) of exactly its size is copied in, in row-major order."
  [ndarray ndarray-or-num-or-vec]
  (let [id (hid ndarray)
        conn (conn-of ndarray)
        v ndarray-or-num-or-vec]
    (cond
      (number? v) (bridge/call conn "nd.set_value" [id v])
      (ndarray? v) (bridge/call conn "nd.copyto" [(hid v) id])
      :else (let [data (float-data v "the values")
                  n (element-count ndarray)]
              (when-not (== (alength data) n)
                (util/invalid! (str "set: " (alength data) " values for an array of " n
                                    " elements (shape " (.-shape ^NDArray ndarray)
                                    "); give exactly " n ", or a number to fill it")
                               {:shape (.-shape ^NDArray ndarray) :count (alength data)}))
              (bridge/write-floats conn data "nd.set_from_arena" [id "float32" (alength data)])))
    ndarray))

;;; ------------------------------------------------------------------ new arrays from arrays

(defn- unary [op ndarray & args]
  (let [id (hid ndarray)
        conn (conn-of ndarray)]
    (wrap conn (bridge/call conn op (into [id] args)))))

(defn slice
  "A view of rows [i, i+1), or [start, stop), along the first axis: it
   shares memory with `ndarray`, so writes to one show in the other."
  ([ndarray i]
   (slice ndarray i (inc (long i))))
  ([ndarray start stop]
   (unary "nd.slice" ndarray (long start) (long stop))))

(defn at
  "Row `num` of the first axis, sharing memory with `ndarray`: shape [2 3]
   gives shape [3] (a 1-d array gives shape [1])."
  [ndarray num]
  (unary "nd.at" ndarray (long num)))

(s/def ::reshape-dims (s/coll-of int? :kind sequential?))

(defn reshape
  "A reshaped NDArray (sharing memory with `ndarray`) with the given shape:
   a vector of dims or a Shape; one dim may be -1 (inferred)."
  [ndarray shape-vec-or-shape]
  (unary "nd.reshape" ndarray
         (if (instance? org.apache.clojure_mxnet.shape.Shape shape-vec-or-shape)
           (mx-shape/->vec shape-vec-or-shape)
           (do (util/validate! ::reshape-dims shape-vec-or-shape "Invalid shape")
               (vec shape-vec-or-shape)))))

(defn copy
  "A copy of the array, in the same context."
  [ndarray]
  (unary "nd.copy" ndarray))

(defn copy-to
  "Copies the contents of `source-ndarray` into `target` and returns the
   result: an NDArray target of the same shape is written into and
   returned; a Context target gives a new array there (always a copy)."
  [source-ndarray target]
  (if (instance? Context target)
    (apply unary "nd.copyto_ctx" source-ndarray (ctx-args target))
    (let [src (hid source-ndarray)]
      (check-ndarray target "the target (an NDArray or a Context)")
      (bridge/call (conn-of source-ndarray) "nd.copyto" [src (hid target)])
      target)))

(defn as-in-context
  "`ndarray` itself when it is already on `ctx` (a Context), else a copy of
   it there."
  [ndarray ctx]
  (util/validate! ::ctx ctx "Invalid context")
  (if (= ctx (context ndarray))
    ndarray
    (apply unary "nd.as_in_context" ndarray (ctx-args ctx))))

(defn as-type
  "A COPY of the array converted to `dtype` (a DType, keyword or string)."
  [ndarray dtype]
  (unary "nd.astype" ndarray (dtype-name dtype)))

(defn tostype
  "A copy of the array with storage type `stype` (\"default\" or \"row_sparse\")."
  [ndarray stype]
  (unary "nd.tostype" ndarray (name stype)))

(defn to-sparse
  "A copy of the array in storage type `stype` (MXNet's Scala toSparse):
   \"row_sparse\" by default; see `tostype`."
  ([ndarray] (to-sparse ndarray "row_sparse"))
  ([ndarray stype] (tostype ndarray stype)))

(defn concatenate
  "Joins arrays along an axis: 0 without options (as clojure-mxnet), else
   opts {:axis 1 (the default with options), :always-copy true}."
  ([ndarrays {:keys [axis always-copy] :or {axis 1 always-copy true}}]
   (util/validate! (s/coll-of ::ndarray :kind sequential? :min-count 1) ndarrays "Invalid ndarrays")
   (if (and (not always-copy) (= 1 (count ndarrays)))
     (first ndarrays)
     (let [conn (conn-of (first ndarrays))]
       (wrap conn (bridge/call conn "nd.concat" [(mapv hid ndarrays) (long axis)])))))
  ([ndarrays]
   (concatenate ndarrays {:axis 0})))

;;; ------------------------------------------------------------------ files

(defn save
  "Writes arrays to file `fname` (a local path): a map of names to arrays,
   or a vector of arrays. The format is in docs/ndarray.md. Returns nil."
  [fname map-of-name-to-ndarray]
  (let [m map-of-name-to-ndarray
        names (when (map? m) (mapv name (keys m)))
        arrays (if (map? m) (vals m) m)
        ids (mapv hid arrays)
        conn (if (seq arrays) (conn-of (first arrays)) (bridge/connection))]
    (bridge/call conn "nd.save" [fname names ids])
    nil))

(defn- load* [filename]
  (let [conn (bridge/connection)
        {:keys [names arrays]} (bridge/call conn "nd.load" [filename])]
    [names (mapv #(wrap conn %) arrays)]))

(defn load
  "The arrays in file `filename`, as a map of names to new arrays; arrays
   saved from a vector get the names \"0\", \"1\", ..."
  [filename]
  (let [[names ndarrays] (load* filename)]
    (into {} (map (fn [n a] [(str n) a]) (or names (map str (range))) ndarrays))))

(defn load2-map
  "The arrays in file `filename` as a map of names to new arrays (the
   Scala NDArray.load2Map; same as `load`)."
  [filename]
  (load filename))

(defn load2-array
  "The arrays in file `filename`, in their order, as a vector (the Scala
   NDArray.load2Array; the names are dropped)."
  [filename]
  (second (load* filename)))

(defn save-to-file
  "Writes one array to file `fname`, under the name \"default\". Returns nil."
  [fname ndarray]
  (save fname {"default" ndarray}))

(defn load-from-file
  "The first array in file `fname` (as written by `save-to-file`)."
  [fname]
  (first (second (load* fname))))
