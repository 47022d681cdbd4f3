# msmq-harness — every target bootstraps its own virtual environment.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup browser tshark run test lint bench fuzz mutants clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# The HTML report is checked in a real headless browser (Debian's chromium).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (for the HTML report test)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# The generated Wireshark dissector is checked with tshark (Debian's tshark; not setuid).
tshark:
	@command -v tshark >/dev/null 2>&1 || { \
	  echo "installing tshark (for the Wireshark dissector test)"; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | $(SUDO) debconf-set-selections; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq tshark >/dev/null; }

run: setup
	$(BIN)/msmq-harness run cases --junit reports/junit.xml --json reports/results.json --html reports/report.html
	$(BIN)/msmq-harness demo --out reports/demo

test: setup browser tshark
	$(BIN)/python -m pytest -n 6 --dist loadgroup -q --durations=20

lint: setup
	$(BIN)/ruff check packets harness tests benchmarks fuzz examples tools
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m tools.function_size
	$(BIN)/python -m tools.inline_imports
	$(BIN)/python -m tools.private_imports
	$(BIN)/python -m tools.reexports

bench: setup
	$(BIN)/python -m benchmarks

fuzz: setup
	$(BIN)/python fuzz/fuzz_codec.py --iterations $${FUZZ_ITERATIONS:-1000000}

mutants: setup
	$(BIN)/python -m harness.cases.mutants -n 2

clean:
	rm -rf $(VENV) reports build *.egg-info .pytest_cache .mypy_cache .ruff_cache
