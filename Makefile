# The two quickstart commands (see README.md) and a few helpers. Each target installs what it needs first.
.PHONY: run test test-fast install bench

QUESTION ?= Which sensor failed on day 117, and what did it read before failing?

run: install          ## install everything, then the main job: a real RLM run on the sample document
	@# what is ready here (a Docker engine that is not running is reported, and does not stop the run)
	.venv/bin/rlm plugins doctor || true
	@# exit 1 means "no final answer" (possible with another model, or --reply-format off): the run still happened
	.venv/bin/rlm run "$(QUESTION)" --context samples/station_log.txt --max-steps 4 || [ $$? -eq 1 ]

test: install         ## install everything, then the whole test suite (slow integration tests included)
	.venv/bin/pytest -m "slow or not slow"

test-fast: install    ## the fast tests only (the default of a bare `pytest`)
	.venv/bin/pytest

install:
	bash scripts/install.sh

bench: install        ## measuring scripts: print figures, assert nothing
	.venv/bin/python benchmarks/cli_startup.py
	.venv/bin/python benchmarks/engine_overhead.py
