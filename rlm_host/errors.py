"""Errors a user can cause or fix: the CLI prints them as one clear line (with a hint) and no traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlm_host.results import TerminationReason


class RlmError(Exception):
    """Base class of every error the CLI reports as a clear message instead of a traceback.

    ``hint`` is an optional second line telling the user what to do; ``exit_code`` is what the CLI exits with.
    """

    exit_code = 1

    def __init__(self, message: str, *, hint: str = "") -> None:
        from rlm_host.redact import redact  # a message or hint may quote a URL with a password, a server's body

        message, hint = redact(message), redact(hint)
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class PluginError(RlmError):
    """A plugin could not be loaded, validated or used."""


class UnknownComponentError(RlmError):
    """A component name (environment, sandbox, provider…) that no installed plugin registers."""

    exit_code = 2


class ComponentClashError(RlmError):
    """Two distributions register the same component name for the same kind."""


class ConfigError(RlmError):
    """A bad configuration value or file, reported with the file and key it came from."""

    exit_code = 2


class InputError(RlmError):
    """Input the user gave that cannot be used: a missing or unreadable file, a malformed document."""

    exit_code = 2


class ModelError(RlmError):
    """A model call failed after retries (unreachable server, bad key, quota, malformed response)."""


class SandboxError(Exception):
    """The sandbox session cannot go on (failed to start, or crashed and could not be restarted)."""


class BudgetExceeded(Exception):
    """A limit of the run tree was reached; ``reason`` is the run's termination reason."""

    def __init__(self, reason: TerminationReason, message: str) -> None:
        super().__init__(message)
        self.reason: TerminationReason = reason


class RecursionRefused(Exception):
    """A child run was not started: ``reason`` is "max_depth" or "cycle"."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
