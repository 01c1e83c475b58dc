# Partita — every target installs what it needs into .venv first.
#   make up     run the local cluster (etcd, 3 storage nodes, router) on http://127.0.0.1:8000
#   make test   install test dependencies and run the whole suite
#   make lint   ruff + mypy
#   make bench  YCSB A/B against Partita and dynalite (installs dynalite from npm)
#   make sim    the deterministic simulations in tests/sim, SEEDS=N seeds each (default 200)
#   make native compile the router's hot path with mypyc (native-modules.txt); up, test
#               and bench do it first. `make pure` removes the compiled modules again.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NATIVE_STAMP := $(VENV)/.native
NATIVE_SOURCES := $(shell grep -v '^\#' native-modules.txt)
PYTEST_WORKERS ?= 2
ARGS ?=

.PHONY: up test lint bench proto clean venv native pure sim

venv: $(STAMP)

# setup.py maps every package explicitly, so a new package needs a reinstall.
$(STAMP): pyproject.toml setup.py $(wildcard proto/partita/*.proto) $(shell find services operator -name __init__.py -not -path "*/_proto/*")
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dev,bench]'
	$(PY) -m partita.common.proto_codegen . > /dev/null
	touch $(STAMP)

native: $(NATIVE_STAMP)

# In place, next to each .py, where the editable install imports it from.
$(NATIVE_STAMP): $(STAMP) native-modules.txt setup.py $(NATIVE_SOURCES)
	find services operator -name '*.so' -delete
	PARTITA_COMPILE=1 $(PY) setup.py --quiet build_ext --inplace > $(VENV)/native-build.log 2>&1 \
		|| (tail -30 $(VENV)/native-build.log; exit 1)
	# build_ext copies unchanged extensions with their old times; the suite compares
	# each compiled module's time with its source's (tests/conftest.py).
	find services operator -name '*.so' -exec touch {} +
	touch $(NATIVE_STAMP)

pure:
	find services operator -name '*.so' -delete
	rm -f $(NATIVE_STAMP)

proto: $(STAMP)
	$(PY) -m partita.common.proto_codegen .

up: $(NATIVE_STAMP)
	$(VENV)/bin/partita up $(ARGS)

test: $(NATIVE_STAMP)
	PARTITA_EXPECT_NATIVE=1 $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --timeout 600 tests $(ARGS)

# Every simulation suite under tests/sim reads SEEDS; `make test` runs them with 200.
SEEDS ?= 200
sim: $(STAMP)
	SEEDS=$(SEEDS) $(PY) -m pytest -q -n $(PYTEST_WORKERS) --timeout 3600 tests/sim $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check services operator tests bench
	$(VENV)/bin/ruff format --check services operator tests bench
	$(VENV)/bin/mypy services operator

bench: $(NATIVE_STAMP)
	$(PY) -m bench.ycsb $(ARGS)

clean:
	rm -rf $(VENV) services/partita/_proto/*_pb2*.py* build *.egg-info
	find services operator -name '*.so' -delete
