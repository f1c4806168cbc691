"""Make ``import mxnet`` give mxkv, for MXNet's own unit tests run against mxkv.

``mxnet`` and the submodules those tests import become thin aliases of
mxkv's modules, with nothing added to mxkv's own names. Parts of MXNet that mxkv does
not claim (symbols, autograd, gluon, runtime features, io, contrib)
are modules whose attributes raise :class:`NotClaimed`, so a test reaching
for one fails with a message saying so. ``nose.tools`` maps onto pytest.
"""
from __future__ import annotations

import json
import os
import sys
import types

import numpy as np

import mxkv

_HERE = os.path.dirname(os.path.abspath(__file__))


class NotClaimed(AttributeError):
    """A part of MXNet's API that mxkv does not provide."""


class _Alias(types.ModuleType):
    """A module that is ``target`` plus ``extras``."""

    def __init__(self, name: str, target: types.ModuleType, **extras) -> None:
        super().__init__(name)
        self.__dict__.update(extras)
        self.__dict__["_target"] = target
        self.__file__ = getattr(target, "__file__", None)

    def __getattr__(self, attr: str):
        return getattr(self.__dict__["_target"], attr)


class _Unclaimed(types.ModuleType):
    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise NotClaimed(f"{self.__name__}.{attr} is not part of mxkv")


def _install() -> None:
    from mxkv.ndarray import ndarray as nd_ndarray
    from mxkv.ndarray import sparse as nd_sparse

    mods = {}
    for sub in ("autograd", "gluon", "runtime", "symbol", "sym", "io", "module",
                "metric", "initializer", "contrib", "numpy", "np", "npx"):
        mods[f"mxnet.{sub}"] = _Unclaimed(f"mxnet.{sub}")
    mods["mxnet.base"] = mxkv.base
    mods["mxnet.ndarray.sparse"] = nd_sparse
    mods["mxnet.ndarray.ndarray"] = nd_ndarray
    mods["mxnet.ndarray"] = _Alias("mxnet.ndarray", mxkv.ndarray,
                                   sparse=mods["mxnet.ndarray.sparse"],
                                   ndarray=mods["mxnet.ndarray.ndarray"],
                                   random=mxkv.ndarray.random,
                                   contrib=mods["mxnet.contrib"])
    for sub in ("kvstore", "optimizer", "lr_scheduler", "context", "random"):
        mods[f"mxnet.{sub}"] = getattr(mxkv, sub)
    subs = {k.split(".", 1)[1]: v for k, v in mods.items() if k.count(".") == 1}
    top = _Alias("mxnet", mxkv, nd=mods["mxnet.ndarray"], kv=mxkv.kvstore, **subs)
    top.__path__ = []  # a package, so `import mxnet.x` consults sys.modules
    sys.modules["mxnet"] = top
    sys.modules.update(mods)
    sys.modules["mxnet.ndarray.random"] = mxkv.ndarray.random
    sys.path.insert(0, _HERE)
    import mxnet_test_utils
    import nose_tools

    top.test_utils = mxnet_test_utils
    sys.modules["mxnet.test_utils"] = mxnet_test_utils
    nose = types.ModuleType("nose")
    nose.tools = nose_tools
    sys.modules["nose"] = nose
    sys.modules["nose.tools"] = nose_tools


# MXNet 1.9's tests were written for numpy 1.x; mxkv runs on numpy 2, which
# dropped these aliases. Put them back for the tests' own numpy calls.
for _old, _new in (("NaN", np.nan), ("Inf", np.inf), ("PINF", np.inf), ("NINF", -np.inf)):
    if _old not in np.__dict__:
        setattr(np, _old, _new)

_install()


def pytest_runtest_setup(item) -> None:
    sys.modules["mxnet.test_utils"].CURRENT_TEST["name"] = item.nodeid


def pytest_sessionfinish(session, exitstatus) -> None:
    out = os.environ.get("MXKV_UNITTEST_CSR_REPORT")
    if out:
        with open(out, "w") as f:
            json.dump(sys.modules["mxnet.test_utils"].CSR_SKIPPED, f)
