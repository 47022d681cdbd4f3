# msmq-harness — every target bootstraps its own virtual environment.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: setup run test lint bench fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/msmq-harness demo --out reports

test: setup
	$(BIN)/python -m pytest -n 2 -q

lint: setup
	$(BIN)/ruff check packets harness tests benchmarks
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m benchmarks

fuzz: setup
	$(BIN)/python fuzz/fuzz_codec.py --iterations $${FUZZ_ITERATIONS:-1000000}

clean:
	rm -rf $(VENV) reports build *.egg-info .pytest_cache .mypy_cache .ruff_cache
