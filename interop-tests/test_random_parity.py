"""A seed gives the same numbers in Python and in Clojure: the Clojure
``random`` namespace, ``ndarray/random-uniform`` and ``ndarray-random-api``
draw through the engine's ``mx.random``. Each transport runs a real
``mxkv clj`` (over Py4J the engine is another Python process)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import mxkv as mx

CLJ = """
(require '[org.apache.clojure-mxnet.random :as random]
         '[org.apache.clojure-mxnet.ndarray :as nd]
         '[org.apache.clojure-mxnet.ndarray-random-api :as rapi])
(random/seed 1234)
(let [a (random/uniform -1 1 [2 3])
      b (random/normal 0.5 2 [4])
      c (nd/random-uniform 0 10 "(3)")
      d (rapi/normal {:loc 1 :scale 0.1 :shape [2]})]
  (println (str "@@" (pr-str (mapv nd/->double-vec [a b c d])))))
"""


def _python_draws():
    mx.random.seed(1234)
    return [mx.random.uniform(-1, 1, shape=(2, 3)).asnumpy().ravel(),
            mx.random.normal(0.5, 2, shape=(4,)).asnumpy().ravel(),
            mx.random.uniform(0, 10, shape=(3,)).asnumpy().ravel(),
            mx.random.normal(1, 0.1, shape=(2,)).asnumpy().ravel()]


def test_a_seed_draws_the_same_numbers_in_python_and_clojure(transport):
    r = subprocess.run([sys.executable, "-m", "mxkv.cli", "clj", "--transport", transport,
                        "-e", CLJ], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("@@"))
    clojure = json.loads(line[2:].replace(" ", ","))
    for got, want in zip(clojure, _python_draws()):
        np.testing.assert_array_equal(np.array(got, dtype=np.float32), want)
