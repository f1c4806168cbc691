"""The Optimizer base class: registry, learning rate, multipliers, counts, pickling."""
import pickle
import warnings

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError

# ---------------------------------------------------------------- registry

@pytest.mark.parametrize("name, cls", [
    ("sgd", "SGD"), ("SGD", "SGD"), ("ccsgd", "ccSGD"), ("nag", "NAG"), ("adam", "Adam"),
    ("Adamax", "Adamax"), ("nadam", "Nadam"), ("adagrad", "AdaGrad"),
    ("adadelta", "AdaDelta"), ("rmsprop", "RMSProp"), ("signum", "Signum"),
    ("ftrl", "Ftrl"), ("ftml", "FTML"), ("sgld", "SGLD"), ("dcasgd", "DCASGD"),
    ("test", "Test"),
])
def test_create_by_name_case_insensitive(name, cls):
    opt = mx.optimizer.create(name)
    assert type(opt) is getattr(mx.optimizer, cls)
    assert isinstance(opt, mx.optimizer.Optimizer)


def test_create_optimizer_is_create():
    opt = mx.optimizer.Optimizer.create_optimizer("adam", learning_rate=0.1)
    assert isinstance(opt, mx.optimizer.Adam)
    assert opt.learning_rate == 0.1


def test_unknown_optimizer_error_lists_known_names():
    with pytest.raises(MXNetError) as info:
        mx.optimizer.create("nesterov-adam-9000")
    msg = str(info.value)
    assert "nesterov-adam-9000" in msg
    assert "sgd" in msg and "adam" in msg and "rmsprop" in msg
    # MXNet 1.9 raises ValueError: code catching that keeps working
    assert isinstance(info.value, ValueError)


def test_register_custom_optimizer_by_lowercased_class_name():
    @mx.optimizer.register
    class MyCustomOpt(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = 42

    try:
        opt = mx.optimizer.Optimizer.create_optimizer("MyCustomOpt")
        assert type(opt) is MyCustomOpt
        w = mx.nd.zeros((2,))
        mx.optimizer.get_updater(opt)(0, mx.nd.ones((2,)), w)
        assert w.asnumpy().tolist() == [42, 42]
    finally:
        del mx.optimizer.Optimizer.opt_registry["mycustomopt"]


def test_registering_a_name_twice_warns():
    @mx.optimizer.register
    class Twice(mx.optimizer.Optimizer):
        pass
    try:
        with pytest.warns(UserWarning, match="overriding"):
            mx.optimizer.register(type("Twice", (mx.optimizer.Optimizer,), {}))
    finally:
        del mx.optimizer.Optimizer.opt_registry["twice"]


# ---------------------------------------------------------------- learning rate

def test_default_learning_rate_is_0_01():
    assert mx.optimizer.Optimizer().learning_rate == 0.01


def test_set_learning_rate_without_scheduler():
    opt = mx.optimizer.Optimizer(learning_rate=0.01)
    opt.set_learning_rate(0.2)
    assert opt.learning_rate == 0.2


def test_set_learning_rate_with_scheduler_raises_user_warning():
    sched = mx.lr_scheduler.FactorScheduler(step=1)
    with pytest.warns(UserWarning, match="overwritten"):
        opt = mx.optimizer.Optimizer(lr_scheduler=sched, learning_rate=0.3)
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.5)


def test_learning_rate_overrides_scheduler_base_lr_with_warning():
    sched = mx.lr_scheduler.FactorScheduler(step=1, base_lr=1.0)
    with pytest.warns(UserWarning, match="overwritten"):
        opt = mx.optimizer.Optimizer(lr_scheduler=sched, learning_rate=0.3)
    assert opt.learning_rate == 0.3
    opt.lr_scheduler.base_lr = 0.4
    assert opt.learning_rate == 0.4


def test_scheduler_base_lr_used_when_no_learning_rate():
    sched = mx.lr_scheduler.FactorScheduler(step=1, base_lr=1024)
    assert mx.optimizer.Optimizer(lr_scheduler=sched).learning_rate == 1024


def test_adam_default_learning_rate_overrides_scheduler_as_mxnet():
    # Adam passes its default learning_rate=0.001 to the base class, so the
    # scheduler's base_lr is overwritten, exactly as in MXNet 1.9
    sched = mx.lr_scheduler.FactorScheduler(step=2, base_lr=0.1)
    with pytest.warns(UserWarning):
        opt = mx.optimizer.Adam(lr_scheduler=sched)
    assert sched.base_lr == 0.001
    assert opt.learning_rate == 0.001


def test_ftrl_learning_rate_never_touches_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=2, base_lr=0.5)
    opt = mx.optimizer.Ftrl(lr_scheduler=sched)
    assert opt.lr == 0.1 and sched.base_lr == 0.5
    assert opt.learning_rate == 0.5


def test_set_lr_scale_is_deprecated():
    with pytest.raises(DeprecationWarning):
        mx.optimizer.Optimizer().set_lr_scale({0: 2.0})


# ---------------------------------------------------------------- lr_mult / wd_mult

def test_lr_mult_by_index():
    opt = mx.optimizer.Optimizer(learning_rate=0.1)
    opt.set_lr_mult({3: 0.5})
    assert opt._get_lr(3) == pytest.approx(0.05)
    assert opt._get_lr(4) == pytest.approx(0.1)


def test_lr_mult_by_name_through_idx2name():
    opt = mx.optimizer.Optimizer(learning_rate=0.1, param_idx2name={0: "fc1_weight"})
    opt.set_lr_mult({"fc1_weight": 2.0})
    assert opt._get_lr(0) == pytest.approx(0.2)


def test_lr_mult_by_string_key():
    # KVStore string keys reach the optimizer as the index itself
    opt = mx.optimizer.Optimizer(learning_rate=0.1)
    opt.set_lr_mult({"embed": 0.1})
    assert opt._get_lr("embed") == pytest.approx(0.01)


def test_default_wd_mult_is_zero_except_weight_and_gamma():
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta", 4: "bn_moving_mean"}
    opt = mx.optimizer.Optimizer(wd=0.1, param_idx2name=names)
    assert opt.wd_mult == {"fc_bias": 0.0, "bn_beta": 0.0, "bn_moving_mean": 0.0}
    assert [opt._get_wd(i) for i in range(5)] == [0.1, 0.0, 0.1, 0.0, 0.0]
    assert opt._get_wd(99) == 0.1   # unknown index: plain wd


def test_explicit_wd_mult_wins_over_default():
    opt = mx.optimizer.Optimizer(wd=0.1, param_idx2name={0: "fc_bias", 1: "fc_weight"})
    opt.set_wd_mult({"fc_bias": 0.5, 1: 2.0})
    assert opt._get_wd(0) == pytest.approx(0.05)
    assert opt._get_wd(1) == pytest.approx(0.2)


def test_param_dict_multipliers_come_first():
    class Param:
        lr_mult, wd_mult = 3.0, 0.0
    opt = mx.optimizer.Optimizer(learning_rate=0.1, wd=0.1, param_dict={0: Param()})
    opt.set_lr_mult({0: 100.0})
    assert opt._get_lr(0) == pytest.approx(0.3)
    assert opt._get_wd(0) == 0.0


def test_sym_attributes_set_multipliers():
    class Sym:
        def attr_dict(self):
            return {"a_weight": {"__lr_mult__": "0.5", "__wd_mult__": "3"}}

        def list_arguments(self):
            return ["a_weight", "b_weight"]
    opt = mx.optimizer.Optimizer(learning_rate=1.0, wd=0.1, sym=Sym(),
                                 param_idx2name={0: "a_weight", 1: "b_weight"})
    assert opt._get_lr(0) == 0.5 and opt._get_lr(1) == 1.0
    assert opt._get_wd(0) == pytest.approx(0.3)


def test_param_idx2name_must_be_a_dict():
    with pytest.raises(TypeError):
        mx.optimizer.Optimizer(param_idx2name=[("a", 1)])


def test_lr_mult_scales_the_sgd_step():
    opt = mx.optimizer.SGD(learning_rate=0.1)
    opt.set_lr_mult({1: 0.5})
    w0, w1 = mx.nd.ones((2,)), mx.nd.ones((2,))
    opt.update(0, w0, mx.nd.ones((2,)), None)
    opt.update(1, w1, mx.nd.ones((2,)), None)
    np.testing.assert_allclose(w0.asnumpy(), [0.9, 0.9], rtol=1e-6)
    np.testing.assert_allclose(w1.asnumpy(), [0.95, 0.95], rtol=1e-6)


# ---------------------------------------------------------------- update counts

def test_update_count_per_index_and_num_update_is_max():
    opt = mx.optimizer.Optimizer()
    for idx in (0, 0, 0, 1):
        opt._update_count(idx)
    assert opt._index_update_count == {0: 3, 1: 1}
    assert opt.num_update == 3


def test_begin_num_update_offsets_counts():
    opt = mx.optimizer.Optimizer(begin_num_update=10)
    opt._update_count([5, 6])
    assert opt._index_update_count == {5: 11, 6: 11}
    assert opt.num_update == 11


def test_update_counts_are_kept_per_device():
    opt = mx.optimizer.Optimizer()
    opt._update_count(0)
    opt._set_current_context(1)
    opt._update_count(0)
    opt._update_count(0)
    assert opt._all_index_update_counts == {0: {0: 1}, 1: {0: 2}}
    assert opt.num_update == 2


# ---------------------------------------------------------------- pickling

def test_pickle_round_trip_drops_param_dict():
    sched = mx.lr_scheduler.FactorScheduler(step=3, factor=0.5, base_lr=0.2)
    opt = mx.optimizer.SGD(momentum=0.9, lr_scheduler=sched, wd=0.1, param_dict={0: object()},
                           param_idx2name={1: "b_bias"})
    opt._update_count(0)
    back = pickle.loads(pickle.dumps(opt))
    assert type(back) is mx.optimizer.SGD
    assert back.param_dict == {}
    assert back.momentum == 0.9 and back.wd == 0.1 and back.num_update == 1
    assert back.lr_scheduler.base_lr == 0.2 and back.wd_mult == {"b_bias": 0.0}


def test_float16_without_multi_precision_warns():
    opt = mx.optimizer.Adam()
    with pytest.warns(UserWarning, match="multi_precision"):
        opt.create_state_multi_precision(0, mx.nd.zeros((2,), dtype="float16"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.create_state_multi_precision(1, mx.nd.zeros((2,)))


def test_lamb_updates_a_list_of_keys_as_one_by_one():
    rs = np.random.RandomState(3)
    ws = [rs.uniform(-1, 1, (4, 3)) for _ in range(3)]
    gs = [rs.uniform(-1, 1, (4, 3)) for _ in range(3)]
    kwargs = dict(learning_rate=0.01, wd=0.01, clip_gradient=0.5, lower_bound=0.1)
    together, alone = mx.optimizer.LAMB(**kwargs), mx.optimizer.LAMB(**kwargs)
    w1 = [mx.nd.array(w) for w in ws]
    w2 = [mx.nd.array(w) for w in ws]
    st1 = [together.create_state(i, w) for i, w in enumerate(w1)]
    st2 = [alone.create_state(i, w) for i, w in enumerate(w2)]
    for _ in range(2):
        together.update([0, 1, 2], w1, [mx.nd.array(g) for g in gs], st1)
        for i in range(3):
            alone.update(i, w2[i], mx.nd.array(gs[i]), st2[i])
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)


def test_lamb_multi_precision_keeps_its_master_copy_current():
    opt = mx.optimizer.LAMB(learning_rate=0.1, multi_precision=True)
    w = mx.nd.ones((3,), dtype="float16")
    state = opt.create_state_multi_precision(0, w)
    for _ in range(2):
        opt.update_multi_precision(0, w, mx.nd.ones((3,), dtype="float16"), state)
    master = state[0]
    assert master.dtype is np.float32
    np.testing.assert_allclose(w.asnumpy().astype(np.float32), master.asnumpy(), rtol=1e-3)
    assert np.all(master.asnumpy() < 0.95)  # two steps taken, not one
