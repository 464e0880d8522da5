"""rlm-compat-rlms: the authors' package (PyPI ``rlms``, import name ``rlm``, github.com/alexzhang13/rlm, 0.1.3)
over rlm's engine, module for module — ``RLM`` and the limit exceptions here (as in ``rlm``), ``core.rlm``
(``RLM``, ``get_client``), ``core.types``, ``logger`` (``RLMLogger``, ``VerbosePrinter``), ``clients``
(``get_client``, ``BaseLM``), ``utils.exceptions`` — so a program written for it switches in one of two ways:

- change its imports: ``from rlm import RLM`` → ``from rlm_compat_rlms import RLM`` (the name ``rlm`` stays the
  authors': both packages can be installed side by side);
- or leave them, and make ``import rlm`` (and every ``rlm.…`` module) this package: call
  ``rlm_compat_rlms.install_as_rlm()`` before the first ``import rlm``, or put the folder that
  ``python -m rlm_compat_rlms.standin`` prints on ``PYTHONPATH``. Both refuse when the authors' package is
  installed: this layer never shadows it.

The README of rlm-compat-rlms has the table of every ``RLM(...)`` argument and the behaviours that differ on
purpose. Importing this package loads no engine: rlm's loads with the first ``RLM``.
"""

from typing import TYPE_CHECKING, Any

from rlm_compat_rlms.utils.exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    TimeoutExceededError,
    TokenLimitExceededError,
)

if TYPE_CHECKING:  # loaded by __getattr__ on first use
    from rlm_compat_rlms.core.rlm import RLM

__all__ = [
    "RLM",
    "BudgetExceededError",
    "TimeoutExceededError",
    "TokenLimitExceededError",
    "ErrorThresholdExceededError",
    "CancellationError",
]

#: Loaded on first use: the plugin's hooks import this package at every ``rlm`` start.
_LAZY = {"RLM": "rlm_compat_rlms.core.rlm", "install_as_rlm": "rlm_compat_rlms.standin"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rlm_compat_rlms' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
