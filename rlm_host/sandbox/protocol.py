"""The sandbox runtime protocol: a persistent REPL session the engine runs model-written code in.

A runtime plugin registers a ``SandboxSpec`` whose factory is called as
``factory(settings, services) -> SandboxSession``; ``settings`` is the validated ``[sandbox.<name>]`` section (or
None) and ``services`` a ``SandboxServices`` whose ``limits`` are the per-run limits below. ``SessionBase``
(``session_base.py``) implements the lifecycle every session shares; ``WorkerSession`` (``session.py``) adds the
host side of the stdlib-only JSON-lines worker.

Every session provides the REPL contract in the sandbox's global namespace:
- ``FINAL(answer)``, ``FINAL_VAR(name)``, ``SUBMIT(**fields)`` end the current ``execute`` at once and are
  reported as ``ExecResult.final`` (FINAL_VAR resolved inside the sandbox; a missing variable is an ``error``,
  not a final answer); ``SHOW_VARS()`` prints the user variables and their types;
- every host function registered with ``register_functions`` (``llm_query`` …): arguments and results are
  JSON-compatible data; an exception in the host function raises ``RuntimeError(message)`` inside the sandbox
  code, where it can be caught.
Values cross the boundary as JSON-compatible data only: nothing is ever pickled.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from rlm_host.errors import SandboxError
from rlm_host.results import ExecResult

__all__ = ["HostFunction", "SandboxError", "SandboxInfo", "SandboxLimits", "SandboxSession"]

HostFunction = Callable[..., Any]


class SandboxLimits(BaseModel):
    """Per-run limits a session must enforce."""

    exec_timeout: float = Field(30.0, gt=0, description="seconds one execute() may take")
    memory_mb: int = Field(2048, ge=64, description="memory of the session (well above the context's size)")
    max_output_chars: int = Field(1_000_000, ge=1000, description="stdout/stderr kept per execute()")


class SandboxInfo(BaseModel):
    """What the engine (and the model's system prompt) should know about a runtime."""

    name: str
    security_boundary: bool
    isolation: str
    python_notes: str = ""  # e.g. Monty's Python subset, told to the model so it does not waste turns


@runtime_checkable
class SandboxSession(Protocol):
    info: SandboxInfo

    def start(self) -> None:
        """Start the session (idempotent)."""

    def execute(self, code: str, *, timeout: float | None = None) -> ExecResult:
        """Run ``code`` in the persistent namespace; never raises for errors in the code itself."""

    def set_variable(self, name: str, value: Any) -> None:
        """Bind a JSON-compatible value (str, list, dict…) in the namespace; kept across restarts."""

    def get_variable(self, name: str) -> Any:
        """A variable's value as JSON-compatible data; KeyError if it does not exist."""

    def list_variables(self) -> dict[str, str]:
        """User variables and their type names (host functions and REPL builtins excluded)."""

    def register_functions(self, functions: dict[str, HostFunction]) -> None:
        """Make host callables available to sandbox code under these names; kept across restarts."""

    def shutdown(self) -> None:
        """Stop the session and free its resources (idempotent)."""
