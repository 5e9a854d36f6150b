# Two commands: `make demo` and `make test`. Both create .venv with pip when missing.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup bench clean dev chromium

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: pip takes the CPU wheel from local disk; unpinned pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/goodput demo

# The report's browser test needs Debian's chromium; without it that one test is skipped.
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get install -y -qq chromium >/dev/null 2>&1 \
	  || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
	  || echo "chromium could not be installed: the report's browser test will be skipped"

test: $(STAMP) chromium
	$(BIN)/python -m pytest -n 2 tests

dev: $(STAMP)
	$(BIN)/dagster dev

bench: $(STAMP)
	$(BIN)/python bench/ingest.py

clean:
	rm -rf data out .pytest_cache
