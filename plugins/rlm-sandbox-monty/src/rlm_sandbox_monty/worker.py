"""One sandbox session's Monty resources: a session checked out of the process's shared pool, and its step timer.

``MontyWorker`` knows nothing of the REPL protocol; it opens a session (restoring the host-set variables in
one feed), tells whether its worker process is alive, kills it, discards the session and closes everything.
The worker processes come from a pool shared by every sandbox of this process (``pools``), so a benchmark's
cases reuse warm workers instead of spawning one each. ``pydantic_monty`` is imported here on first use, so a
missing installation is a ``SandboxError`` with the install hint rather than an import failure of the plugin.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from rlm_host import SandboxError
from rlm_host.sdk.context import TextFile
from rlm_host.sdk.sandbox import SandboxLimits, to_jsonable

from rlm_sandbox_monty import INSTALL_HINT
from rlm_sandbox_monty import pools
from rlm_sandbox_monty.settings import MontySettings
from rlm_sandbox_monty.timer import StepTimer

MIB = 1024 * 1024
_monty: Any = None


def load_monty() -> Any:
    """The ``pydantic_monty`` module; SandboxError with the install hint if it cannot be imported."""
    global _monty
    if _monty is None:
        try:
            import pydantic_monty
        except ImportError as exc:
            raise SandboxError(f"Monty is not available ({exc}); install it: {INSTALL_HINT}") from None
        _monty = pydantic_monty
    return _monty


def to_data(value: Any, _depth: int = 0) -> Any:
    """A value from Monty as JSON-compatible data; instances of sandbox classes become ``Name(a=1)`` text."""
    monty = load_monty()
    if isinstance(value, monty.MontyClassProxy):
        fields = ", ".join(f"{k}={v!r}" for k, v in value.attributes.items())
        return f"{value.name}({fields})"
    if _depth < 100:
        if isinstance(value, (list, tuple)):
            return [to_data(v, _depth + 1) for v in value]
        if isinstance(value, dict):
            return {(k if isinstance(k, str) else str(k)): to_data(v, _depth + 1) for k, v in value.items()}
    return to_jsonable(value)


WARM_CHARS = 1_000_000  # strings this long (alone or together in a list or dict) are indexed at bind time


def warm_code(name: str, value: Any) -> str:
    """Sandbox code that makes Monty index the large strings of a bound value (a str, or the str items of a
    list, tuple or dict: a documents context), binding nothing; "" when there is nothing large to index."""
    if isinstance(value, str):
        return f"len({name})" if len(value) >= WARM_CHARS else ""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    if sum(len(v) for v in items if isinstance(v, str)) < WARM_CHARS:
        return ""
    values = f"{name}.values()" if isinstance(value, dict) else name
    return f"[len(_rlm_v) for _rlm_v in {values} if isinstance(_rlm_v, str)]"


_binary: str | None = None


def monty_binary(explicit: str | None) -> str | None:
    """The ``monty`` worker binary: ``explicit``, else the one pydantic-monty finds, looked up once per process (its
    search reads sysconfig on every call, ~0.7 ms a session); None lets pydantic-monty search (and fail) itself."""
    global _binary
    if explicit is not None:
        return explicit
    if _binary is None:
        try:
            from pydantic_monty._binary import find_monty_binary

            _binary = find_monty_binary()
        except (ImportError, OSError):  # moved in a later release, or no binary: the pool searches and reports
            return None
    return _binary


def process_running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (True where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")


class MontyWorker:
    """The shared pool, the current session and its worker's pid; ``timer`` keeps the step time limit."""

    def __init__(self, settings: MontySettings, limits: SandboxLimits) -> None:
        self.settings = settings
        self.limits = limits
        self.pool: Any = None
        self.session: Any = None
        self.pid: int | None = None
        self.timer = StepTimer()
        self.backstop = settings.request_timeout or limits.exec_timeout + 60  # the pool's per-turn deadline
        self._pool_key: tuple[Any, ...] | None = None

    def _start_pool(self) -> None:
        key = (monty_binary(self.settings.binary_path), self.settings.start_timeout, self.backstop,
               self._address_space_cap())
        try:
            self.pool = pools.acquire(key, load_monty())
        except Exception as exc:
            raise SandboxError(f"Monty could not be started: {exc}. Install or repair it: {INSTALL_HINT}") from None
        self._pool_key = key

    def open(self, host_vars: dict[str, Any]) -> None:
        """Check out a fresh session, limit its worker and bind the host-set variables in it."""
        if self.pool is None:
            self._start_pool()
        monty = load_monty()
        limits = {
            "max_memory": self.limits.memory_mb * MIB,
            "max_recursion_depth": self.settings.max_recursion_depth,
            "max_suspensions": self.settings.max_host_calls,
        }
        try:
            session = self.pool.checkout(limits=limits)
            session.__enter__()
        except Exception as exc:
            raise SandboxError(f"no Monty worker could be started: {exc}. {INSTALL_HINT}") from None
        self.session, self.pid = session, session.worker_pid
        self._limit_address_space()
        self.timer.start()
        if host_vars:
            try:
                self.bind(host_vars)
            except monty.MontyError as exc:
                self.discard()
                raise SandboxError(f"restoring the sandbox's variables failed: {exc}") from None

    def bind(self, values: dict[str, Any]) -> None:
        """Bind host values in the session: plain ones in one feed; a context kept on disk (``TextFile``) in
        pieces joined inside the worker, so the host holds one piece at a time, never the whole text.

        Large strings are indexed in the same feed (``warm_code``): Monty finds a character position in a new
        str by one pass over its bytes, done at the str's first ``len`` or slice and kept (≈ 4 ms at 100 MB).
        Paid here, with the context's loading, it never lands on the model's first step."""
        plain = {name: value for name, value in values.items() if not isinstance(value, TextFile)}
        if plain:
            self.session.feed_run("\n".join(["pass", *(warm_code(n, v) for n, v in plain.items())]), inputs=plain)
        for name, text_file in values.items():
            if isinstance(text_file, TextFile):
                self.session.feed_run("_rlm_parts = []")
                for piece in text_file.chunks():
                    self.session.feed_run("_rlm_parts.append(_rlm_piece)", inputs={"_rlm_piece": piece})
                self.session.feed_run(f"{name} = ''.join(_rlm_parts)\n_rlm_parts = None\n_rlm_piece = None\n"
                                      f"len({name})")

    def renew(self) -> None:
        """The same namespace in a new checkout (Monty's per-session count of host calls starts again)."""
        state = self.session.dump()
        self.discard()
        self.open({})
        self.session.load_session(state)

    def _address_space_cap(self) -> int | None:
        """The worker's OS address-space cap in bytes: a little above Monty's heap limit (None: no cap)."""
        headroom = self.settings.os_memory_headroom_mb
        return None if headroom is None else (self.limits.memory_mb + headroom) * MIB

    def _limit_address_space(self) -> None:
        """Defence in depth: the worker's address space is capped a little above Monty's heap limit. The cap is a
        hard limit, which only root could raise again: the pool is chosen by cap (``_start_pool``), so a worker
        only ever serves sessions of its own cap."""
        limit = self._address_space_cap()
        if limit is None or self.pid is None:
            return
        try:
            import resource

            resource.prlimit(self.pid, resource.RLIMIT_AS, (limit, limit))
        except (ImportError, AttributeError, OSError, ValueError):
            pass  # not Linux, or not allowed: Monty's own heap limit still applies

    def alive(self) -> bool:
        """Whether the session's worker process still runs (always True where /proc is missing)."""
        return self.pid is not None and process_running(self.pid)

    def kill(self) -> None:
        """Kill the worker now (the blocked feed then raises MontyCrashedError)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def discard(self) -> None:
        """Give up the session: its worker goes back to the pool, which starts the next checkout on an empty
        namespace (or replaces the worker when it died)."""
        session, self.session, self.pid = self.session, None, None
        if session is not None:
            try:
                session.__exit__(None, None, None)
            except Exception:
                pass  # a crashed session has nothing left to release

    def close(self) -> None:
        """Discard the session, release the shared pool and stop the timer (idempotent; also run by a finalizer)."""
        self.discard()
        pool, self.pool = self.pool, None
        if pool is not None and self._pool_key is not None:
            pools.release(self._pool_key)
        self.timer.stop()
