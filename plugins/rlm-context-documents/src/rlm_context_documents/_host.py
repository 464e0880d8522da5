"""The host helpers this plugin builds on: bounded child processes (``rlm_host.bounded``) and this user's
signing key (``rlm_host.config.user_key``), taken from the public face ``rlm_host`` when it exports them, else
from their modules (rlm-host releases before the export)."""

from __future__ import annotations

import importlib
from typing import Any

import rlm_host

_MODULES = {
    "run_bounded": "rlm_host.bounded",
    "BoundedLimits": "rlm_host.bounded",
    "LimitExceeded": "rlm_host.bounded",
    "ChildFailed": "rlm_host.bounded",
    "start_method": "rlm_host.bounded",
    "sign": "rlm_host.config.user_key",
    "verify": "rlm_host.config.user_key",
}


def host(name: str) -> Any:
    """``rlm_host.<name>``, or the same object from the module that defines it."""
    try:
        return getattr(rlm_host, name)
    except AttributeError:
        return getattr(importlib.import_module(_MODULES[name]), name)
