"""Bad optimizer and scheduler parameters are refused where they are given
(``mx.optimizer.create``, ``kv.set_optimizer`` from the JVM), naming the
parameter; MXNet accepts them and every later update fails."""
from __future__ import annotations

import json
import math

import pytest

import mxkv as mx
from mxkv.base import MXNetTypeError, MXNetValueError
from mxkv.bridge import Arena, EngineFacade


@pytest.mark.parametrize("name,params,error,match", [
    ("sgd", {"learning_rate": "abc"}, MXNetTypeError, "SGD: learning_rate must be a finite number"),
    ("sgd", {"momentum": None}, MXNetTypeError, "SGD: momentum must be a finite number, got None"),
    ("sgd", {"wd": [1]}, MXNetTypeError, "SGD: wd must be a finite number"),
    ("sgd", {"lazy_update": "yes"}, MXNetTypeError, "SGD: lazy_update must be True or False"),
    ("sgd", {"learning_rate": math.nan}, MXNetValueError, "SGD: learning_rate must be finite"),
    ("adam", {"beta1": math.inf}, MXNetValueError, "Adam: beta1 must be finite"),
    ("adam", {"begin_num_update": 1.5}, MXNetTypeError, "Adam: begin_num_update must be an int"),
    ("rmsprop", {"centered": "no"}, MXNetTypeError, "RMSProp: centered must be True or False"),
])
def test_bad_parameters_are_refused_naming_them(name, params, error, match):
    with pytest.raises(error, match=match):
        mx.optimizer.create(name, **params)


@pytest.mark.parametrize("name,params", [
    ("sgd", {"learning_rate": 1, "momentum": 0.9, "wd": 0, "clip_gradient": None,
             "lazy_update": False}),
    ("adam", {"learning_rate": 0.1, "begin_num_update": 3, "multi_precision": True}),
    ("rmsprop", {"centered": True, "clip_weights": 0.5}),
    ("sgd", {"rescale_grad": 1.0 / 128, "lr_scheduler": mx.lr_scheduler.FactorScheduler(2)}),
])
def test_good_parameters_are_accepted(name, params):
    opt = mx.optimizer.create(name, **params)
    assert type(opt).__name__.lower() == name


def test_set_optimizer_from_the_jvm_refuses_at_that_call_and_keeps_the_store(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    try:
        kv = json.loads(f.call("kv.create", '["local"]')[1:])[0]
        w = json.loads(f.call("nd.create", '["ones",[2],"cpu",0,"float32",null]')[1:])[0]
        f.call("kv.init", json.dumps([kv, ["w"], [w]]))
        r = f.call("kv.set_optimizer", json.dumps([kv, "sgd", {"learning_rate": "abc"}]))
        assert r[0] == "e"
        e = json.loads(r[1:])
        assert e["python_class"] == "mxkv.base.MXNetTypeError"
        assert "learning_rate must be a finite number" in e["message"]
        assert f.call("kv.push", json.dumps([kv, ["w"], [w]])) == "o", "no optimizer was set"
        r = f.call("kv.set_optimizer", json.dumps(
            [kv, "sgd", {"learning_rate": 0.1, "lr_scheduler": {"type": "factor", "step": "x"}}]))
        assert "lr scheduler 'factor': step must be an integer" in json.loads(r[1:])["message"]
    finally:
        f.close()
