# Two commands: `make demo` and `make test`. Both create .venv with pip when missing.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-cpu setup bench clean dev chromium

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: pip takes the CPU wheel from local disk; unpinned pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	# setuptools tells every editable install of a flat layout (the packages beside the project's other folders)
	# to mind same-named folders: information, not a problem with this package; a fresh clone's first screen is ours
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

# The demo's runs are recorded in data/dagster, which `make dev` opens: the asset catalog shows them.
DAGSTER_HOME := $(CURDIR)/data/dagster

demo: $(STAMP)
	DAGSTER_HOME=$(DAGSTER_HOME) $(BIN)/goodput demo

# The report's browser test needs Debian's chromium; without it that one test is skipped.
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get install -y -qq chromium >/dev/null 2>&1 \
	  || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
	  || echo "chromium could not be installed: the report's browser test will be skipped"

# loadscope: a module's tests on one worker, so its fixtures are built once; modules in the order
# tests/conftest.py gives (longest first), not sorted by test count.
test: $(STAMP) chromium
	$(BIN)/python -m pytest -n 2 --dist loadscope --no-loadscope-reorder tests

# The suite again, with each module's CPU seconds (fixtures and child processes included), costliest first.
test-cpu: $(STAMP) chromium
	rm -f /tmp/goodput-test-cpu.tsv
	GOODPUT_TEST_CPU=/tmp/goodput-test-cpu.tsv $(BIN)/python -m pytest -n 2 --dist loadscope --no-loadscope-reorder tests; \
	  $(BIN)/python -m tests.cpu_times /tmp/goodput-test-cpu.tsv

# Dagster's UI on the warehouse and source `make demo` built (when it has run), with its run history.
dev: $(STAMP)
	@mkdir -p $(DAGSTER_HOME)
	DAGSTER_HOME=$(DAGSTER_HOME) \
	  GOODPUT_DB=$${GOODPUT_DB:-$$(test -f data/demo.duckdb && echo data/demo.duckdb || echo data/warehouse.duckdb)} \
	  GOODPUT_SOURCE=$${GOODPUT_SOURCE:-$$(test -d out/demo/source && echo out/demo/source || echo samples/demo_source)} \
	  $(BIN)/dagster dev

bench: $(STAMP)
	$(BIN)/python bench/ingest.py
	$(BIN)/python -m pytest -m bench tests  # the model-quality bars (tests/test_lemon_accuracy.py)

clean:
	rm -rf data out .pytest_cache
