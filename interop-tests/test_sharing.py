"""One live store, two languages: objects handed between Python and Clojure
are the same objects, memory is shared without copies, and handles the JVM
drops are freed by its garbage collector, over each transport.

Over JPype the Python objects live in this process, next to the JVM
(``mxkv.jvm.publish``). Over Py4J this process serves (``mxkv.bridge.serve``)
and the driver JVM attaches to it with the secret from the attach file.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import mxkv as mx
from mxkv.bridge import serve, shared_array


@contextmanager
def _published(driver, objects):
    """Publish ``objects`` to ``driver``'s JVM; yield a function calling a
    driver function with them reachable."""
    if driver.transport == "jpype":
        for name, obj in objects.items():
            driver.jvm.publish(name, obj)
        try:
            yield driver.call
        finally:
            for name in objects:
                driver.jvm.unpublish(name)
    else:
        with serve() as server:
            for name, obj in objects.items():
                server.publish(name, obj)
            yield lambda fn, *args: driver.call("attached", str(server.path), fn, *args)


def _shareable(transport, shape):
    # in-process every CPU array shares; across processes only shared memory does
    return mx.nd.zeros(shape) if transport == "jpype" else shared_array(shape)


def test_a_jvm_write_through_a_shared_buffer_is_the_python_array(driver):
    a = _shareable(driver.transport, (4,))
    with _published(driver, {"a": a}) as call:
        engine_saw = call("write-through-buffer", "a", 2, 7.5)
        assert engine_saw == 7.5
        assert a.asnumpy().tolist() == [0.0, 0.0, 7.5, 0.0], "the write landed in the array itself"
        a[:] = mx.nd.array([1, 2, 3, 4])
        assert call("read-through-buffer", "a", 3) == 4.0, "and the JVM reads Python's write"


def test_shared_arrays_made_from_clojure_share_both_ways(driver):
    engine_saw, jvm_saw = driver.call("shared-roundtrip")
    assert engine_saw == 3.5
    assert jvm_saw == 4.5


def test_a_push_from_clojure_reaches_the_python_training_loop(driver):
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((2, 3)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
    with _published(driver, {"kv": kv}) as call:
        out = mx.nd.zeros((2, 3))
        for step in range(3):
            kv.push("w", mx.nd.ones((2, 3)))           # Python's gradient
            call("push-published", "kv", "w", 2.0, [2, 3])  # Clojure's gradient
            kv.pull("w", out=out)
            # w <- w - 0.5 * grad, once for each push
            assert np.allclose(out.asnumpy(), 1.0 - (step + 1) * (0.5 * 1 + 0.5 * 2)), step


def test_dropped_jvm_handles_are_freed_and_the_object_lives_on(driver):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2,)))
    with _published(driver, {"kv": kv}) as call:
        before, during, after = call("handle-churn", "kv", 300)
    assert during >= before + 300, "each handle is an engine entry while the JVM holds it"
    assert after <= before + 5, "the JVM's GC released them"
    out = mx.nd.zeros((2,))
    kv.pull(3, out=out)
    assert out.asnumpy().tolist() == [1.0, 1.0], "the published store itself is untouched"


def test_private_memory_is_not_shared_across_processes(py4j_driver):
    a = mx.nd.zeros((4,))
    with _published(py4j_driver, {"a": a}) as call:
        from support import DriverError

        with pytest.raises(DriverError, match="shared memory"):
            call("read-through-buffer", "a", 0)


def test_the_attach_file_is_for_its_owner_only(py4j_driver, tmp_path):
    with serve() as server:
        mode = stat.S_IMODE(os.stat(server.path).st_mode)
        assert mode == 0o600
        assert stat.S_IMODE(os.stat(server.path.parent).st_mode) & 0o077 == 0 or \
            server.path.parent == tmp_path
        leaked = tmp_path / "leaked.json"
        leaked.write_bytes(server.path.read_bytes())
        os.chmod(leaked, 0o644)
        from support import DriverError

        with pytest.raises(DriverError, match="other users may access it"):
            py4j_driver.call("attached", str(leaked), "read-through-buffer", "a", 0)
    assert not server.path.exists(), "closing the server removes its attach file"


def test_an_attach_file_of_a_killed_program_says_so(py4j_driver, tmp_path):
    from support import DriverError

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f"engine-{dead}-1.json"
    stale.write_text(json.dumps({"address": "127.0.0.1", "port": 1, "secret": "0" * 64,
                                 "pid": int(dead)}))
    os.chmod(stale, 0o600)
    with pytest.raises(DriverError, match=f"pid {dead}.* is not running"):
        py4j_driver.call("attached", str(stale), "read-through-buffer", "a", 0)
