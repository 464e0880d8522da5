"""The Docker engine of the docker runtime's own tests, for the host's suites that run the real runtime.

``prepare_engine()`` finds or starts an engine (and builds the sandbox image) once per test session,
``release_engine()`` stops it only if this session started it: see ``docker_fixtures`` in the plugin's tests,
imported from there so both suites share one engine.
"""

import sys
from pathlib import Path

PLUGIN_TESTS = Path(__file__).resolve().parents[2] / "plugins" / "rlm-sandbox-docker" / "tests"
if str(PLUGIN_TESTS) not in sys.path:
    sys.path.append(str(PLUGIN_TESTS))

from docker_fixtures import prepare_engine, release_engine  # noqa: E402

__all__ = ["prepare_engine", "release_engine"]
