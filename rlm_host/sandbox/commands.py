"""Commands and helper code run *inside* a sandbox session, their results brought back as JSON data.

Environments that verify a project (compile it, run its tests) and benchmark scorers that run hidden tests need
to run ``python -m pytest`` where the model's code runs: inside the sandbox, never on the host. A session only
executes Python, so a command is a ``subprocess.run`` issued from Python code in the session. Results come back
through ``get_variable`` (JSON data, never pickles), not by parsing printed output.

A session the model's code has already run in may have had its builtins tampered with: results read from such
a session are the model's word (fine for a step's reward); a score that must be trusted comes from a fresh
session (as ``rlm bench`` does for hidden tests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from rlm_host.errors import SandboxError
from rlm_host.sandbox.protocol import SandboxSession

#: Output kept of a command's stdout and stderr (the end: pytest's summary is last).
COMMAND_OUTPUT_CHARS = 20_000
#: Stands for the sandbox's own Python interpreter in an argv (``[PYTHON, "-m", "pytest"]``).
PYTHON = "{python}"
_RESULT = "__rlm_helper_result"

_COMMAND_SOURCE = """
def __rlm_command(argv, timeout, keep):
    import subprocess, sys, time
    argv = [sys.executable if part == "{python}" else part for part in argv]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout,
                              stdin=subprocess.DEVNULL)
        result = {"exit_code": done.returncode, "stdout": done.stdout[-keep:], "stderr": done.stderr[-keep:],
                  "timed_out": False, "error": None}
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        result = {"exit_code": None, "stdout": out[-keep:], "stderr": err[-keep:], "timed_out": True, "error": None}
    except OSError as exc:
        result = {"exit_code": None, "stdout": "", "stderr": "", "timed_out": False, "error": str(exc)}
    result["seconds"] = round(time.monotonic() - started, 3)
    return result
"""


@dataclass(frozen=True)
class CommandResult:
    """How a command run in the sandbox ended. ``error``: it could not be started (no such program)."""

    argv: tuple[str, ...]
    exit_code: Optional[int]
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None

    def summary(self) -> str:
        """One line: the command and how it ended."""
        how = ("timed out" if self.timed_out else f"could not start: {self.error}" if self.error
               else f"exit code {self.exit_code}")
        return f"{' '.join(self.argv)}: {how} ({self.seconds:.1f}s)"


def run_in_session(session: SandboxSession, source: str, call: str, *, timeout: float) -> Any:
    """Execute ``source`` (definitions) then the expression ``call`` in ``session``; its value as JSON data.

    Raises SandboxError when the code fails (its error message included) or the value is not JSON data."""
    code = f"{source}\n{_RESULT} = {call}\n"
    result = session.execute(code, timeout=timeout)
    if not result.ok:
        why = "timed out" if result.timed_out else result.error
        raise SandboxError(f"helper code failed in the sandbox: {why}")
    try:
        value = session.get_variable(_RESULT)
    finally:
        session.execute(f"{_RESULT} = None", timeout=timeout)
    return value


def run_command(session: SandboxSession, argv: Sequence[str], *, timeout: float,
                keep_chars: int = COMMAND_OUTPUT_CHARS) -> CommandResult:
    """Run ``argv`` in the session's working directory (``PYTHON`` in it is the sandbox's interpreter)."""
    call = f"__rlm_command({json.dumps(list(argv))}, {float(timeout)!r}, {int(keep_chars)})"
    value = run_in_session(session, _COMMAND_SOURCE, call, timeout=timeout + 30)
    if not isinstance(value, dict):
        raise SandboxError(f"the command helper returned {type(value).__name__}, not a result")
    return CommandResult(tuple(argv), value.get("exit_code"), str(value.get("stdout") or ""),
                         str(value.get("stderr") or ""), bool(value.get("timed_out")),
                         float(value.get("seconds") or 0.0), value.get("error"))
