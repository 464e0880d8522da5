"""Test helpers that are real components, not mocks: a loopback OpenAI-compatible server."""

import sys as _sys
from pathlib import Path as _Path

#: The installed console script. Import it from here inside a test: at run time ``conftest`` may name a plugin's
#: conftest module, not tests/conftest.py (pytest registers every conftest.py under that one module name).
RLM_SCRIPT = str(_Path(_sys.executable).with_name("rlm"))
