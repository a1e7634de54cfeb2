# Two commands on a fresh machine: `make demo` and `make test`. Both set everything up first
# (a virtualenv in .venv with the pinned dependencies) and are fast on the second run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_OUT ?= demo_out

.PHONY: setup demo test lint format bench clean system-deps

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/hyperframes demo --out $(DEMO_OUT)

lint: setup
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks

format: setup
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

test: setup lint
	$(BIN)/pytest -q

bench: setup
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_read.py
	$(BIN)/python benchmarks/bench_open.py
	$(BIN)/python benchmarks/bench_predict.py
	$(BIN)/python benchmarks/readme_table.py

# System libraries the optional decoders need (torchcodec loads FFmpeg's shared libraries).
system-deps:
	@if ! ldconfig -p | grep -q libavcodec; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq ffmpeg >/dev/null; \
	  else echo "install the FFmpeg libraries (apt-get install ffmpeg) for torchcodec"; fi; \
	fi

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
