"""Optimizers and the KVStore updater, as MXNet 1.9's ``mx.optimizer``.

>>> import mxkv as mx
>>> opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9, wd=1e-4)
>>> updater = mx.optimizer.get_updater(opt)
>>> weight, grad = mx.nd.ones((2, 3)), mx.nd.ones((2, 3))
>>> updater(0, grad, weight)          # key 0: state made, weight updated in place

Registered names (``mx.optimizer.create(name)``, case insensitive): sgd,
ccsgd, nag, adam, adamax, nadam, adagrad, adadelta, rmsprop, signum, ftrl,
ftml, sgld, dcasgd, lamb, lars, lbsgd, groupadagrad, test.
"""
from __future__ import annotations

from .adadelta import AdaDelta
from .adagrad import AdaGrad
from .adam import Adam
from .adamax import Adamax
from .dcasgd import DCASGD
from .ftml import FTML
from .ftrl import Ftrl
from .group_adagrad import GroupAdaGrad
from .lamb import LAMB
from .lars import LARS
from .lbsgd import LBSGD
from .nadam import Nadam
from .nag import NAG
from .optimizer import Optimizer, create, register
from .rmsprop import RMSProp
from .sgd import SGD, ccSGD
from .sgld import SGLD
from .signum import Signum
from .trivial import Test
from .updater import Updater, get_updater

__all__ = [
    "DCASGD",
    "FTML",
    "LAMB",
    "LARS",
    "LBSGD",
    "NAG",
    "SGD",
    "SGLD",
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "Adamax",
    "Ftrl",
    "GroupAdaGrad",
    "Nadam",
    "Optimizer",
    "RMSProp",
    "Signum",
    "Test",
    "Updater",
    "ccSGD",
    "create",
    "get_updater",
    "register",
]
