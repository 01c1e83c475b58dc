# Partita — every target installs what it needs into .venv first.
#   make up     run the local cluster (etcd, 3 storage nodes, router) on http://127.0.0.1:8000
#   make test   install test dependencies and run the whole suite
#   make lint   ruff + mypy
#   make bench  YCSB A/B against Partita and dynalite (installs dynalite from npm)

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_WORKERS ?= 2
ARGS ?=

.PHONY: up test lint bench proto clean venv

venv: $(STAMP)

# setup.py maps every package explicitly, so a new package needs a reinstall.
$(STAMP): pyproject.toml setup.py $(wildcard proto/partita/*.proto) $(shell find services operator -name __init__.py -not -path "*/_proto/*")
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dev,bench]'
	$(PY) -m partita.common.proto_codegen . > /dev/null
	touch $(STAMP)

proto: $(STAMP)
	$(PY) -m partita.common.proto_codegen .

up: $(STAMP)
	$(VENV)/bin/partita up $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --timeout 600 tests $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check services operator tests bench
	$(VENV)/bin/ruff format --check services operator tests bench
	$(VENV)/bin/mypy services operator

bench: $(STAMP)
	$(PY) -m bench.ycsb $(ARGS)

clean:
	rm -rf $(VENV) services/partita/_proto/*_pb2*.py* build *.egg-info
