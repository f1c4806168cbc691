"""Record optimizer states files written by the real Apache MXNet 1.9.1.

For each case a local KVStore with two keys (an int store) is trained for
two pushes and ``save_optimizer_states`` writes the file (with or without
``dump_optimizer``). Then MXNet resumes from it: a fresh store initialized
with the weights at the save, the optimizer set (with a wrong learning rate
when the file carries its own optimizer, which must win), the file loaded,
one more push. (The float16 cases train float16 weights with
``multi_precision``.) The files go to ``tests/golden/mxnet_states/<case>.states``,
the inputs and results to ``tests/golden/mxnet_states/expected.json``;
``tests/test_states_file.py`` resumes the same way in mxkv (through the
restricted unpickler) and compares.

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_states.py
"""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "mxnet_states")

KEYS = [3, 5]
WRONG_LR = 123.0  # set on the resuming store when the file carries the optimizer
SHAPES = {3: (2, 3), 5: (4,)}
#: the cases of optimizers that update 2-D weights only (their own init and
#: gradients are recorded with them)
SHAPES_2D = {3: (2, 3), 5: (4, 5)}

CASES = [
    # name, optimizer, kwargs, dump_optimizer
    ("sgd_momentum_states", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}, False),
    ("sgd_momentum_dump", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}, True),
    ("adam_states", "adam", {"learning_rate": 0.01}, False),
    ("adam_dump", "adam", {"learning_rate": 0.01, "wd": 0.001}, True),
    ("sgd_fp16_multi_precision_states", "sgd",
     {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True}, False),
    ("sgd_fp16_multi_precision_dump", "sgd",
     {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True}, True),
    # a state that is not of the weight's shape: (rows, 1)
    ("groupadagrad_states", "groupadagrad", {"learning_rate": 0.1}, False),
    ("groupadagrad_dump", "groupadagrad", {"learning_rate": 0.1, "eps": 1e-4}, True),
]


def dtype_of(kwargs):
    """float16 weights for the multi-precision cases, else float32."""
    return "float16" if kwargs.get("multi_precision") else "float32"


def shapes_of(opt):
    return SHAPES_2D if opt == "groupadagrad" else SHAPES


def grads(step, shapes=SHAPES):
    rng = np.random.RandomState(100 + step)
    return {k: rng.uniform(-1, 1, shapes[k]).astype(np.float32) for k in KEYS}


def initial(shapes):
    return {k: np.arange(np.prod(shapes[k]), dtype=np.float32).reshape(shapes[k]) / 10
            for k in KEYS}


def main():
    import mxnet as mx

    os.makedirs(OUT, exist_ok=True)
    init = initial(SHAPES)
    out = {"keys": KEYS, "init": {str(k): v.tolist() for k, v in init.items()},
           "grads": [{str(k): v.tolist() for k, v in grads(s).items()} for s in range(3)],
           "cases": {}}
    for name, opt, kwargs, dump in CASES:
        path = os.path.join(OUT, name + ".states")
        shapes = shapes_of(opt)
        own = {} if shapes is SHAPES else {
            "init": {str(k): v.tolist() for k, v in initial(shapes).items()},
            "grads": [{str(k): v.tolist() for k, v in grads(s, shapes).items()}
                      for s in range(3)]}
        start = initial(shapes)
        kv = mx.kv.create("local")
        dt = dtype_of(kwargs)
        kv.init(KEYS, [mx.nd.array(start[k], dtype=dt) for k in KEYS])
        kv.set_optimizer(mx.optimizer.create(opt, **kwargs))
        for step in range(2):
            g = grads(step, shapes)
            kv.push(KEYS, [mx.nd.array(g[k], dtype=dt) for k in KEYS])
        kv.save_optimizer_states(path, dump_optimizer=dump)
        outs = [mx.nd.zeros(shapes[k], dtype=dt) for k in KEYS]
        kv.pull(KEYS, out=outs)
        at_save = {k: o.asnumpy() for k, o in zip(KEYS, outs)}

        resumed = mx.kv.create("local")
        resumed.init(KEYS, [mx.nd.array(at_save[k], dtype=dt) for k in KEYS])
        resumed.set_optimizer(mx.optimizer.create(
            opt, **dict(kwargs, learning_rate=WRONG_LR if dump else kwargs["learning_rate"])))
        resumed.load_optimizer_states(path)
        g = grads(2, shapes)
        resumed.push(KEYS, [mx.nd.array(g[k], dtype=dt) for k in KEYS])
        resumed.pull(KEYS, out=outs)
        out["cases"][name] = {**own, "optimizer": opt, "kwargs": kwargs, "dump_optimizer": dump,
                              "weights_at_save": {str(k): v.tolist()
                                                  for k, v in at_save.items()},
                              "resumed": {str(k): o.asnumpy().tolist()
                                          for k, o in zip(KEYS, outs)}}
    out["wrong_learning_rate"] = WRONG_LR
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", len(CASES), "states files to", OUT)


if __name__ == "__main__":
    main()
