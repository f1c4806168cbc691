"""Remove each event wait of the comms' stream discipline in turn and check
that a test fails without it (docs/gpu.md, "Streams").

    .venv/bin/python tools/stream_mutations.py

Each mutation replaces one wait or synchronisation in
python/mxkv/kvstore/comm/{streams,copies}.py, runs the simulated-GPU stream
tests, and restores the file. Exits 1 when a mutation leaves every test
passing (a wait no test needs) or its line is no longer found.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMM = ROOT / "python" / "mxkv" / "kvstore" / "comm"
TESTS = ["tests/gpu/test_gpu_streams.py", "tests/gpu/test_gpu_nccl.py",
         "tests/gpu/test_gpu_close.py"]

# (file, the line as written, what the mutation leaves instead)
MUTATIONS = [
    ("streams.py", "be.wait(mine, be.record(theirs, dev), dev)  # 1. in", "pass"),
    ("streams.py", "be.wait(theirs, be.record(mine, dev), dev)", "pass"),
    ("streams.py", "if host:\n                    be.synchronize(mine)",
     "if host:\n                    pass"),
    ("streams.py", "be.synchronize(be.comm(dev))\n\n    def close", "pass\n\n    def close"),
    ("copies.py", "be.wait(d_stream, be.record(s_stream, src_dev), dst_dev)   # the source's",
     "pass  # the source's"),
    ("copies.py", "be.wait(s_stream, be.record(d_stream, dst_dev), src_dev)   # and is read",
     "pass  # and is read"),
    ("copies.py", "be.wait(s_stream, stage.free, src_dev)", "pass"),
    ("copies.py", "be.wait(d_stream, be.record(s_stream, src_dev), dst_dev)   # downloaded",
     "pass  # downloaded"),
    ("copies.py", "be.sync_event(self.free)  # the old block", "pass  # the old block"),
]


def main() -> int:
    bad = 0
    for name, line, instead in MUTATIONS:
        path = COMM / name
        text = path.read_text()
        if text.count(line) != 1:
            print(f"{name}: line not found once: {line!r}")
            bad += 1
            continue
        path.write_text(text.replace(line, instead))
        try:
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  *TESTS], cwd=ROOT, capture_output=True, text=True)
        finally:
            path.write_text(text)
        failed = [ln.split("::", 1)[1].split(" ")[0] for ln in run.stdout.splitlines()
                  if ln.startswith("FAILED")]
        print(f"{name}: without {line.splitlines()[0].strip()!r}: {len(failed)} failed"
              f"{' (' + failed[0] + ', ...)' if failed else ''}")
        bad += not failed
    print("every wait is needed by a test" if not bad else f"{bad} mutation(s) not caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
