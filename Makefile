# The two quickstart commands (see README.md) and a few helpers. Each target installs what it needs first:
# `run` only the main job's part (a first run in about 3 minutes on 2 cores), the others everything.
.PHONY: run test test-fast install install-main bench

QUESTION ?= Which sensor failed on day 117, and what did it read before failing?

run: install-main     ## install what the main job needs (host, Monty, the embedded model, documents), then run it
	@# what is ready here (a Docker engine that is not running is reported, and does not stop the run)
	.venv/bin/rlm plugins doctor || true
	@# exit 1 means "no final answer" (possible with another model, or --reply-format off): the run still happened
	.venv/bin/rlm run "$(QUESTION)" --context samples/station_log.txt --max-steps 4 || [ $$? -eq 1 ]

test: install         ## install everything, check style (ruff) and types (mypy), then the whole test suite (slow ones included)
	.venv/bin/ruff check .
	.venv/bin/mypy
	.venv/bin/pytest -m "slow or not slow"

test-fast: install    ## the fast tests only (the default of a bare `pytest`)
	.venv/bin/pytest

install:              ## everything: the host with its test tools, every plugin, Phoenix's venv
	bash scripts/install.sh

install-main:         ## only what `make run` needs; `make install` (or test) adds the rest to the same .venv
	bash scripts/install.sh --main

bench: install        ## measuring scripts: print figures, assert nothing
	.venv/bin/python benchmarks/cli_startup.py
	.venv/bin/python benchmarks/engine_overhead.py
