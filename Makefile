# RAG Hub — `make run` serves the shipped kb on the embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# one worker more than cores: a quarter of the suite's time waits on servers, child processes and
# disks, which a third worker fills on 2 cores (docs/performance.md, "The test suite")
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')
# torch first, pinned: the CPU build lies on disk; anything else pulls a multi-GB CUDA build.
TORCH := torch==2.13.0

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# bytecode cached in __pycache__ (git ignores it): without it every process of the suite, every
# `rag-hub` it starts and every pytest worker compiles the tests and their assertions anew
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install install-dev lock run test test-slow test-all test-lowest mutate lint format clean

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
# time or need the machine to themselves; each pass prints its own time. `test` leaves out the
# tests marked slow (each takes seconds: processes killed and restarted, real models, large
# indexes, the browser), so that it stays under 5 minutes; `test-slow` runs them, `test-all`
# both, as .ci/run does. Exit 5 is pytest's "no test selected".
test: install-dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not serial and not slow" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m "serial and not slow" $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-slow: install-dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "slow and not serial" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m "slow and serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-all: test test-slow

# the floors of pyproject.toml installed together, in .venv-lowest: $(TORCH) first (the CPU build,
# as above: torch's own floor is not tried), then the lowest version pyproject.toml allows of every
# other dependency and format extra, with pytest and its plugins at their floors (uv's
# lowest-direct resolution: what those pull in comes at the newest version that fits), `pip check`,
# and a smoke selection of the suite (2 minutes in all on 2 cores, 75 s of tests): the HTTP API,
# both local engines, the bundled models and their ONNX export, the formats, the CLI, the watcher,
# MCP, and the LLM upstreams through the OpenAI-compatible chat API. The rest of the dev extra
# (ruff, Playwright, testcontainers, langchain-openai) stays out: it would lift openai's floor; and
# most of tests/openai_compat drive the hub with a newer openai client (client.responses).
# Copies, not uv's hard links: nltk (through llama-index-core) refuses to read a hard-linked file.
# $(LOWEST)/requirements.txt lists what was installed; the ONNX exports go to $(LOWEST)/models.
LOWEST := .venv-lowest
LOWEST_UV := $(LOWEST)/uv/bin/uv
LOWEST_RUNNERS := pytest pytest-timeout pytest-xdist
LOWEST_TESTS ?= tests/test_architecture.py tests/test_dependencies.py tests/test_config.py \
	tests/test_hub.py tests/test_api.py tests/http/test_ready.py tests/http/test_request_log.py \
	tests/store/test_engines.py tests/indexing/test_formats.py tests/watcher/test_watcher.py \
	tests/mcp/test_mcp_http.py tests/llm/test_generation.py \
	tests/embedding/test_onnx.py::test_fp32_export_gives_the_torch_vectors \
	tests/embedding/test_onnx.py::test_int8_stays_close_to_fp32 \
	tests/openai_compat/upstream/test_openai_tools.py::test_a_two_turn_tool_exchange \
	tests/openai_compat/upstream/test_openai_tools.py::test_a_json_schema_round_trip \
	'tests/openai_compat/test_openai_stream.py::test_client_disconnect_stops_the_upstream[chat]' \
	tests/cli/test_cli.py::test_index_twice_embeds_zero_the_second_time
$(LOWEST)/.installed: pyproject.toml requirements-dev.lock
	rm -rf $(LOWEST)
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/pip install --quiet --upgrade pip
	$(LOWEST)/bin/pip install --quiet $(TORCH)
	$(LOWEST)/bin/pip install --quiet --target $(LOWEST)/uv $$(grep -m1 '^uv==' requirements-dev.lock)
	$(LOWEST)/bin/pip freeze | grep '^torch==' > $(LOWEST)/torch.txt  # torch==2.13.0+cpu: kept
	$(LOWEST)/bin/python -c 'import re, sys, tomllib; \
		dev = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]; \
		print(*(r for r in dev if re.match(r"[\w.-]+", r)[0] in sys.argv[1:]), sep="\n")' \
		$(LOWEST_RUNNERS) > $(LOWEST)/runners.txt
	$(LOWEST_UV) pip compile pyproject.toml $(LOWEST)/torch.txt $(LOWEST)/runners.txt \
		--extra formats --resolution lowest-direct --python $(LOWEST)/bin/python --quiet \
		$(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS)) -o $(LOWEST)/requirements.txt
	$(LOWEST_UV) pip install --quiet --python $(LOWEST)/bin/python -r $(LOWEST)/requirements.txt \
		--link-mode copy $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS))
	$(LOWEST)/bin/pip install --quiet --no-deps -e .
	$(LOWEST)/bin/pip check
	touch $@

test-lowest: $(LOWEST)/.installed
	RAG_MODEL_CACHE=$(CURDIR)/$(LOWEST)/models $(LOWEST)/bin/python -m pytest -n $(TEST_WORKERS) \
		-m "not serial" $(LOWEST_TESTS) $(PYTEST_ARGS)

# mutation testing (mutmut, scripts/mutate.py): the rag_api modules changed vs origin/main (else
# HEAD), or MODULES="rag_api/jobs rag_api/http/forward.py"; each is run against its area's tests
# (tests/<package>, or scripts/mutate.py's TESTS_FOR) in a scratch copy; prints the score and
# the survivors (docs/architecture.md, "Mutation testing")
mutate: install-dev
	$(BIN)/python scripts/mutate.py $(MODULES) $(MUTATE_ARGS)

lint: install-dev
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) $(LOWEST) data .pytest_cache .ruff_cache
