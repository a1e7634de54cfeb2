# Two commands on a fresh machine: `make demo` and `make test`. Both set everything up first
# (a virtualenv in .venv with the pinned dependencies) and are fast on the second run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_OUT ?= demo_out

# The coverage floor of the full suite (92% measured, minus a margin; raise it as tests grow).
# `make test COVERAGE=1` (what CI runs) measures it; tracing costs ~25% more test time, so the
# developer's `make test` leaves it out.
COV_FLOOR ?= 85
COVERAGE ?= 0
ifeq ($(COVERAGE),1)
COV_ARGS := --cov=hyperframes --cov-report=term:skip-covered --cov-fail-under=$(COV_FLOOR)
endif

.PHONY: setup demo docs test test-fast test-scale lint typecheck format bench bench-peers clean system-deps

$(STAMP): requirements.lock pyproject.toml setup.py src/hyperframes/store/_jpegcrop.c src/hyperframes/_core/_pixels.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/hyperframes demo --out $(DEMO_OUT)

# The docs site (mkdocs-material + mkdocstrings, pinned in the lock): strict, so a broken link or
# reference fails the build; into site/ (git-ignored). The CLI reference and the performance page
# are generated at build time (docs/_hooks.py).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

lint: setup
	$(BIN)/ruff format --check src tests benchmarks examples docs/_hooks.py
	$(BIN)/ruff check src tests benchmarks examples docs/_hooks.py

format: setup
	$(BIN)/ruff format src tests benchmarks examples docs/_hooks.py
	$(BIN)/ruff check --fix src tests benchmarks examples docs/_hooks.py

typecheck: setup
	$(BIN)/mypy

# The whole gate (CI runs it with COVERAGE=1): format, lint, types, every test. Two pytest-xdist
# workers, a test file per worker at a time (its module fixtures built once); TEST_WORKERS=0
# runs it in one process.
TEST_WORKERS ?= 2
ifeq ($(TEST_WORKERS),0)
XDIST_ARGS :=
else
XDIST_ARGS := -n $(TEST_WORKERS) --dist loadfile
endif
test: setup lint typecheck
	$(BIN)/pytest -q --durations=30 $(XDIST_ARGS) $(COV_ARGS)

# The development tier: format, lint and the tests not marked slow (no subprocess builds, no
# training runs); about a minute.
test-fast: setup lint
	$(BIN)/pytest -q -m "not slow"

# The scale tier: the annotation peak test at WebVid-10M's size (10^7 rows: 377 s and 883 MiB
# measured on 2 shared cores); the gate runs it at 10^5 rows.
test-scale: setup
	HYPERFRAMES_MANY_ROWS=10000000 $(BIN)/pytest -q -p no:randomly -o timeout=7200 \
		tests/test_large_annotations.py::test_many_rows_build_in_under_a_gigabyte

bench: setup
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_read.py
	$(BIN)/python benchmarks/bench_open.py
	$(BIN)/python benchmarks/bench_predict.py
	$(BIN)/python benchmarks/bench_train_wait.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_tracks.py
	$(BIN)/python benchmarks/bench_pipeline.py
	$(BIN)/python benchmarks/bench_s3.py
	$(BIN)/python benchmarks/readme_table.py

# The peers side by side (benchmarks/bench_peers.py): LitData from the project's lock, MosaicML
# Streaming from its own virtualenv (its pins conflict with the lock), pinned in
# benchmarks/requirements-peers.lock.
PEERS_VENV := .venv-peers
$(PEERS_VENV)/.installed: benchmarks/requirements-peers.lock
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --quiet --disable-pip-version-check -r benchmarks/requirements-peers.lock
	touch $@

bench-peers: setup $(PEERS_VENV)/.installed
	$(BIN)/python benchmarks/bench_peers.py
	$(BIN)/python benchmarks/readme_table.py

# System packages: the FFmpeg libraries torchcodec loads; Chromium for the report page's and the
# docs site's browser tests.
system-deps:
	@if ! ldconfig -p | grep -q libavcodec; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq ffmpeg >/dev/null; \
	  else echo "install the FFmpeg libraries (apt-get install ffmpeg) for torchcodec"; fi; \
	fi
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "install Chromium (apt-get install chromium) for the report's browser test"; fi; \
	fi

clean:
	rm -rf $(VENV) $(DEMO_OUT) site .pytest_cache .ruff_cache
