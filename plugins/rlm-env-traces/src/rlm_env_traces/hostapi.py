"""Host helpers this plugin builds on that ``rlm_host``'s public face does not export in every release yet: this
user's signing key (``sign`` / ``verify``) and bounded child processes (``run_bounded``). Taken from ``rlm_host``
when it exports them, else from the modules that define them."""

from __future__ import annotations

import importlib
from typing import Any

import rlm_host

_MODULES = {
    "sign": "rlm_host.config.user_key",
    "verify": "rlm_host.config.user_key",
    "run_bounded": "rlm_host.bounded",
    "BoundedLimits": "rlm_host.bounded",
    "BoundedError": "rlm_host.bounded",
    "LimitExceeded": "rlm_host.bounded",
}


def host(name: str) -> Any:
    """``rlm_host.<name>``, or the same object from the module that defines it."""
    found = getattr(rlm_host, name, None)
    return found if found is not None else getattr(importlib.import_module(_MODULES[name]), name)
