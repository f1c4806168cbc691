"""train.clj in Python: data-parallel training of a small MLP (64 -> 32 relu
-> 10 softmax) on the digits images with an mxkv store.

    mxkv launch -n 2 -s 1 -- python examples/digits/train.py dist_sync OUT
    python examples/digits/train.py local OUT

The same algorithm, configuration and seed as train.clj: weights drawn by
``mx.random`` (the same numbers as the Clojure program draws after the same
seed), updates by the store's optimizer (SGD with momentum), each global
batch of 200 split into 2 parts whose gradients are pushed (by 2 workers,
or together by one process). The forward and backward passes are numpy's
here (mxkv's ``mx.nd`` is the subset of MXNet's a KVStore needs), so the
losses match the Clojure run's to float32 rounding, not bit for bit.
Writes OUT/losses-py-<mode>-<rank>.txt and, from rank 0,
OUT/result-py-<mode>.json.
"""
from __future__ import annotations

import gzip
import json
import os
import sys
import time

import numpy as np

import mxkv as mx

CONFIG = {"hidden": 32, "batch": 200, "parts": 2, "epochs": 20, "learning_rate": 0.1,
          "momentum": 0.9, "seed": 42}
KEYS = ["w1", "b1", "w2", "b2"]
HERE = os.path.dirname(os.path.abspath(__file__))


def read_digits():
    """Images (pixels / 16) and labels, split into train and held-out (every 5th)."""
    with gzip.open(os.path.join(HERE, "digits.csv.gz"), "rt") as f:
        rows = np.array([[int(v) for v in line.split(",")] for line in f])
    held_out = np.arange(len(rows)) % 5 == 4
    x = (rows[:, 1:] / 16.0).astype(np.float32)
    y = rows[:, 0]
    return x[~held_out], y[~held_out], x[held_out], y[held_out]


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def forward(p, x):
    z1 = x @ p["w1"] + p["b1"]
    h = np.maximum(z1, 0)
    return z1, h, h @ p["w2"] + p["b2"]


def gradients(p, x, y, n):
    """Gradients of this part's share of the batch's mean cross-entropy, and that share."""
    z1, h, logits = forward(p, x)
    onehot = np.eye(10, dtype=np.float32)[y]
    lsm = log_softmax(logits)
    dlogits = (np.exp(lsm) - onehot) / n
    dh = (dlogits @ p["w2"].T) * (z1 > 0)
    grads = {"w1": x.T @ dh, "b1": dh.sum(axis=0, keepdims=True),
             "w2": h.T @ dlogits, "b2": dlogits.sum(axis=0, keepdims=True)}
    return grads, float(-(onehot * lsm).sum() / n)


def evaluate(p, x, y):
    _, _, logits = forward(p, x)
    loss = float(-log_softmax(logits)[np.arange(len(y)), y].mean())
    return loss, float((logits.argmax(axis=1) == y).mean())


def main(mode: str, out_dir: str) -> None:
    c = CONFIG
    kv = mx.kv.create(mode)
    workers = kv.num_workers
    if workers not in (1, c["parts"]):
        raise SystemExit(f"run with 1 or {c['parts']} workers, not {workers}")
    mine = range(c["parts"]) if workers == 1 else [kv.rank]
    x_train, y_train, x_test, y_test = read_digits()
    mx.random.seed(c["seed"])
    init = {"w1": mx.random.normal(0, 0.1, shape=(64, c["hidden"])),
            "b1": mx.nd.zeros((1, c["hidden"])),
            "w2": mx.random.normal(0, 0.1, shape=(c["hidden"], 10)),
            "b2": mx.nd.zeros((1, 10))}
    params = {k: mx.nd.zeros(init[k].shape) for k in KEYS}
    kv.init(KEYS, [init[k] for k in KEYS])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=c["learning_rate"],
                                      momentum=c["momentum"], wd=0.0))
    kv.pull(KEYS, out=[params[k] for k in KEYS])
    steps_per_epoch = len(y_train) // c["batch"]
    part = c["batch"] // c["parts"]
    started = time.perf_counter()
    with open(os.path.join(out_dir, f"losses-py-{mode}-{kv.rank}.txt"), "w") as f:
        for step in range(c["epochs"] * steps_per_epoch):
            p = {k: v.asnumpy() for k, v in params.items()}
            start = c["batch"] * (step % steps_per_epoch)
            results = [gradients(p, x_train[s:s + part], y_train[s:s + part], c["batch"])
                       for s in (start + i * part for i in mine)]
            kv.push([k for k in KEYS for _ in results],
                    [mx.nd.array(g[k]) for k in KEYS for g, _ in results])
            kv.pull(KEYS, out=[params[k] for k in KEYS])
            f.write(f"{step} {sum(loss for _, loss in results)}\n")
    if kv.rank == 0:
        p = {k: v.asnumpy() for k, v in params.items()}
        train_loss, _ = evaluate(p, x_train, y_train)
        test_loss, accuracy = evaluate(p, x_test, y_test)
        result = {"mode": mode, "workers": workers, "steps": c["epochs"] * steps_per_epoch,
                  "final_train_loss": train_loss, "held_out_loss": test_loss,
                  "held_out_accuracy": accuracy, "seconds": time.perf_counter() - started}
        with open(os.path.join(out_dir, f"result-py-{mode}.json"), "w") as f:
            json.dump(result, f)
        print("digits", json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
