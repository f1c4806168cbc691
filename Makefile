# mxkv — the commands a newcomer needs: `make tutorial`, `make test-fast` (the
# inner loop) and `make test` (everything, what CI runs).
# Each sets up what is missing (a .venv with the package and its test extras,
# py4j and JPype1 among them; Debian's clojure package; the compiled bridge
# classes), then runs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.mxkv-installed

.PHONY: all setup test test-lane2 test-fast test-python test-interop test-clojure tutorial clojure golden bench bench-quick bench-record bench-dist bench-multihost bench-ops bench-smoke bench-sweeps gpu-check gpu-check-quick lint clean

all: test

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
	  || { echo "mxkv needs Python >= 3.9 (found: $$($(PYTHON) --version 2>&1))"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) \
	  || { echo "could not create $(VENV): install python3-venv (apt-get install -y python3-venv)"; exit 1; }
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test,dist]'
	@touch $@

# The JVM side: Debian's clojure package when no Clojure is found, and javac.
clojure: $(STAMP)
	@bash tools/ensure-clojure.sh

# The Clojure suite runs inside test-interop, over Py4J and over JPype.
# Much of both suites waits (JVM and Ray start-ups, jobs polled to their
# end, grace periods), so they run side by side in two lanes of about the
# same length, each printed in one piece as it ends (--output-sync): the
# Python suite, and interop-tests followed by the emulated-host tier
# (tests/multihost: its hosts have their own process tables and /dev/shm);
# then the whole-job tests (`launch`) of both, one suite at a time: they
# count this checkout's Ray processes, which the other suite's jobs would
# change. MARKS="..." selects tests in test-python and test-interop.
test: clojure
	@s=0; $(MAKE) --no-print-directory -j2 --output-sync=target test-python test-lane2 \
	  MARKS="not launch and not multihost" || s=1; \
	$(PY) -m pytest -q -m launch tests || s=1; \
	$(PY) -m pytest -q -m launch interop-tests || s=1; exit $$s

# make test's second lane
test-lane2: clojure
	@s=0; $(PY) -m pytest -q -m "not launch" interop-tests || s=1; \
	$(PY) -m pytest -q -m "multihost and not launch" tests || s=1; exit $$s

# The inner loop: every test that needs no JVM, no Ray cluster and not the
# docs runner, nor the emulated hosts (tests/conftest.py marks those by
# directory and fixture), so no Clojure set-up either. About 30 s on 2 cores;
# `make test` runs the rest. Property tests draw 150 examples here, 1000 in
# `make test` (the hypothesis profile, tests/conftest.py); the whole-tree lint
# checks are `make lint`'s.
FAST_MARKS := not (jvm or ray or docs or multihost or lint)
test-fast: $(STAMP)
	MXKV_HYPOTHESIS_PROFILE=fast $(PY) -m pytest -q -m "$(FAST_MARKS)" tests

# The Python suite launches Clojure workers too (tests/distributed): it needs the JVM side.
test-python: clojure
	$(PY) -m pytest -q $(if $(MARKS),-m "$(MARKS)") tests

# Python and Clojure together: the tutorial, the Clojure suite, parity and
# sharing over both transports; the wheel installed in a throwaway venv.
test-interop: clojure
	$(PY) -m pytest -q $(if $(MARKS),-m "$(MARKS)") interop-tests

# The Clojure suite alone, over one transport (TRANSPORT=jpype for the other).
test-clojure: clojure
	$(VENV)/bin/mxkv test --transport $(or $(TRANSPORT),py4j)

# Both tutorials; the NDArray one saves a file named "filename", so it runs
# in a scratch directory.
tutorial: clojure
	$(VENV)/bin/mxkv tutorial
	d="$$(mktemp -d)"; cd "$$d" && "$(CURDIR)/$(VENV)/bin/mxkv" tutorial "$(CURDIR)/clojure/tutorial/ndarray.clj"; \
	  s=$$?; rm -rf "$$d"; exit $$s

# Regenerate the MXNet 1.9.1 golden files the parity tests compare against.
golden:
	bash tools/mxnet-golden.sh

# The rows, then the sweeps (how cost grows with keys, size and devices).
bench: $(STAMP)
	bash benchmarks/run.sh full $(BENCH_ARGS)

# Does every benchmark still run? Each script's --help (or import), and each
# row and sweep's first point once, mxkv alone: about 30 s, no MXNet venv
# (benchmarks/smoke.py). CI runs it after `make test` (.ci/run).
bench-smoke: $(STAMP)
	$(PY) benchmarks/smoke.py

bench-quick: $(STAMP)
	bash benchmarks/run.sh quick $(BENCH_ARGS)

# The sweeps alone (BENCH_ARGS="--quick", "--record", "--only keys").
bench-sweeps: $(STAMP)
	bash benchmarks/run.sh sweeps $(BENCH_ARGS)

# Distributed jobs (dist_sync, ResNet-50's parameters) against MXNet's ps-lite.
bench-dist: $(STAMP)
	bash benchmarks/run.sh dist $(BENCH_ARGS)

# ResNet-50 across 2 emulated hosts at 1 Gbit/s each (tools/hosts.py; root):
# mxkv, gloo and MXNet's ps-lite, the floor, the bytes on each link.
MXNET_VENV ?= $(CURDIR)/.venv-mxnet
bench-multihost: $(STAMP)
	MXNET_VENV=$(MXNET_VENV) $(PY) benchmarks/multihost_bench.py $(BENCH_ARGS)

# Operator calls (elementwise, broadcast, reduce, dot, Convolution at 1 KB and 64 MB)
# against MXNet 1.9.1 and raw numpy, interleaved (benchmarks/ops_bench.py).
bench-ops: $(STAMP)
	bash benchmarks/run.sh ops $(BENCH_ARGS)

# A full run (rows and sweeps) recorded in benchmarks/results and docs/benchmarks.md.
bench-record: $(STAMP)
	bash benchmarks/run.sh full --record $(BENCH_ARGS)

# On a machine with an NVIDIA GPU: real/virtual GPU tests and the bandwidth
# benchmark, in its own .venv-gpu (docs/gpu.md).
gpu-check:
	bash tools/gpu-check.sh

# At most 5 minutes from a clean clone: only the GPU run's packages, the
# requires_gpu tests on real and 4 virtual GPUs, the stress test, gpu_bench
# x2, one summary (gpu-check-summary.txt). Without a GPU: the simulated part,
# then one line saying so, exit 0.
gpu-check-quick:
	bash tools/gpu-check-quick.sh

# Fails on any finding; CI runs it before the tests. import_cycles fails on an
# import cycle not listed in tools/import_cycles_allow.txt; docstrings when
# fewer public modules, classes and functions than its FLOOR carry one (or
# than its OWN_FLOOR carry one of their own, not inherited).
lint: $(STAMP)
	$(VENV)/bin/ruff check python tests tools benchmarks interop-tests examples setup.py conftest.py
	$(PY) tools/import_cycles.py
	$(PY) tools/docstrings.py
	$(PY) tools/mypy_baseline.py

clean:
	rm -rf $(VENV) clojure/classes build python/*.egg-info python/mxkv/_clojure
