"""``SessionBase``: the part of a sandbox session that does not depend on what runs the code.

Every runtime keeps the same promises around running code (``protocol.py``): host-set variables and host
functions survive restarts; use is serialized across threads and refused after shutdown or from inside a host
function; a worker lost between steps is replaced, and the next step is not run but says why; timeouts, crashes
and lost state are worded the same for the model. When the environment's cells have no outside effects
(``keep_cells_for_rebuild``), a lost worker is instead rebuilt by running the successful cells again
(``cell_log.py``) and the step runs. That is written here once. A runtime implements the hooks
(``_has_worker`` … ``_register``) and ``get_variable`` / ``list_variables``: the built-in ``WorkerSession``
(``session.py``, for JSON-lines workers) and Monty's session do.
"""

from __future__ import annotations

import contextlib
import keyword
import os
import threading
import time
import weakref
from typing import Any, Callable, Iterator

from rlm_host.errors import SandboxError
from rlm_host.results import ExecResult
from rlm_host.sandbox.cell_log import CellLog
from rlm_host.sandbox.protocol import HostFunction, SandboxInfo, SandboxLimits

#: The REPL builtins of every session: host variables and functions cannot take these names.
RESERVED = frozenset({"FINAL", "FINAL_VAR", "SUBMIT", "SHOW_VARS"})
INTERRUPTED = "the host was interrupted while the sandbox was busy, and the sandbox was stopped"


def _release_in(owner: int, release: Callable[[], None]) -> None:
    if os.getpid() == owner:
        release()


def check_name(name: str) -> None:
    """A host-provided name must be a plain identifier that does not shadow a REPL builtin."""
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_") or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a valid variable name (an identifier not starting with '_')")
    if name in RESERVED:
        raise ValueError(f"{name!r} is a REPL builtin of the sandbox and cannot be replaced")


class SessionBase:
    """A persistent REPL session's lifecycle and bookkeeping; subclasses run the code (see the hooks).

    ``release`` frees the runtime's resources (worker, pool, directories): it is called once, by ``shutdown``
    or when the session is garbage-collected, so it must not refer to the session itself; and only in the
    process that made the session (a forked child's copy, collected or finalized at its exit, frees nothing).
    """

    info: SandboxInfo
    #: How the model's error messages name the thing that runs its code ("the sandbox process"…).
    worker_noun: str = "the sandbox worker"

    def __init__(self, limits: SandboxLimits | None, *, release: Callable[[], None]) -> None:
        self.limits = limits or SandboxLimits()
        self._host_vars: dict[str, Any] = {}
        self._functions: dict[str, HostFunction] = {}
        self._finalizer = weakref.finalize(self, _release_in, os.getpid(), release)
        self._lock = threading.RLock()
        self._calling_thread: int | None = None  # set while a host function runs
        self._unreported: str | None = None  # a restart the model has not been told about yet
        self._closed = False
        self._rebuilding = False
        self._unlogged = False
        self._cell_log: CellLog | None = None  # kept when the environment's cells can be replayed
        self._rebuilt: str | None = None  # what the last restart restored, in words for the model

    # -- hooks of the runtime -----------------------------------------------------------------------------
    def _has_worker(self) -> bool:
        """Whether a worker was started (and not discarded since)."""
        raise NotImplementedError

    def _worker_exit(self) -> str | None:
        """How the started worker ended, if it has (None while it runs)."""
        raise NotImplementedError

    def _spawn(self) -> None:
        """Start a worker with the host variables and functions restored (SandboxError if it cannot)."""
        raise NotImplementedError

    def _discard(self) -> None:
        """Stop and forget the current worker, if any (never raises)."""
        raise NotImplementedError

    def _execute(self, code: str, limit: float, started: float) -> ExecResult:
        """Run ``code`` in the live worker with a time limit of ``limit`` seconds (``started``: monotonic)."""
        raise NotImplementedError

    def _bind(self, name: str, value: Any) -> None:
        """Bind a host variable in the live (or a new) worker: TypeError for a value that is not JSON data."""
        raise NotImplementedError

    def _register(self, functions: dict[str, HostFunction]) -> None:
        """Make newly registered host functions callable in the worker (already kept in ``_functions``)."""
        raise NotImplementedError

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker (idempotent); SandboxError if it cannot start."""
        with self._guard():
            self._live()

    def shutdown(self) -> None:
        """Stop the worker and free the session's resources (idempotent)."""
        with self._lock:
            self._closed = True
            self._finalizer()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _guard(self):
        """Serialize use across threads; refuse use after shutdown or from inside a host function."""
        if self._closed:
            raise SandboxError(f"the {self.info.name} sandbox has been shut down")
        if self._calling_thread == threading.get_ident():
            raise SandboxError("the sandbox cannot be used from inside one of its own host functions")
        return self._lock

    def _live(self) -> None:
        """Start the worker if there is none; replace it if it ended since its last use (told at the next step)."""
        if not self._has_worker():
            self._spawn()
        elif (how := self._worker_exit()) is not None:
            self._restart(f"{self.worker_noun} had exited since the previous step: {how}")

    def _restart(self, why: str | None = None) -> None:
        """Replace the worker by a fresh one with the host's variables and functions (SandboxError if not), and
        rebuild the model's variables when the session keeps its cells.

        ``why`` is told at the next ``execute``, for a restart the model is not told about right away.
        """
        self._discard()
        self._unreported = why
        self._spawn()
        self._rebuild()

    def keep_cells_for_rebuild(self) -> None:
        """Log successful cells, so a lost worker is rebuilt by running them again (host-function results
        answered from the log). Only for code with no effect outside the REPL: pure_rlm's. Call it before
        ``register_functions``: the functions registered from then on are the ones whose results are logged."""
        if self._cell_log is None:
            self._cell_log = CellLog()

    def take_cells(self, other: "SessionBase") -> str | None:
        """Make this session a copy of ``other``'s REPL state: run its logged cells here, their host functions
        answered from its log (no model is asked again). Both keep cells (``keep_cells_for_rebuild``); returns
        None, or what could not be rebuilt."""
        if self._cell_log is None or other._cell_log is None:
            raise SandboxError("copying a REPL needs both sessions to keep their cells (keep_cells_for_rebuild)")
        with self._guard():
            self._live()
            self._cell_log.cells = list(other._cell_log.cells)
            return self._rebuild()

    def _rebuild(self) -> str | None:
        """Run the logged cells again in the new worker; what could not be rebuilt (None: nothing was lost)."""
        self._rebuilt = None
        if self._cell_log is None or not self._cell_log.cells or self._rebuilding:
            return None
        self._rebuilding = True
        try:
            total = len(self._cell_log.cells)
            done, failed = self._cell_log.replay(lambda code: self._execute(code, self.limits.exec_timeout,
                                                 time.monotonic()), lambda result: result.ok and not result.restarted)
        finally:
            self._rebuilding = False
        if failed is None:
            self._rebuilt = f"your variables were rebuilt by running the {done} earlier successful cell(s) again"
        else:
            self._rebuilt = (f"{done} of the {total} earlier cells were run again to rebuild your variables; cell "
                             f"{done + 1} failed this time ({failed}), so variables made from it on "
                             "are lost")
        return None if failed is None else self._rebuilt

    def _abandon(self) -> None:
        """The host was interrupted while the worker was busy: drop it; the next step says so and is not run."""
        self._discard()
        self._unreported = INTERRUPTED

    @contextlib.contextmanager
    def _host_call(self) -> Iterator[None]:
        """Around a host function called by sandbox code: the session refuses re-entry meanwhile, and an
        Exception comes out as ``RuntimeError(message)``, what sandbox code sees (a plain RuntimeError keeps its
        message; another type is named in it, since the type carries meaning)."""
        self._calling_thread = threading.get_ident()
        try:
            yield
        except Exception as exc:
            plain = type(exc) is RuntimeError and str(exc)
            raise RuntimeError(str(exc) if plain else f"{type(exc).__name__}: {exc}".rstrip(": ")) from None
        finally:
            self._calling_thread = None

    # -- what the model reads -----------------------------------------------------------------------------
    def _lost_state_note(self) -> str:
        if self._rebuilt:
            return self._rebuilt + " (sub-model calls answered from the record, not asked again)."
        kept = [*self._host_vars, *self._functions]
        if kept:
            return ("all variables you created are lost; only the host-provided ones are still defined: "
                    + ", ".join(kept) + ".")
        return "all variables you created are lost."

    def _timeout_result(self, limit: float, started: float, stdout: str = "", stderr: str = "") -> ExecResult:
        """A step stopped at its time limit: the worker is replaced, and the result says what was lost."""
        self._restart()
        return self._restarted(f"TimeoutError: this step exceeded the time limit of {limit:g} s and was stopped. The "
                               f"sandbox was restarted: {self._lost_state_note()} Split the work into smaller steps.",
                               started, stdout, stderr, timed_out=True)

    def _crash_result(self, cause: Any, started: float, stdout: str = "", stderr: str = "") -> ExecResult:
        """A step that lost its worker: the worker is replaced, and the result says what was lost."""
        self._restart()
        return self._restarted(f"SandboxCrash: {self.worker_noun} died during this step and was restarted: "
                               f"{self._lost_state_note()}\nCause: {cause}", started, stdout, stderr)

    def _restarted(self, error: str, started: float, stdout: str = "", stderr: str = "", **more: Any) -> ExecResult:
        """The result of a step that ended with the worker replaced (``error`` says why and what was lost)."""
        return ExecResult(stdout=stdout, stderr=stderr, error=error, restarted=True,
                          duration_s=time.monotonic() - started, **more)

    def _lost_while_binding(self, name: str, cause: Any) -> SandboxError:
        """The worker died receiving the host variable ``name``: restart (told at the next step); the error to
        raise."""
        self._restart(f"{self.worker_noun} died while receiving the variable {name!r}: {cause}")
        return SandboxError(f"{self.worker_noun} died while receiving {name!r} (is it too large for the memory "
                            f"limit of {self.limits.memory_mb} MB?): {cause}")

    # -- the session protocol -----------------------------------------------------------------------------
    def execute(self, code: str, *, timeout: float | None = None) -> ExecResult:
        """Run ``code`` in the persistent namespace; never raises for errors in the code itself."""
        limit = self.limits.exec_timeout if timeout is None else timeout
        with self._guard():
            started = time.monotonic()
            self._live()
            if self._unreported:
                why, self._unreported = self._unreported, None
                if self._cell_log is None:
                    return self._restarted(f"SandboxCrash: the sandbox was restarted and your code was NOT run: "
                                           f"{self._lost_state_note()} Run your code again.\nCause: {why}", started)
                result = self._run_cell(code, limit, started)  # rebuilt: run the step, and say what happened
                notice = f"[sandbox] {why}. A new one was started: {self._lost_state_note()}\n"
                return result.model_copy(update={"stderr": notice + result.stderr, "restarted": True})
            return self._run_cell(code, limit, started)

    def execute_unlogged(self, code: str) -> ExecResult:
        """``execute`` for a read-only look (the environment's variable listing): not a cell to run again when a
        lost worker is rebuilt."""
        with self._guard():
            self._unlogged = True
            try:
                return self.execute(code)
            finally:
                self._unlogged = False

    def _run_cell(self, code: str, limit: float, started: float) -> ExecResult:
        """Run one cell, logging it (with its host-function results) when it succeeds and cells are kept."""
        if self._cell_log is None or self._unlogged:
            return self._execute(code, limit, started)
        self._cell_log.begin()
        result = self._execute(code, limit, started)
        if result.ok and not result.restarted and result.final is None:
            self._cell_log.keep(code)
        return result

    def set_variable(self, name: str, value: Any) -> None:
        """Bind a JSON-compatible value in the namespace; kept across restarts."""
        check_name(name)
        with self._guard():
            self._bind(name, value)
            self._host_vars[name] = value

    def register_functions(self, functions: dict[str, HostFunction]) -> None:
        """Make host callables available to sandbox code under these names; kept across restarts."""
        for name, function in functions.items():
            check_name(name)
            if not callable(function):
                raise TypeError(f"host function {name!r} is not callable")
        with self._guard():
            if self._cell_log is not None:
                functions = {name: self._cell_log.wrap(name, f) for name, f in functions.items()}
            self._functions.update(functions)
            self._register(functions)
