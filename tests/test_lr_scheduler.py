"""Learning-rate schedules (mx.lr_scheduler), checked at given update counts."""
import math

import pytest

import mxkv as mx
from mxkv import lr_scheduler


def test_factor_scheduler_decays_every_step_updates():
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    # lr = base_lr * factor ** floor((n - 1) / step)
    assert [sched(n) for n in (1, 2, 3, 4, 5, 6, 7)] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]


def test_factor_scheduler_jumps_several_steps_at_once():
    sched = lr_scheduler.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    assert sched(35) == pytest.approx(1e-3)
    assert sched.count == 30


def test_factor_scheduler_stops_at_stop_factor_lr():
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    assert sched(100) == 1e-3


def test_factor_scheduler_linear_warmup():
    sched = lr_scheduler.FactorScheduler(step=5, factor=0.5, base_lr=1.0, warmup_steps=4,
                                         warmup_begin_lr=0.2)
    assert [sched(n) for n in range(4)] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert sched(4) == 1.0
    assert sched(10) == 0.5


def test_constant_warmup_stays_at_begin_lr():
    sched = lr_scheduler.MultiFactorScheduler(step=[5], base_lr=1.0, warmup_steps=3,
                                              warmup_begin_lr=0.1, warmup_mode="constant")
    assert [sched(n) for n in range(3)] == [0.1, 0.1, 0.1]
    assert sched(3) == 1.0


def test_multifactor_scheduler_decays_past_each_step():
    sched = lr_scheduler.MultiFactorScheduler(step=[3, 6, 9], factor=0.1, base_lr=1.0)
    lrs = [sched(n) for n in (1, 3, 4, 6, 7, 9, 10, 100)]
    assert lrs == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01, 0.01, 1e-3, 1e-3])


def test_poly_scheduler_formula():
    sched = lr_scheduler.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1)
    for n in (0, 1, 5, 10):
        assert sched(n) == pytest.approx(0.1 + 0.9 * (1 - n / 10) ** 2)
    assert sched(20) == pytest.approx(0.1)


def test_poly_scheduler_with_warmup_counts_decay_after_warmup():
    sched = lr_scheduler.PolyScheduler(max_update=12, base_lr=1.0, pwr=1, warmup_steps=2)
    assert sched(1) == pytest.approx(0.5)
    assert sched(7) == pytest.approx(1 - 5 / 10)


def test_cosine_scheduler_formula():
    sched = lr_scheduler.CosineScheduler(max_update=8, base_lr=2.0, final_lr=0.5)
    for n in (0, 2, 4, 8):
        assert sched(n) == pytest.approx(0.5 + 1.5 * (1 + math.cos(math.pi * n / 8)) / 2)
    assert sched(9) == pytest.approx(0.5)


@pytest.mark.parametrize("make", [
    lambda: lr_scheduler.FactorScheduler(step=0),
    lambda: lr_scheduler.FactorScheduler(step=1, factor=1.5),
    lambda: lr_scheduler.MultiFactorScheduler(step=[3, 3]),
    lambda: lr_scheduler.MultiFactorScheduler(step=[0, 3]),
    lambda: lr_scheduler.MultiFactorScheduler(step=[]),
    lambda: lr_scheduler.PolyScheduler(max_update=0),
    lambda: lr_scheduler.CosineScheduler(max_update=0),
    lambda: lr_scheduler.FactorScheduler(step=1, base_lr=0.1, warmup_begin_lr=0.5),
    lambda: lr_scheduler.FactorScheduler(step=1, warmup_steps=-1),
    lambda: lr_scheduler.FactorScheduler(step=1, warmup_mode="cubic"),
])
def test_invalid_schedules_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_non_integer_warmup_steps_raise_type_error():
    with pytest.raises(TypeError):
        lr_scheduler.CosineScheduler(max_update=10, warmup_steps=2.5)


def test_optimizer_follows_scheduler_by_update_count():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.8)
    opt = mx.optimizer.create("sgd", lr_scheduler=sched)
    seen = []
    w, g = mx.nd.zeros((1,)), mx.nd.ones((1,))
    for _ in range(5):
        before = w.asnumpy()[0]
        opt.update(0, w, g, None)
        seen.append(before - w.asnumpy()[0])   # the lr used (grad is 1)
    assert seen == pytest.approx([0.8, 0.8, 0.4, 0.4, 0.2])
    assert opt.learning_rate == pytest.approx(0.2)
