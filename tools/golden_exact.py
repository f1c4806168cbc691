"""Record tests/golden/exact.json from the real Apache MXNet 1.9.1: optimizers
run 200 steps through an updater, and the ``nd.*_update`` operators, each
result as the hex of its bytes (``tests/test_exact_steps.py`` compares bit
for bit). The cases are ``tests/parity/exact_steps.py``.

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_exact.py
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "exact.json"


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import mxnet as mx  # the reference, only here
    from parity import exact_steps as ex
    doc = {"generator": "tools/golden_exact.py", "mxnet": mx.__version__,
           "optimizers": {c["name"]: ex.run_optimizer(mx, c) for c in ex.OPTIMIZER_CASES}}
    if hasattr(ex, "OPERATOR_CASES"):
        doc["operators"] = {c["name"]: ex.run_operator(mx, c) for c in ex.OPERATOR_CASES}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(doc['optimizers'])} optimizer and {len(doc.get('operators', {}))} "
          f"operator cases to {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
