# RAG Hub — `make run` serves the shipped kb on the embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_WORKERS ?= auto
# torch first, pinned: the CPU build lies on disk; anything else pulls a multi-GB CUDA build.
TORCH := torch==2.13.0

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-dev lock run test lint format clean

# Two lock files, both written by `make lock` from pyproject.toml, pin what CI tested:
#   requirements.lock      the server: the dependencies and every format extra (`make install`,
#                          `make run`); no pytest, ruff, Playwright or testcontainers
#   requirements-dev.lock  the same pins plus the dev extra (`make install-dev`, `make test`,
#                          `make lint`); compiled with requirements.lock as its constraints
# torch is in neither: it is installed first ($(TORCH)), and the locks are compiled against its
# CPU wheel (found where pip finds it, PIP_FIND_LINKS), so they hold no nvidia-* or triton.
install: $(VENV)/.runtime
install-dev: $(VENV)/.dev

$(VENV)/.torch:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	touch $@

$(VENV)/.runtime: requirements.lock pyproject.toml | $(VENV)/.torch
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/pip check
	touch $@

$(VENV)/.dev: requirements-dev.lock pyproject.toml | $(VENV)/.torch
	$(BIN)/pip install --quiet -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/pip check
	touch $@ $(VENV)/.runtime

# after a change of dependencies in pyproject.toml: the pins that still fit are kept;
# `make lock UPGRADE=1` moves every pin to the newest release that fits
LOCK := $(BIN)/uv pip compile pyproject.toml - --quiet --python-version 3.11 \
	--no-emit-package torch --custom-compile-command 'make lock' \
	$(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS)) $(if $(UPGRADE),--upgrade)
lock: install-dev
	echo '$(TORCH)' | $(LOCK) --extra formats -o requirements.lock
	echo '$(TORCH)' | $(LOCK) --extra dev -c requirements.lock -o requirements-dev.lock
	@! grep -iE '^(nvidia|triton)' requirements.lock requirements-dev.lock \
		|| { echo "the locks hold CUDA packages: set PIP_FIND_LINKS to the torch CPU wheel's folder"; exit 1; }

# index first (progress bar, and the first query finds everything), then serve and keep watching
run: install
	$(BIN)/rag-hub index
	$(BIN)/rag-hub serve --watch --host $(HOST) --port $(PORT)

# the suite on every core (pytest-xdist), then the tests marked serial alone: they measure CPU
# time or need the machine to themselves; each pass prints its own time
test: install-dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not serial" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m serial $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) data .pytest_cache .ruff_cache
