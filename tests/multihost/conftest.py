"""The multi-host tier: tests on emulated hosts (tools/hosts.py).

Every test here is marked ``multihost`` (tests/conftest.py, by directory);
``make test-fast`` leaves them out. Where namespaces cannot be made (not
root, no ``unshare``/``ip``/``tc``) the ``bed_tool`` fixture skips, saying why.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _hosts_module():
    if "hosts" not in sys.modules:
        spec = importlib.util.spec_from_file_location("hosts", ROOT / "tools" / "hosts.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["hosts"] = module
        spec.loader.exec_module(module)
    return sys.modules["hosts"]


@pytest.fixture(scope="session")
def bed_tool():
    """tools/hosts.py as a module; skips where no emulated host can be made."""
    hosts = _hosts_module()
    why = hosts.unavailable()
    if why:
        pytest.skip(why)
    return hosts
