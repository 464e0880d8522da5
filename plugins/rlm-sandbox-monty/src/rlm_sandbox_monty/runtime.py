"""The ``monty`` sandbox runtime: model-written code runs in Monty, a Python interpreter written in Rust.

A security boundary: sandbox code has no filesystem, network, environment, subprocess or import beyond Monty's
own modules, and every Monty interpreter runs in a ``monty`` worker process with an empty environment. Each
``MontySandbox`` owns a one-worker ``pydantic_monty.Monty`` pool and one checked-out session (a REPL whose
variables persist across ``execute`` calls); a child run opens its own sandbox, so its own session. The
lifecycle every runtime shares (host state kept across restarts, locking, restarts told to the model) is the
host's ``SessionBase``; what is Monty's is here.

How the protocol maps onto Monty:
- ``set_variable`` sends the value once, as a feed input: a step never re-sends the context, so its cost does
  not grow with the context's size;
- host functions, FINAL, FINAL_VAR, SUBMIT and SHOW_VARS are Monty external functions (``external_lookup``):
  nothing is defined in the namespace, so they never show up as user variables. FINAL & co. record the answer
  and raise ``SystemExit`` to end the step (not caught by ``except Exception``); FINAL_VAR's value is read
  right after the step; SHOW_VARS leaves a marker in the output, replaced by the listing after the step;
- a host function's exception reaches sandbox code as ``RuntimeError(message)``, like the process runtime;
- limits: the step timeout is kept by a host-side timer (``timer.StepTimer``) that counts the sandbox's own
  time only and kills the worker when it passes; memory, recursion depth and host calls are Monty limits of
  the session, plus an OS address-space limit on the worker. A timeout or a crash gives a fresh session into
  which the host-set variables are restored (host functions are looked up anew at every step).
"""

from __future__ import annotations

import keyword
import time
from typing import Any

from rlm_host import ExecResult, SandboxError, SandboxServices
from rlm_host.sdk.sandbox import (
    Capture, FinalSignal, HostFunction, SandboxInfo, SandboxLimits, SessionBase, to_jsonable,
)

from rlm_sandbox_monty import INSTALL_HINT, ISOLATION
from rlm_sandbox_monty.errors import format_error, is_call_limit, is_stop, missing_variable
from rlm_sandbox_monty.notes import PYTHON_NOTES
from rlm_sandbox_monty.settings import MontySettings
from rlm_sandbox_monty.worker import MontyWorker, load_monty, to_data

STOP = "the run has ended (FINAL, FINAL_VAR or SUBMIT was called)"  # SystemExit message ending a step
SHOW_MARK = "\x00rlm:SHOW_VARS\x00"  # where SHOW_VARS() was called; replaced by the listing after the step
PENDING = object()  # a FINAL_VAR value not read yet


class MontySandbox(SessionBase):
    """A persistent REPL session in Monty (a security boundary)."""

    info = SandboxInfo(name="monty", security_boundary=True, isolation=ISOLATION, python_notes=PYTHON_NOTES)
    worker_noun = "the Monty worker"

    def __init__(self, settings: MontySettings | None = None, limits: SandboxLimits | None = None) -> None:
        self.settings = settings or MontySettings()
        self._worker = MontyWorker(self.settings, limits or SandboxLimits())
        super().__init__(self._worker.limits, release=self._worker.close)
        self._lookup: dict[str, Any] = {
            "FINAL": self._FINAL, "FINAL_VAR": self._FINAL_VAR, "SUBMIT": self._SUBMIT, "SHOW_VARS": self._SHOW_VARS,
        }
        self._interrupted: BaseException | None = None  # a KeyboardInterrupt… raised inside a host function
        self._final: dict[str, Any] | None = None
        self._out: Capture | None = None

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before start and after shutdown)."""
        return self._worker.pid

    # -- the worker (SessionBase's hooks) -----------------------------------------------------------------
    def _has_worker(self) -> bool:
        return self._worker.session is not None

    def _worker_exit(self) -> str | None:
        return None if self._worker.alive() else f"its process (pid {self._worker.pid}) is gone"

    def _spawn(self) -> None:
        self._worker.open(self._host_vars)

    def _discard(self) -> None:
        self._worker.discard()

    # -- REPL builtins (external functions) ---------------------------------------------------------------
    def _stop(self, kind: str, value: Any, var: str | None = None) -> None:
        if self._final is None:  # the first one wins, even if user code swallowed the SystemExit
            self._final = {"kind": kind, "value": value if value is PENDING else to_data(value), "var": var}
        raise SystemExit(STOP)

    def _FINAL(self, answer: Any) -> None:
        self._stop("direct", answer)

    def _FINAL_VAR(self, name: Any) -> None:
        if not isinstance(name, str):
            raise TypeError("FINAL_VAR expects the variable NAME as a string, e.g. FINAL_VAR('answer')")
        name = name.strip().strip("'\"").strip()
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__") or name in self._lookup:
            raise NameError(missing_variable(name))
        self._stop("variable", PENDING, var=name)

    def _SUBMIT(self, **fields: Any) -> None:
        self._stop("submit", fields)

    def _SHOW_VARS(self) -> None:
        if self._out is not None:
            self._out.write(SHOW_MARK)

    def _host_function(self, name: str, function: HostFunction) -> HostFunction:
        """The sandbox-side face of a host function: JSON-compatible data in and out, RuntimeError on failure."""

        def call(*args: Any, **kwargs: Any) -> Any:
            self._worker.timer.pause()
            try:
                with self._host_call():
                    return to_jsonable(function(*to_data(list(args)), **to_data(kwargs)))
            except Exception:
                raise  # RuntimeError(message): what sandbox code sees
            except BaseException as exc:  # Ctrl-C…: stop the step now, re-raise in the host after it
                self._interrupted = exc
                self._worker.kill()
                raise
            finally:
                self._worker.timer.resume()

        call.__name__ = call.__qualname__ = name
        return call

    # -- running code -------------------------------------------------------------------------------------
    def _execute(self, code: str, limit: float, started: float) -> ExecResult:
        out = self._out = Capture(self.limits.max_output_chars)
        err = Capture(self.limits.max_output_chars)
        self._final, self._interrupted = None, None
        streams = {"stdout": out, "stderr": err}
        crash = error = None
        self._worker.timer.arm(self._worker.pid, limit)
        try:
            self._worker.session.feed_run(code, external_lookup=self._lookup,
                                          print_callback=lambda stream, text: streams.get(stream, out).write(text))
        except load_monty().MontyCrashedError as exc:
            crash = exc
        except (load_monty().MontyError, RuntimeError) as exc:  # RuntimeError: the session is gone
            error = exc
        finally:
            timed_out = self._worker.timer.disarm()
            self._out = None
        if error is not None and not self._worker.alive():  # e.g. the worker was over its memory limit
            crash, error = error, None
        if self._interrupted is not None:  # set by call() during feed_run: mypy keeps the None above across calls
            self._abandon()  # type: ignore[unreachable]  # reopened at the next use, and the model told then
            raise self._interrupted
        if timed_out or crash is not None:
            return self._after_crash(crash, timed_out, limit, started, out, err)
        final, error_text = self._resolve_final(error)
        if error_text and is_call_limit(error_text):
            self._worker.renew()
        return ExecResult(
            stdout=self._show_vars(out.getvalue()), stderr=err.getvalue(), error=error_text,
            final=FinalSignal(**final) if final else None, duration_s=time.monotonic() - started,
        )

    def _resolve_final(self, error: Exception | None) -> tuple[dict[str, Any] | None, str | None]:
        """The step's final answer (FINAL_VAR read now) and its error text."""
        final = self._final
        error_text = None if error is None or (final is not None and is_stop(error, STOP)) else format_error(error)
        if final is not None and final["value"] is PENDING:
            name = final["var"]
            if name not in self._all_variables():
                return None, error_text or f"NameError: {missing_variable(name)}"
            final["value"] = to_data(self._control(name))
        return final, error_text

    def _after_crash(self, crash: Exception | None, timed_out: bool, limit: float, started: float,
                     out: Capture, err: Capture) -> ExecResult:
        """A timeout or a dead worker: a fresh session, and an error saying what was lost."""
        if not timed_out and crash is not None and getattr(crash, "timed_out", False):
            timed_out, limit = True, min(limit, self._worker.backstop)  # the pool's request_timeout backstop
        stdout = out.getvalue().replace(SHOW_MARK, "(SHOW_VARS: the variables are gone with the restart)\n")
        if timed_out:
            return self._timeout_result(limit, started, stdout, err.getvalue())
        return self._crash_result(crash, started, stdout, err.getvalue())

    def _show_vars(self, stdout: str) -> str:
        """Replace the SHOW_VARS markers by the listing of the user variables (as at the end of the step)."""
        if SHOW_MARK not in stdout:
            return stdout
        variables = self._user_variables()
        lines = ["Variables:", *(f"  {n}: {t}" for n, t in variables.items())] if variables else [
            "No variables defined yet."]
        return stdout.replace(SHOW_MARK, "\n".join(lines) + "\n")

    # -- the namespace ------------------------------------------------------------------------------------
    def _control(self, code: str) -> Any:
        """Evaluate one expression of the runtime's own; SandboxError (and a fresh session) if the worker died."""
        try:
            return self._worker.session.feed_run(code)
        except Exception as exc:
            if self._worker.alive():
                raise
            self._restart(f"the Monty worker died while the host was reading the namespace: {exc}")
            raise SandboxError(f"the Monty worker died and was restarted: {exc}") from None

    def _all_variables(self) -> dict[str, str]:
        """Every name bound in the namespace and its type name (one expression, no side effect)."""
        return dict(self._control("{_k: type(_v).__name__ for _k, _v in locals().items()}") or {})

    def _user_variables(self) -> dict[str, str]:
        return {n: t for n, t in self._all_variables().items() if not n.startswith("_")}

    def _bind(self, name: str, value: Any) -> None:
        """Send the value once, as a feed input (a context kept on disk in pieces)."""
        monty = load_monty()
        self._live()
        try:
            self._worker.bind({name: value})
        except (monty.MontyError, RuntimeError, TypeError, ValueError, OverflowError) as exc:
            if self._worker.alive():
                raise TypeError(f"set_variable({name!r}): the value is not JSON-compatible: {exc}") from None
            raise self._lost_while_binding(name, exc) from None

    def _register(self, functions: dict[str, HostFunction]) -> None:
        self._lookup.update({name: self._host_function(name, f) for name, f in functions.items()})

    def get_variable(self, name: str) -> Any:
        """A variable's value as JSON-compatible data; KeyError if it does not exist."""
        with self._guard():
            self._live()
            if not isinstance(name, str) or name not in self._all_variables():
                raise KeyError(name)
            return to_data(self._control(name))

    def list_variables(self) -> dict[str, str]:
        """User variables and their type names (host functions, REPL builtins and _names excluded)."""
        with self._guard():
            self._live()
            return self._user_variables()


def create(settings: MontySettings | dict | None, services: SandboxServices) -> MontySandbox:
    """The ``SandboxSpec`` factory: ``create(settings, services) -> MontySandbox``."""
    if isinstance(settings, dict):
        settings = MontySettings(**settings)
    return MontySandbox(settings, services.limits)


__all__ = ["MontySandbox", "MontySettings", "create", "INSTALL_HINT"]
