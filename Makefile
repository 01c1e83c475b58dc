# Partita — every target installs what it needs into .venv first.
#   make up     run the local cluster (etcd, 3 storage nodes, router) on http://127.0.0.1:8000
#   make test   install test dependencies and run the whole suite
#   make lint   ruff + mypy + import contracts (lint-imports)
#   make bench  YCSB A/B/C against Partita and dynalite (installs dynalite from npm), a sweep of
#               latency against offered load, and the report (docs/benchmarks.md + PNG plots)
#   make sim    the deterministic simulations in tests/sim (replication, Doorman), SEEDS=N seeds each (default 200)
#   make doorman-report  Doorman simulation figures and plots into docs/doorman.md
#   make native compile the router's hot path with mypyc (native-modules.txt); up, test
#               and bench do it first. `make pure` removes the compiled modules again.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NATIVE_STAMP := $(VENV)/.native
NATIVE_SOURCES := $(shell grep -v '^\#' native-modules.txt)
# Three workers on the 2-core machine: most integration tests wait on timers (hot windows,
# repairs, leases), so a third worker fills the idle time. pytest took 844 s with three
# against 967 s with two (that run still with the split tests' 20 s hot window, about 40 s
# of one worker's time more), every test passing; 789 s in a fresh clone's make test
# (2026-11-30).
PYTEST_WORKERS ?= 3
ARGS ?=

.PHONY: up test lint bench proto clean venv native pure prometheus-tools sim

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

# promtool (alert rule tests) and prometheus (the scrape test): Debian's package. Where
# it cannot be installed (no root, no apt) those tests skip and say why.
prometheus-tools:
	@command -v promtool > /dev/null && command -v prometheus > /dev/null \
		|| (command -v apt-get > /dev/null && [ "$$(id -u)" = 0 ] \
			&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) > /dev/null) \
		|| echo "prometheus/promtool not installed: their tests will be skipped"

test: $(NATIVE_STAMP) prometheus-tools
	PARTITA_EXPECT_NATIVE=1 $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --max-worker-restart 0 --timeout 600 tests $(ARGS)

# Every simulation suite under tests/sim reads SEEDS; `make test` runs them with 200.
SEEDS ?= 200
sim: $(STAMP)
	SEEDS=$(SEEDS) $(PY) -m pytest -q -n $(PYTEST_WORKERS) --timeout 3600 tests/sim $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check services operator tests bench
	$(VENV)/bin/ruff format --check services operator tests bench
	$(VENV)/bin/mypy services operator
	PYTHONPATH=services:operator $(VENV)/bin/lint-imports

# YCSB against dynalite, then latency against offered load, then the report: tables in
# docs/benchmarks.md (its generated section) and PNG plots in docs/img/.
# Each target's peak over the numbers of requests in flight (bench/ycsb.py's docstring).
YCSB_ARGS ?= --concurrency 16,32,64,128,256 --duration 8
SWEEP_ARGS ?=
bench: $(NATIVE_STAMP)
	mkdir -p bench/results
	$(PY) -m bench.ycsb --out bench/results/ycsb-latest.json $(YCSB_ARGS) $(ARGS)
	$(PY) -m bench.sweep --out bench/results/sweep-latest.json $(SWEEP_ARGS)
	$(PY) -m bench.report --ycsb bench/results/ycsb-latest.json --sweep bench/results/sweep-latest.json \
		--doc docs/benchmarks.md --images docs/img

clean:
	rm -rf $(VENV) services/partita/_proto/*_pb2*.py* build *.egg-info
	find services operator -name '*.so' -delete

.PHONY: doorman-report

doorman-report: $(STAMP)
	$(PY) -m bench.doorman_sim
