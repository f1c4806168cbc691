"""KVStore, KVStoreServer and optimizer operations of the Engine facade. A
key repeated over several values (one per device) is grouped into MXNet's
``key -> [values]`` form before the store sees it. Optimizers are built the
same way for a store (``kv.set_optimizer``) and by hand (``opt.*``)."""
from __future__ import annotations

import ctypes
import importlib
import os

from ..base import MXNetTypeError, MXNetValueError
from .registry import group as _group
from .registry import op

__all__ = ["KVStoreOps"]


class KVStoreOps:
    """Mixin of EngineFacade: needs ``mx``, ``backend``, ``put``, ``get``, ``kv``, ``nd``,
    ``meta``."""

    @op("kv.create")
    def _kv_create(self, name="local"):
        kv = self.mx.kv.create(name)
        self._made_stores.add(kv)
        return [self.put(kv), kv.type]

    def _close_released(self, obj):
        """A store this engine made (``kv.create``) is closed when the JVM
        releases its last handle (NCCL communicators, GPU and pinned buffers
        are freed now, not when Python collects it). A store Python made and
        published lives on: it is Python's to close."""
        if obj is not None and obj in self._made_stores and not self._still_held(obj):
            self._made_stores.discard(obj)
            obj.close()

    def _arrays(self, hs):
        return [self.nd(h) for h in hs]

    @op("kv.init")
    def _kv_init(self, h, keys, vals):
        kv = self.kv(h)
        ks, vs = _group(keys, self._arrays(vals))
        kv.init(ks, vs)

    @op("kv.push")
    def _kv_push(self, h, keys, vals, priority=0):
        kv = self.kv(h)
        ks, vs = _group(keys, self._arrays(vals), single=True)
        kv.push(ks, vs, priority=priority)

    @op("kv.pull")
    def _kv_pull(self, h, keys, outs, priority=0, ignore_sparse=True):
        kv = self.kv(h)
        ks, os_ = _group(keys, self._arrays(outs), single=True)
        kv.pull(ks, out=os_, priority=priority, ignore_sparse=ignore_sparse)

    @op("kv.pushpull")
    def _kv_pushpull(self, h, keys, vals, out_keys, outs, priority=0):
        kv = self.kv(h)
        ks, vs = _group(keys, self._arrays(vals))
        if outs is None:
            kv.pushpull(ks, vs, priority=priority)
            return None
        oks, os_ = _group(out_keys, self._arrays(outs))
        if oks != ks:
            raise MXNetValueError(f"pushpull: the keys of the outputs {oks} differ from the keys "
                             f"of the values {ks}")
        kv.pushpull(ks, vs, out=os_, priority=priority)

    @op("kv.broadcast")
    def _kv_broadcast(self, h, keys, vals, out_keys, outs, priority=0):
        kv = self.kv(h)
        ks, vs = _group(keys, self._arrays(vals))
        oks, os_ = _group(out_keys, self._arrays(outs))
        if oks != ks:
            raise MXNetValueError(f"broadcast: the keys of the outputs {oks} differ from the keys "
                             f"of the values {ks}")
        kv.broadcast(ks, vs, out=os_, priority=priority)

    @op("kv.row_sparse_pull")
    def _kv_row_sparse_pull(self, h, keys, outs, row_ids, priority=0):
        kv = self.kv(h)
        outs = self._arrays(outs)
        ids = self._arrays(row_ids)
        if len(ids) != len(outs):
            raise MXNetValueError(f"row_sparse_pull: {len(outs)} outputs but {len(ids)} row_ids")
        # Dense outputs are filled through row_sparse temporaries.
        targets, dense = [], []
        for o in outs:
            if getattr(o, "stype", "default") == "row_sparse":
                targets.append(o)
            else:
                t = self.mx.nd.sparse.zeros("row_sparse", o.shape, ctx=o.context, dtype=o.dtype)
                targets.append(t)
                dense.append((o, t))
        ks, ts = _group(keys, targets)
        _, rs = _group(keys, ids)
        kv.row_sparse_pull(ks, out=ts, priority=priority, row_ids=rs)
        for o, t in dense:
            t.tostype("default").copyto(o)

    @op("kv.set_gradient_compression")
    def _kv_set_gc(self, h, params):
        self.kv(h).set_gradient_compression(params)

    @op("kv.set_optimizer")
    def _kv_set_optimizer(self, h, name, params):
        self.kv(h).set_optimizer(self._optimizer(name, params))

    def _optimizer(self, name, params):
        """``mx.optimizer.create(name, **params)``, the schedule (a map) built first."""
        params = dict(params or {})
        sched = params.pop("lr_scheduler", None)
        if sched is not None:
            sched = dict(sched)
            # As clojure-mxnet: the optimizer's learning rate is the schedule's base.
            if "learning_rate" in params:
                sched.setdefault("base_lr", params["learning_rate"])
            params["lr_scheduler"] = self._lr_scheduler(sched)
        return self.mx.optimizer.create(name, **params)

    def _lr_scheduler(self, spec):
        spec = dict(spec)
        kind = spec.pop("type", "factor")
        classes = {"factor": "FactorScheduler", "multifactor": "MultiFactorScheduler",
                   "poly": "PolyScheduler", "cosine": "CosineScheduler"}
        if kind not in classes:
            raise MXNetValueError(f"unknown lr scheduler {kind!r}; expected one of "
                                  f"{sorted(classes)}")
        klass = getattr(self.mx.lr_scheduler, classes[kind])
        try:
            return klass(**spec)
        except (TypeError, ValueError) as exc:
            cls = MXNetTypeError if isinstance(exc, TypeError) else MXNetValueError
            raise cls(f"lr scheduler {kind!r}: {exc}") from None

    # ------------------------------------------------------------ optimizers by hand
    @op("opt.create")
    def _opt_create(self, name, params):
        """An optimizer object in the handle table, for create_state/update."""
        return self.put(self._optimizer(name, params))

    def _optimizer_at(self, h):
        obj = self.get(h)
        if not hasattr(obj, "update_multi_precision"):
            raise MXNetTypeError(f"handle {h} is a {type(obj).__name__}, not an optimizer")
        return obj

    def _state_out(self, state):
        """An optimizer state for the JVM: null, {"nd": meta} or {"list": [...]}."""
        if state is None:
            return None
        if isinstance(state, (list, tuple)):
            return {"list": [self._state_out(s) for s in state]}
        if hasattr(state, "shape") and hasattr(state, "context"):
            return {"nd": self.meta(state)}
        raise MXNetTypeError(f"optimizer state of type {type(state).__name__} cannot be "
                             "handed to the JVM")

    def _state_in(self, spec):
        if spec is None:
            return None
        if isinstance(spec, dict) and "list" in spec:
            return tuple(self._state_in(s) for s in spec["list"])
        if isinstance(spec, dict) and "nd" in spec:
            return self.nd(spec["nd"])
        raise MXNetValueError(f"not an optimizer state: {spec!r}")

    @op("opt.create_state")
    def _opt_create_state(self, h, index, weight):
        """The state (momentum, moments ...) the optimizer keeps for ``weight``,
        created as the store's updater creates it."""
        return self._state_out(
            self._optimizer_at(h).create_state_multi_precision(int(index), self.nd(weight)))

    @op("opt.update")
    def _opt_update(self, h, index, weight, grad, state):
        """One update of ``weight`` (and ``state``) in place, as the store's updater
        applies it."""
        self._optimizer_at(h).update_multi_precision(int(index), self.nd(weight), self.nd(grad),
                                                     self._state_in(state))

    @op("kv.type")
    def _kv_type(self, h):
        return self.kv(h).type

    @op("kv.rank")
    def _kv_rank(self, h):
        return int(self.kv(h).rank)

    @op("kv.num_workers")
    def _kv_num_workers(self, h):
        return int(self.kv(h).num_workers)

    @op("kv.barrier")
    def _kv_barrier(self, h):
        kv = self.kv(h)
        fn = getattr(kv, "barrier", None) or kv._barrier
        fn()

    @op("kv.num_dead_node")
    def _kv_num_dead_node(self, h, node_id, timeout=60):
        kv = self.kv(h)
        fn = getattr(kv, "num_dead_node", None)
        if fn is None:
            return 0  # a store without a server group has no dead nodes
        return int(fn(node_id, timeout) if timeout is not None else fn(node_id))

    @op("kv.set_barrier_before_exit")
    def _kv_set_barrier_before_exit(self, h, flag):
        kv = self.kv(h)
        fn = getattr(kv, "set_barrier_before_exit", None)
        if fn is not None:
            fn(bool(flag))
        else:  # MXNet's own Python KVStore has only the C API for this
            base = self.mx.base
            base.check_call(base._LIB.MXKVStoreSetBarrierBeforeExit(
                kv.handle, ctypes.c_int(int(bool(flag)))))

    @op("kv.send_command_to_servers")
    def _kv_send_command(self, h, head, body):
        kv = self.kv(h)
        fn = getattr(kv, "send_command_to_servers", None) or kv._send_command_to_servers
        fn(int(head), body)

    @op("kv.save_optimizer_states")
    def _kv_save_states(self, h, fname, dump_optimizer=False):
        self.kv(h).save_optimizer_states(fname, dump_optimizer=bool(dump_optimizer))

    @op("kv.load_optimizer_states")
    def _kv_load_states(self, h, fname):
        self.kv(h).load_optimizer_states(fname)

    # ------------------------------------------------------------ server
    @op("server.init")
    def _server_init(self, env):
        os.environ.update({str(k): str(v) for k, v in env.items()})

    @op("server.start")
    def _server_start(self):
        kvmod = getattr(self.mx, "kvstore", None)
        server_cls = getattr(kvmod, "KVStoreServer", None)
        if server_cls is None:
            try:
                server_cls = importlib.import_module(
                    f"{self.backend}.kvstore.kvstore_server").KVStoreServer
            except (ImportError, AttributeError):
                raise RuntimeError(f"{self.backend} has no KVStoreServer: a server needs a "
                                   "distributed kvstore (pip install 'mxkv[dist]')") from None
        server = server_cls(self.mx.kv.create("dist"))
        server.run()

