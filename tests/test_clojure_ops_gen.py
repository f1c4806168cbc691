"""Clojure's operator functions come from the engine's table: the spec
clojure/src/org/apache/clojure_mxnet/gen/operators.edn is exactly what
tools/gen_clojure_ops.py writes from the table now (regenerate it after
adding an operator), with clojure-mxnet's names (tests/golden/clj_names.json,
recorded from MXNet 1.9.1's registry by tools/golden_clj_names.py)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = json.loads((ROOT / "tests" / "golden" / "clj_names.json").read_text())


def _gen():
    spec = importlib.util.spec_from_file_location("gen_clojure_ops",
                                                  ROOT / "tools" / "gen_clojure_ops.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_spec_is_what_the_table_gives_now():
    gen = _gen()
    assert gen.OUT.read_text() == gen.render(), \
        "gen/operators.edn is out of date: run .venv/bin/python tools/gen_clojure_ops.py"


def test_every_registry_operator_of_the_table_has_its_clojure_names():
    from mxkv.ndarray import optable
    entries = {e["op"]: e for e in _gen().entries()}
    for d in optable.iter_ops():
        if d.namespace in _gen().SPACES and not d.name.startswith("_"):
            e = entries[d.name]
            # its name, unless another operator of the same clojure-case owns it
            # (MakeLoss and make_loss: the one upstream's generator wrote last)
            owners = [x["op"] for x in entries.values()
                      if optable.clojure_name(d.name) in x["ndarray"]]
            assert owners == [d.name] or (owners and owners[0] > d.name), (d.name, owners)
            assert len(e["api"]) + len(e["random-api"]) >= 1 or \
                set(d.names) <= {"uniform", "normal"} or owners[0] != d.name, d.name
            assert [p[0] for p in e["params"]] == [p.name for p in d.params]


def test_the_names_follow_clojure_mxnets_generator():
    e = {x["op"]: x for x in _gen().entries()}
    assert e["broadcast_add"]["ndarray"] == ["broadcast-add", "broadcast-plus"]
    assert e["broadcast_add"]["api"] == ["broadcast-add"]  # by MXNet's primary name
    assert e["random_uniform"]["random-api"] == ["uniform"]
    assert e["sample_normal"]["random-api"] == ["normal-like"]
    assert e["FullyConnected"]["ndarray"] == ["fully-connected"]
    clip = e["clip"]["params"]
    assert [(p[1], p[3]) for p in clip] == [("a-min", True), ("a-max", True)]
    # every ndarray-api / ndarray-random-api name generated is one of upstream's,
    # except for operators MXNet registers only under a hidden name (linalg_syevd)
    public = set(NAMES["primary"])
    api = {n for x in e.values() if set(x["api"]) and x["op"] in public for n in x["api"]}
    rnd = {n for x in e.values() for n in x["random-api"]}
    assert api <= set(NAMES["ndarray-api"]), sorted(api - set(NAMES["ndarray-api"]))
    assert rnd <= set(NAMES["ndarray-random-api"]), sorted(rnd - set(NAMES["ndarray-random-api"]))
    assert NAMES["mxnet"] == "1.9.1"
