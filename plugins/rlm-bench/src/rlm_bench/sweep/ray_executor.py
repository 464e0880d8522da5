"""``--executor ray``: every case of a sweep a Ray task of ``rlm_bench.sweep.worker.run_item`` on a cluster.

``RayExecutor.connect(address, options)`` joins a cluster (``auto``, ``host:port``, ``ray://host:port``; without
one, ``RAY_ADDRESS``) or starts a private local Ray for the sweep (shut down again by ``close``). ``options`` is
the sweep file's ``[bench.ray]`` (``rlm_bench.sweep.file.RayOptions``): what a case reserves (``num_cpus``,
``num_gpus``, custom ``resources``), its ``runtime_env``, how many cases are in flight at most
(``max_in_flight``: the executor's capacity) and how often Ray reruns a case whose worker or node died
(``max_retries``). Only Ray's public API is used.

A case runs in the environment of the node that takes it (its plugins, sandboxes, providers and keys); what
stops it there comes back as an ``error`` result naming the node (``run_item`` does that, and so does this
module for an exception that escapes it, e.g. rlm-bench missing on that node). What Ray itself could not finish
(a node or worker that died once the retries were spent, a case no node can be scheduled for, an object lost)
is a ``CaseLost`` with Ray's reason; the driver reports it with the resume command. Tasks are spread over the
nodes (``SPREAD``), so a sweep uses the whole cluster rather than filling the driver's node first. What the
cases of one point share (its manifest and its ``[run]`` settings, instructions included) goes to the cluster
once (``ray.put``): its cases get the ``ObjectRef``, let go of when a later point starts and none of them is
in flight.

Cancelling (Ctrl-C) raises a flag that every case of this executor watches: a small actor of the executor's
(``CancelFlag``, Ray's "use an actor to synchronize other tasks" pattern), created when it connects and handed to
every case. A case asks it as it starts (a queued case returns at once once the flag is up) and, while it runs,
keeps one call waiting on it (``CANCEL_WAIT``), so it learns of the cancel at once and stops at its next step
(``run_item`` with its cancel event set returns ``{"cancelled": True}``). The actor's class is built inside a
function so that Ray ships it by value: the node that hosts it needs Ray, not rlm-bench. ``ray.cancel`` is not
used: in Ray 2.60 a cancel that meets a task being dispatched can abort the driver (a failed check in
``TaskManager::CompletePendingTask``, "Tried to complete task that was not pending"), which would lose the
sweep's record. A case still stuck in a model call when the driver stops waiting is ended by Ray with the job
when the driver disconnects.

Ray's driver prints the cluster's error messages (a node that died, a task retried; whole raylet log tails
included) to stdout, and no setting sends them elsewhere: while this executor is connected, ``sys.stdout`` is a
stream that writes the first line of each to stderr as ``ray: …``, so ``--json`` output stays the record alone.

Token authentication (Ray 2.60 turns it on for clusters that ``ray.init`` starts, and for ``ray start`` when
a token exists): a driver joining a cluster at an explicit address does not send a token unless
``RAY_AUTH_MODE=token`` is set, and a cluster that wants one answers with a bare "Failed to connect" after about
20 s. So when ``RAY_AUTH_MODE`` is unset and a token is available here (``RAY_AUTH_TOKEN``,
``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), joining turns token mode on (a cluster without
authentication accepts such a driver too); without a token, a failed join says how to give the driver the
cluster's token. The private local Ray gets token authentication with a token of its own, held in this
process's environment (and so its Ray processes'), never written to ``~/.ray``. Ray reads ``RAY_AUTH_MODE`` when
it is imported, so these variables are set before the first ``import ray``; in a process that imported Ray
earlier, the private Ray gets only the token (``ray.init`` turns token mode on itself, as it does by default),
and joining a token cluster needs ``RAY_AUTH_MODE=token`` set before that import.

Ray is an optional extra (``pip install "rlm-bench[ray]"``): importing this module does not import it.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from rlm_bench.sweep.driver import CaseLost
from rlm_bench.sweep.file import RayOptions
from rlm_bench.sweep.worker import SweepItem
from rlm_host import InputError, RlmError
from rlm_host.sdk.commands import say

INSTALL = 'pip install "rlm-bench[ray]"'
#: Seconds a case's call to the cancel flag waits for it at most before it asks again.
CANCEL_WAIT = 5.0
#: Seconds between two looks of a case's flag watcher at whether its case has finished.
CANCEL_POLL = 0.5
#: Seconds a starting case waits for the flag's first answer before it starts anyway (the watcher keeps asking).
START_LOOK = 0.2
#: The object store of a private local Ray (results and shipped trajectories pass through it).
LOCAL_OBJECT_STORE = 512 * 2**20
#: What the cases of one point share (sent once a point, by ``ray.put``); the rest of an item is the case's own.
POINT_FIELDS = ("manifest", "run")
#: A ``SweepItem`` travels as plain data, its fields as a dict: a node that cannot import rlm-bench then fails on
#: ``ray_case`` itself (an error result naming the node), not on unpickling the item (a lost case).
OWN_FIELDS = tuple(f.name for f in fields(SweepItem) if f.name not in POINT_FIELDS)


class RayUnavailable(InputError):
    """``--executor ray`` without Ray installed, or a cluster that cannot be joined."""


def import_ray() -> Any:
    """The ``ray`` module, or one clear error with the install command."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(f"--executor ray needs Ray, which is not installed here ({exc})",
                             hint=f"install it with: {INSTALL}  (or use --executor local)") from None
    return ray


def token_available(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether Ray would find an authentication token here (where its token loader looks)."""
    env = os.environ if environ is None else environ
    if env.get("RAY_AUTH_TOKEN", "").strip():
        return True
    path = env.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return Path(path).expanduser().is_file()
    return (Path.home() / ".ray" / "auth_token").is_file()


def auth_environment(joining: bool, environ: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The ``RAY_AUTH_*`` variables to set before ``ray.init`` (see the module docstring); {} if none."""
    env = os.environ if environ is None else environ
    if env.get("RAY_AUTH_MODE"):
        return {}  # the user chose
    if joining:
        return {"RAY_AUTH_MODE": "token"} if token_available(env) else {}
    if token_available(env):
        return {"RAY_AUTH_MODE": "token"}  # what ray.init does by default, with the token found
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


@dataclass
class _Point:
    """A point's shared part as sent to the cluster: what it was made from, its ObjectRef, its cases in flight."""

    parts: tuple[Any, ...]
    ref: Any
    in_flight: int = 0


class RayExecutor:
    """Cases as Ray tasks (see the module docstring). Build it with ``connect``."""

    name = "ray"

    def __init__(self, ray: Any, options: RayOptions, *, owns_cluster: bool, address: str = "",
                 restore_env: Optional[dict[str, Optional[str]]] = None) -> None:
        self.ray = ray
        self.options = options
        self.capacity = options.max_in_flight
        self.owns_cluster = owns_cluster
        self.address = address
        self._restore_env = restore_env or {}
        self._items: dict[Any, SweepItem] = {}
        self._points: dict[str, _Point] = {}  # benchmark_id → its shared part on the cluster
        self._cancelled: set[Any] = set()
        self._flag_raised = False
        self._joined = False  # this executor called ray.init (and so calls ray.shutdown)
        self._stdout: Optional[_RayMessagesToStderr] = None  # sys.stdout while connected
        task_options: dict[str, Any] = {
            "num_cpus": options.num_cpus, "num_gpus": options.num_gpus, "max_retries": options.max_retries,
            "retry_exceptions": False,  # a Python exception is this case's answer on that node, not a crash
            "scheduling_strategy": "SPREAD",
        }
        if options.resources:
            task_options["resources"] = dict(options.resources)
        if options.runtime_env:
            task_options["runtime_env"] = dict(options.runtime_env)
        self._task = ray.remote(ray_case).options(**task_options)
        self._flag = _start_cancel_flag(ray, self.capacity)

    # ------------------------------------------------------------------------------------------------ connecting

    @classmethod
    def connect(cls, address: Optional[str], options: Optional[dict[str, Any]] = None) -> "RayExecutor":
        """Join the cluster at ``address`` (``auto``, ``host:port``, ``ray://host:port``; default ``RAY_ADDRESS``,
        as everywhere in Ray), or start a local Ray for this sweep when there is none."""
        opts = RayOptions.model_validate({k: v for k, v in (options or {}).items() if v is not None})
        address = (address or os.environ.get("RAY_ADDRESS") or "").strip() or None
        already = sys.modules.get("ray")
        if already is not None and already.is_initialized():  # embedded: this process is connected; use that
            executor = cls(already, opts, owns_cluster=False, address="(already connected)")
            executor._check_feasible(strict=False)
            return executor
        extra = auth_environment(joining=address is not None)
        if already is not None and address is None:  # Ray read RAY_AUTH_MODE at import: leave it to ray.init
            extra.pop("RAY_AUTH_MODE", None)
        restore = {name: os.environ.get(name) for name in (*extra, "RAY_AUTH_MODE")}  # ray.init may set the mode
        os.environ.update(extra)
        try:
            ray = import_ray()
        except BaseException:
            _restore(restore)
            raise
        quiet = {"logging_level": logging.WARNING, "log_to_driver": False, "configure_logging": True}
        try:
            if address is None:
                ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                         object_store_memory=LOCAL_OBJECT_STORE, _node_ip_address="127.0.0.1", **quiet)
            else:
                _join(ray, address, quiet)
        except Exception as exc:  # noqa: BLE001 - every way of failing to start or join is one clear error
            _restore(restore)
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001
                pass
            raise _join_error(address, exc, token=token_available(),
                              imported_before=already is not None and "RAY_AUTH_MODE" in extra) from None
        executor = cls(ray, opts, owns_cluster=address is None, address=address or "local",
                       restore_env=restore)
        executor._joined = True
        executor._messages_to_stderr()
        try:
            executor._check_feasible(strict=address is None)
        except BaseException:
            executor.close()
            raise
        return executor

    def _check_feasible(self, strict: bool) -> None:
        """Some node must have what one case reserves, or its tasks wait forever: an error on the private local
        Ray; a warning on a joined cluster (an autoscaler may still add such a node)."""
        demand = {"CPU": self.options.num_cpus, **({"GPU": self.options.num_gpus} if self.options.num_gpus else {}),
                  **self.options.resources}
        try:
            nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        except Exception:  # noqa: BLE001 - Ray Client and old versions: no check
            return
        if any(all(node.get("Resources", {}).get(k, 0.0) >= v for k, v in demand.items()) for node in nodes):
            return
        wanted = ", ".join(f"{k}={v:g}" for k, v in demand.items())
        message = f"no node of the Ray cluster ({len(nodes)} alive) has what a case reserves: {wanted}"
        hint = "lower [bench.ray] num_cpus / num_gpus / resources, or add a node that has them"
        if strict:
            raise InputError(message, hint=hint)
        say(f"warning: {message}; cases wait until such a node joins ({hint})", event="ray infeasible", level="warning")

    def _messages_to_stderr(self) -> None:
        """Ray's messages to stdout go to stderr, first lines only, while this executor is connected."""
        self._stdout = _RayMessagesToStderr(sys.stdout)
        sys.stdout = self._stdout

    # ------------------------------------------------------------------------------------------------ the protocol

    def submit(self, item: SweepItem) -> Any:
        point = self._point(item)
        ref = self._task.remote({name: getattr(item, name) for name in OWN_FIELDS}, point.ref, self._flag)
        point.in_flight += 1
        self._items[ref] = item
        return ref

    def _point(self, item: SweepItem) -> _Point:
        """The ObjectRef of this item's point's shared part, put once (again only if an item of it brings other
        values). Starting another point lets go of the points with no case in flight: the driver hands out the
        cases point by point, and Ray keeps an object for as long as a task that was given it runs."""
        key, parts = item.benchmark_id, tuple(getattr(item, name) for name in POINT_FIELDS)
        point = self._points.get(key)
        if point is not None and all(a is b or a == b for a, b in zip(point.parts, parts)):
            return point
        if point is None:
            self._points = {k: p for k, p in self._points.items() if p.in_flight > 0}
        fresh = _Point(parts, self.ray.put(dict(zip(POINT_FIELDS, parts))), point.in_flight if point else 0)
        self._points[key] = fresh
        return fresh

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Any]]:
        refs = list(handles)
        if not refs:
            time.sleep(min(timeout, 0.05))
            return []
        ready, rest = self.ray.wait(refs, num_returns=1, timeout=timeout, fetch_local=True)
        if ready and rest:  # everything else already finished too, without waiting again
            more, _ = self.ray.wait(rest, num_returns=len(rest), timeout=0, fetch_local=True)
            ready += more
        return [(ref, self._outcome(ref)) for ref in ready]

    def _outcome(self, ref: Any) -> Any:
        ray = self.ray
        item = self._items.pop(ref, None)
        point = self._points.get(item.benchmark_id) if item is not None else None
        if point is not None:
            point.in_flight -= 1
        cancelled = ref in self._cancelled
        self._cancelled.discard(ref)
        try:
            return ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return {"cancelled": True}
        except ray.exceptions.RayTaskError as exc:
            if cancelled:
                return {"cancelled": True}
            cause, where = getattr(exc, "cause", None), _where(exc)
            if isinstance(cause, ray.exceptions.RayError) or isinstance(cause, (SystemExit, KeyboardInterrupt)):
                return CaseLost(f"{type(cause).__name__} on {where}: {_first_line(cause)}")
            return _error_result(item, where, cause if cause is not None else exc)
        except Exception as exc:  # noqa: BLE001 - Ray could not finish it: worker/node died, unschedulable, lost
            if cancelled:
                return {"cancelled": True}
            return CaseLost(f"{type(exc).__name__}: {_first_line(exc)}")

    def cancel(self, handles: Iterable[Any]) -> None:
        """Raise this executor's cancel flag: running cases stop at their next step, queued ones at once."""
        self._cancelled.update(handles)
        if self._flag_raised:
            return
        self._flag_raised = True
        try:
            if self._flag is None:
                raise RuntimeError("the cancel flag could not be started")
            self.ray.get(self._flag.set.remote(), timeout=10)
        except Exception as exc:  # noqa: BLE001 - the cases then end with the job when the driver leaves
            say(f"warning: could not tell the cluster to cancel the running cases: {exc}", event="ray cancel failed",
                level="warning")

    def close(self) -> None:
        """Disconnect (and stop the private local Ray, if this executor started it). The cancel flag goes when
        the last case holding it ends (Ray ends an actor nothing refers to any more)."""
        self._flag = None
        self._points.clear()
        if self._joined:
            self._joined = False
            try:
                self.ray.shutdown()
            except Exception:  # noqa: BLE001 - closing must not hide the sweep's outcome
                pass
        if self._stdout is not None:
            stream, self._stdout = self._stdout, None
            stream.released = True
            if sys.stdout is stream:
                sys.stdout = stream.stdout
        _restore(self._restore_env)
        self._restore_env = {}


# ---------------------------------------------------------------------------------------------------- the flag


def _start_cancel_flag(ray: Any, capacity: int) -> Any:
    """This executor's cancel flag (an actor handle; None if Ray would not start it), on the driver's node when
    that node can take it: it then lives as long as the driver does."""
    try:
        options: dict[str, Any] = {"num_cpus": 0, "max_concurrency": max(1000, 2 * capacity + 100),
                                   "max_restarts": -1, "max_task_retries": -1}
        try:
            node = ray.get_runtime_context().get_node_id()
            strategies = ray.util.scheduling_strategies  # loaded with ray
            options["scheduling_strategy"] = strategies.NodeAffinitySchedulingStrategy(node_id=node, soft=True)
        except Exception:  # noqa: BLE001 - Ray's default placement then
            pass
        return ray.remote(_cancel_flag_class()).options(**options).remote()
    except Exception as exc:  # noqa: BLE001 - the sweep runs; a cancel then ends its cases with the job
        say(f"warning: no cancel flag on the Ray cluster ({type(exc).__name__}: {_first_line(exc)}); Ctrl-C "
            "will stop the running cases only when the driver disconnects", event="ray no cancel flag",
            level="warning")
        return None


def _cancel_flag_class() -> type:
    """The class of the cancel flag, made here so that Ray ships it by value (see the module docstring)."""
    import asyncio

    class CancelFlag:
        """Raised once by the driver; each case keeps a ``wait`` pending on it."""

        def __init__(self) -> None:
            self.raised = asyncio.Event()

        async def set(self) -> None:
            self.raised.set()

        async def wait(self, timeout: float) -> bool:
            """Whether the flag is up, waiting up to ``timeout`` seconds for it."""
            if timeout > 0 and not self.raised.is_set():
                try:
                    await asyncio.wait_for(self.raised.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
            return self.raised.is_set()

    return CancelFlag


def ray_case(own: dict[str, Any], point: Optional[dict[str, Any]] = None, flag: Any = None) -> dict[str, Any]:
    """The Ray task of one case: ``run_item`` of the item made of its own fields (``OWN_FIELDS``) and its point's
    shared part (``POINT_FIELDS``) in the worker Ray chose, stopped at its next step once the executor raises
    ``flag`` (see the module docstring)."""
    import threading

    from rlm_bench.sweep.worker import node_name, run_item

    item = SweepItem(**own, **(point or {}))
    if flag is None:
        return run_item(item)
    ray = import_ray()

    try:
        asked = flag.wait.remote(0)
        ready, _ = ray.wait([asked], timeout=START_LOOK)
    except Exception:  # noqa: BLE001 - the flag is out of reach: the case runs (Ray ends it with the job)
        return run_item(item)
    if ready and _answer(ray, asked):
        return {"cancelled": True, "node": node_name()}
    cancel, finished = threading.Event(), threading.Event()
    pending = [None if ready else asked]

    def watch() -> None:
        while not finished.is_set():
            try:
                if pending[0] is None:
                    pending[0] = flag.wait.remote(CANCEL_WAIT)
                ready, _ = ray.wait([pending[0]], timeout=CANCEL_POLL)
            except Exception:  # noqa: BLE001 - the flag is out of reach: Ray ends this case with the job
                return
            if not ready:
                continue
            answer = _answer(ray, pending[0])
            pending[0] = None
            if answer is None:  # the flag is gone (its driver left): Ray ends this case with the job
                return
            if answer:
                cancel.set()
                return

    threading.Thread(target=watch, name="rlm-sweep-cancel", daemon=True).start()
    try:
        return run_item(item, cancel)
    finally:
        finished.set()


def _answer(ray: Any, ref: Any) -> Optional[bool]:
    """The flag's answer to a finished call; None when it gave none (the actor is gone)."""
    try:
        return bool(ray.get(ref, timeout=5))
    except Exception:  # noqa: BLE001 - no answer is no cancel
        return None


# ---------------------------------------------------------------------------------------------------- helpers


def _restore(saved: dict[str, Optional[str]]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


class _RayMessagesToStderr:
    """``sys.stdout`` while a RayExecutor is connected. Ray's driver prints the cluster's error messages (a node that
    died, a task retried; whole raylet log tails included) to stdout, which would corrupt ``--json``: what is
    written here goes to stderr instead, the first line of each message only, without Ray's colours and
    ``(raylet)`` prefix, as ``ray: …``. Once ``released`` (the executor closed) it is the stdout it replaced again,
    in case something that wrapped it (a progress display) puts it back afterwards."""

    def __init__(self, stdout: Any) -> None:
        self.stdout = stdout
        self.released = False

    def write(self, text: str) -> int:
        if self.released:
            return self.stdout.write(text)
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
        first = next((line.strip() for line in plain.splitlines() if line.strip()), "")
        first = re.sub(r"^\((?:raylet|autoscaler)[^)]*\)\s*", "", first)
        if first:
            say(f"ray: {first[:400]}", event="ray message")
        return len(text)

    def flush(self) -> None:
        (self.stdout if self.released else sys.stderr).flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno …: the stdout it stands for
        if name == "stdout":
            raise AttributeError(name)
        return getattr(self.stdout, name)


def _where(exc: BaseException) -> str:
    """The node (IP) and process a RayTaskError came from. What ``ray.get`` raises is a copy that is also an
    instance of the cause's class and keeps only its text ("ray::ray_case() (pid=…, ip=…)"), so read that."""
    ip, pid = getattr(exc, "__dict__", {}).get("ip"), getattr(exc, "__dict__", {}).get("pid")
    if ip is None:
        found = re.search(r"\(pid=(\d+), ip=([^),\s]+)", re.sub(r"\x1b\[[0-9;]*m", "", str(exc)))
        if found:
            pid, ip = found.group(1), found.group(2)
    return f"{ip or 'an unknown node'}" + (f" (pid {pid})" if pid else "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:500]


def _gist(exc: BaseException) -> str:
    """First and last line of an error's text (Ray puts the real error of a failed import at the end)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    return lines[0][:300] + (f" … {lines[-1][:300]}" if len(lines) > 1 else "")


def _error_result(item: Optional[SweepItem], where: str, exc: BaseException) -> dict[str, Any]:
    """An exception that escaped ``run_item`` on a node (e.g. rlm-bench or a dependency missing there): this
    case's ``error`` result, naming the node."""
    from rlm_bench.summary import CaseResult

    manifest = item.manifest if item is not None else {}
    result = CaseResult(case_id=item.case_id if item is not None else "?", preset=manifest.get("preset", ""),
                        status="error",
                        termination_reason="error", error=f"on node {where}: {type(exc).__name__}: {_gist(exc)}",
                        model=manifest.get("model") or "", sandbox=manifest.get("sandbox") or "",
                        environment=manifest.get("environment") or "")
    return {"result": result.model_dump(mode="json"), "node": where.split(" (pid")[0]}


def _join_error(address: Optional[str], exc: BaseException, *, token: bool, imported_before: bool = False) -> RlmError:
    causes: list[BaseException] = []
    cause = exc.__cause__
    while cause is not None and len(causes) < 5:
        causes.append(cause)
        cause = cause.__cause__
    refused = next((c for c in causes if type(c).__name__ == "AuthenticationError"), None)
    if address is not None and refused is not None:
        return RayUnavailable(f"the Ray cluster at {address} refused this driver's token (or the lack of one): "
                              f"{_first_line(refused).split(' Note:')[0]}",
                              hint="give this driver the cluster's token: RAY_AUTH_TOKEN=$(ray get-auth-token) "
                                   "run on the head, or its ~/.ray/auth_token copied here")
    detail = _first_line(exc)
    if address is None:
        return RayUnavailable(f"could not start a local Ray for the sweep: {type(exc).__name__}: {detail}",
                              hint="see Ray's logs under /tmp/ray/session_latest/logs, or join a running "
                                   "cluster with --address")
    hint = "check the address (ray status on the head shows it; ray:// needs the head's client server port)"
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token" and not token:
        hint += ("; if the cluster uses token authentication (Ray's default for clusters that ray.init starts, "
                 "and for `ray start` where a token exists), give this driver its token: "
                 "RAY_AUTH_TOKEN=$(ray get-auth-token) on the head, or copy the head's ~/.ray/auth_token here")
    if imported_before:
        hint += ("; this process imported Ray before the sweep set RAY_AUTH_MODE=token, and Ray reads it at import: "
                 "set RAY_AUTH_MODE=token before Ray is imported")
    return RayUnavailable(f"could not join the Ray cluster at {address}: {type(exc).__name__}: {detail}", hint=hint)


def _join(ray: Any, address: str, quiet: dict[str, Any], attempts: int = 4) -> None:
    """``ray.init(address)``; a Ray Client address (``ray://``) gets more tries, a little apart: its server starts a
    process per driver, which on a loaded machine can miss the client's connection deadline, and is still
    initialising (it refuses) for a moment after such a miss."""
    import time

    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, **quiet)
            return
        except ConnectionError:
            if not address.startswith("ray://") or attempt == attempts:
                raise
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - nothing was connected
                pass
            say(f"ray: {address} did not answer in time; trying again ({attempt + 1} of {attempts})",
                event="ray join retried", address=address)
            time.sleep(3 * attempt)
