# Set-up on a fresh machine is part of every target: `make demo`, `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_QUERY ?= load the configuration file and reject unknown keys

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# the CPU build of torch first: an unpinned torch pulls a multi-GB CUDA build
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[local,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sai --embedder local --root sai
	$(BIN)/sai --embedder local --root sai --query-only --query "$(DEMO_QUERY)"
	$(BIN)/sai --embedder local --root sai duplicates --max-clusters 3

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check sai tests benchmarks

bench: $(STAMP)
	for b in benchmarks/*.py; do case $$b in */_*) continue;; esac; echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) sai/.index .index
