# The two quickstart commands (see README.md) and a few helpers. Each target installs what it needs first.
.PHONY: run test test-fast install bench

run: install          ## install everything, then the main job
	.venv/bin/rlm plugins doctor

test: install         ## install everything, then the whole test suite (slow integration tests included)
	.venv/bin/pytest -m "slow or not slow"

test-fast: install    ## the fast tests only (the default of a bare `pytest`)
	.venv/bin/pytest

install:
	bash scripts/install.sh

bench: install        ## measuring scripts: print figures, assert nothing
	.venv/bin/python benchmarks/cli_startup.py
