"""Test helpers for rlm and for anyone writing an rlm plugin (needs pytest: ``pip install rlm-host[test]``).

- ``rlm_host.testing.sandbox_contract``: ``SandboxContract``, the protocol test suite every sandbox runtime must
  pass. Subclass it in a ``Test…`` class of your plugin's tests and implement ``make_sandbox``.
- ``rlm_host.testing.engine``: drive real runs of the engine with scripted models (``isolated_runner``,
  ``run_scripted``, ``haystack``…).
- ``rlm_host.testing.fake_http``: ``FakeHTTPServer``, a loopback HTTP server answering from a queue of scripted
  ``Behaviour``s and recording every request; subclass it with an API's route and error body to fake that API.

Nothing in the host imports this package: the ``rlm`` command never loads pytest.
"""

from __future__ import annotations

import pytest

# Plain ``assert`` statements of the contract give pytest's detailed failure messages in the plugins' tests.
pytest.register_assert_rewrite("rlm_host.testing.sandbox_contract", "rlm_host.testing.engine")

__all__ = ["SandboxContract"]


def __getattr__(name: str):
    if name == "SandboxContract":
        from rlm_host.testing.sandbox_contract import SandboxContract

        return SandboxContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
