# kumitate: `make serve` and `make test` work on a fresh machine with Python 3.11+.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
BASE   ?= main
FUZZ_PORT ?= 8799
FUZZ_SEED ?= 20261122
# pytest-randomly's seed for `make test`: the test order (modules, then tests within each) and random.seed
# per test. Empty: file order. CI derives it from the commit; `make test TEST_SEED=<n>` repeats a run.
TEST_SEED ?= 1
TEST_ORDER = $(if $(TEST_SEED),-p randomly --randomly-seed=$(TEST_SEED))
# pytest-xdist workers for `make test` and `make fast` (1: one process). Most tests wait on servers they start,
# so 2 workers on 2 cores take about half the time; a module's tests stay on one worker (--dist loadscope),
# so a module-scoped server starts once.
TEST_WORKERS ?= 2
TEST_PROCS = $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope)
CLUSTER_PORT ?= 8080
CLUSTER_DIR  ?= var/cluster

.PHONY: help venv generate serve test test-package test-latest check lint docs docstrings drift types fast fmt fuzz lint-openapi import-proof conformance bench bench-http review clean cluster cluster-install cluster-stop cluster-restart cluster-status
.DEFAULT_GOAL := help

help:  ## list the targets (this text)
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "  variables: PYTHON=$(PYTHON) HOST=$(HOST) PORT=$(PORT) BASE=$(BASE) FUZZ_PORT=$(FUZZ_PORT) FUZZ_SEED=$(FUZZ_SEED) TEST_SEED=$(TEST_SEED) TEST_WORKERS=$(TEST_WORKERS)"

venv: $(VENV)/.installed  ## .venv with kumitate and its dev tools (pip install -e '.[dev]')

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,codegen,services]'
	touch $@

generate: venv  ## specs/ -> generated/
	$(PY) -m codegen

serve: venv  ## HTTP (/v1) + MCP (/mcp) on HOST:PORT
	$(PY) -m kumitate serve --host $(HOST) --port $(PORT)

test: venv  ## drift check + the whole test suite with coverage, in TEST_SEED's random order (what CI runs; -rs: why cluster/PostgreSQL tests skipped); all but test-package's
	$(PY) -m codegen --check
	mkdir -p var
	@echo "test order: $(if $(TEST_SEED),pytest-randomly seed $(TEST_SEED) (make test TEST_SEED=$(TEST_SEED) repeats it),file order)"
	$(PY) -m pytest -q -rs --durations=25 --cov --cov-report= -m "not package" $(TEST_ORDER) $(TEST_PROCS)
	@echo "coverage: $$($(PY) -m coverage report --format=total)% of kumitate, codegen and handlers (in-process lines)"

test-package: venv  ## a new team from the wheel: its ~100 dependencies in a fresh venv, the project's make test/serve/review (CI's own stage; minutes)
	$(PY) -m pytest -q -rs -m package tests/scaffold

test-latest:  ## the fast runtime/wire tests against the NEWEST fastmcp, mcp, litestar, pydantic (var/venv-latest); prints what broke
	bash .ci/test-latest

check: lint docs docstrings drift types fast  ## lint, the docs site, docstring coverage, drift, mypy, fast tests (before a commit)

lint: venv  ## ruff, the LLM-readiness lint, the format check, hadolint on the Dockerfile
	$(BIN)/ruff check .
	$(PY) -m codegen.readiness
	$(BIN)/hadolint Dockerfile
	$(BIN)/ruff format --check --exclude generated kumitate codegen handlers tests bench deploy docs/gen

# MkDocs and a plugin print banners about MkDocs' future on every build; these two variables turn them off.
docs: venv  ## the docs site (mkdocs.yml: docs/, the README as home, the API reference by mkdocstrings) into site/; --strict fails on any warning
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --quiet

docstrings: venv  ## docstring coverage of kumitate/ and codegen/ public classes (>= 85%) and functions (>= 80%); --list names the gaps
	$(PY) -m codegen.docstrings

drift: venv  ## generated/ matches specs/ (python -m codegen --check)
	$(PY) -m codegen --check

types: venv  ## mypy, then codegen.raises (each tool raises only the error codes its spec declares)
	$(BIN)/mypy
	$(PY) -m codegen.raises

fast: venv  ## the tests not marked slow
	$(PY) -m pytest -q -m "not slow" $(TEST_PROCS)

fmt: venv  ## fix what ruff can, then format (what `make lint` checks)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format --exclude generated kumitate codegen handlers tests bench docs/gen

fuzz: venv  ## schemathesis on every HTTP operation, then every tool over MCP, then sequences walking the spec's links on both (with invariants); fixed seed
	$(PY) -m codegen.fuzz.http --port $(FUZZ_PORT) --seed $(FUZZ_SEED)
	$(PY) -m codegen.fuzz.mcp --seed $(FUZZ_SEED)

lint-openapi: venv  ## Redocly CLI and Spectral (npm, pinned, under var/openapi-lint) on generated/openapi.json and the served document, and a new project's: 0 errors (.redocly.yaml, .spectral.yaml)
	$(PY) -m codegen.openapi_lint

import-proof: venv  ## kumitate import openapi over the real documents tests/data/openapi-corpus/proof.yaml lists as proven (ALL=1: all 24, the page in var/import-proof.md): each facade generated, linted, diffed by Optic, fuzzed in front of Prism (npm, pinned)
	$(PY) -m codegen.import_proof $(if $(ALL),,--proven) --results var/import-proof.md

conformance: venv  ## the official MCP conformance suite (npm, pinned; Node 22 from npm) against the conformance service and /mcp
	$(PY) -m codegen.conformance

bench: venv  ## benchmarks; results go in docs/BENCHMARKS.md
	$(PY) -m bench

bench-http: venv  ## HTTP and MCP throughput and p99 under wrk (apt-get install wrk) vs the bare baselines; prints Markdown
	$(PY) -m bench.wrk_bench

review: venv  ## spec review against BASE of the working tree (uncommitted specs/ changes) or else HEAD; fails on unexcused breaking changes
	$(PY) -m kumitate diff $(BASE)

cluster-install:  ## apt-get PostgreSQL, Redis, nginx and supervisor from Debian (as root; does nothing when present)
	$(PYTHON) -m deploy.cluster install

cluster: venv  ## PostgreSQL + Redis + two instances (under supervisord) + nginx on loopback; last line: the LB's URL
	$(PY) -m deploy.cluster start --port $(CLUSTER_PORT) --dir $(CLUSTER_DIR)

cluster-stop:  ## stop exactly what `make cluster` started (pid files under CLUSTER_DIR)
	$(PYTHON) -m deploy.cluster stop --dir $(CLUSTER_DIR)

cluster-restart:  ## rolling restart of the instances, one at a time, losing no request (a deploy)
	$(PYTHON) -m deploy.cluster restart --dir $(CLUSTER_DIR)

cluster-status:  ## is the cluster under CLUSTER_DIR up (its port comes from its state file)
	$(PYTHON) -m deploy.cluster status --dir $(CLUSTER_DIR)

clean:  ## remove var/ (local data, the venvs of .ci/multi-python), site/ (make docs), .hypothesis and the pytest cache
	rm -rf var site .hypothesis .pytest_cache
