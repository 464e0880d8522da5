"""``--executor ray``: every case of a sweep a Ray task of ``rlm_bench.sweep_worker.run_item`` on a cluster.

``RayExecutor.connect(address, options)`` joins a cluster (``auto``, ``host:port``, ``ray://host:port``; without
one, ``RAY_ADDRESS``) or starts a private local Ray for the sweep (shut down again by ``close``). ``options`` is
the sweep file's ``[bench.ray]`` (``rlm_bench.sweep_file.RayOptions``): what a case reserves (``num_cpus``,
``num_gpus``, custom ``resources``), its ``runtime_env``, how many cases are in flight at most
(``max_in_flight``: the executor's capacity) and how often Ray reruns a case whose worker or node died
(``max_retries``).

A case runs in the environment of the node that takes it (its plugins, sandboxes, providers and keys); what
stops it there comes back as an ``error`` result naming the node (``run_item`` does that, and so does this
module for an exception that escapes it, e.g. rlm-bench missing on that node). What Ray itself could not finish
(a node or worker that died once the retries were spent, a case no node can be scheduled for, an object lost)
is a ``CaseLost`` with Ray's reason; the driver reports it with the resume command. Tasks are spread over the
nodes (``SPREAD``), so a sweep uses the whole cluster rather than filling the driver's node first.

Cancelling (Ctrl-C) raises a flag in the cluster's key-value store that every case of this executor watches
(``CANCEL_POLL``): a running case stops at its next step (``run_item`` with its cancel event set returns
``{"cancelled": True}``), a queued one returns as soon as it starts. ``ray.cancel`` is not used: in Ray 2.60 a
cancel that meets a task being dispatched can abort the driver (a failed check in ``TaskManager::
CompletePendingTask``, "Tried to complete task that was not pending"), which would lose the sweep's record. A
case still stuck in a model call when the driver stops waiting is ended by Ray with the job when the driver
disconnects.

Token authentication (Ray 2.60 turns it on for clusters that ``ray.init`` starts, and for ``ray start`` when
a token exists): a driver joining a cluster at an explicit address does not send a token unless
``RAY_AUTH_MODE=token`` is set, and a cluster that wants one answers with a bare "Failed to connect" after about
20 s. So when ``RAY_AUTH_MODE`` is unset and a token is available here (``RAY_AUTH_TOKEN``,
``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), joining turns token mode on (a cluster without
authentication accepts such a driver too); without a token, a failed join says how to give the driver the
cluster's token. The private local Ray gets token authentication with a token of its own, held in this
process's environment (and so its Ray processes'), never written to ``~/.ray``.

Ray is an optional extra (``pip install "rlm-bench[ray]"``): importing this module does not import it.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Optional

from rlm_bench.sweep import CaseLost
from rlm_bench.sweep_file import RayOptions
from rlm_host import InputError, RlmError

INSTALL = 'pip install "rlm-bench[ray]"'
#: Seconds between two looks of a running case at the sweep's cancel flag.
CANCEL_POLL = 0.5
#: The namespace of the cancel flags in the cluster's key-value store.
KV_NAMESPACE = "rlm_bench"
#: The object store of a private local Ray (results and shipped trajectories pass through it).
LOCAL_OBJECT_STORE = 512 * 2**20


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


def token_available(environ: Optional[dict[str, str]] = None) -> bool:
    """Whether Ray would find an authentication token here (where its token loader looks)."""
    env = os.environ if environ is None else environ
    if env.get("RAY_AUTH_TOKEN", "").strip():
        return True
    path = env.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return Path(path).expanduser().is_file()
    return (Path.home() / ".ray" / "auth_token").is_file()


def auth_environment(joining: bool, environ: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The ``RAY_AUTH_*`` variables to set before ``ray.init`` (see the module docstring); {} if none."""
    env = os.environ if environ is None else environ
    if env.get("RAY_AUTH_MODE"):
        return {}  # the user chose
    if joining:
        return {"RAY_AUTH_MODE": "token"} if token_available(env) else {}
    if token_available(env):
        return {"RAY_AUTH_MODE": "token"}  # what ray.init does by default, with the token found
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


class RayExecutor:
    """Cases as Ray tasks (see the module docstring). Build it with ``connect``."""

    name = "ray"

    def __init__(self, ray: Any, options: RayOptions, *, owns_cluster: bool, address: str = "",
                 restore_env: Optional[dict[str, Optional[str]]] = None) -> None:  # fmt: skip
        self.ray = ray
        self.options = options
        self.capacity = options.max_in_flight
        self.owns_cluster = owns_cluster
        self.address = address
        self._restore_env = restore_env or {}
        self._items: dict[Any, dict[str, Any]] = {}
        self._cancelled: set[Any] = set()
        self._cancel_key = f"sweep-cancel-{secrets.token_hex(8)}"  # this executor's flag (a resume gets a new one)
        self._flag_raised = False
        self._joined = False  # this executor called ray.init (and so calls ray.shutdown)
        task_options: dict[str, Any] = {
            "num_cpus": options.num_cpus, "num_gpus": options.num_gpus, "max_retries": options.max_retries,
            "retry_exceptions": False,  # a Python exception is this case's answer on that node, not a crash
            "scheduling_strategy": "SPREAD",
        }  # fmt: skip
        if options.resources:
            task_options["resources"] = dict(options.resources)
        if options.runtime_env:
            task_options["runtime_env"] = dict(options.runtime_env)
        self._task = ray.remote(ray_case).options(**task_options)

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
        restore = {name: os.environ.get(name) for name in extra}
        os.environ.update(extra)
        try:
            ray = import_ray()
        except BaseException:
            _restore(restore)
            raise
        if extra:
            _refresh_auth_config()
        quiet = {"logging_level": logging.WARNING, "log_to_driver": False, "configure_logging": True}
        try:
            if address is None:
                ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                         object_store_memory=LOCAL_OBJECT_STORE, _node_ip_address="127.0.0.1", **quiet)  # fmt: skip
            else:
                _join(ray, address, quiet)
        except Exception as exc:  # noqa: BLE001 - every way of failing to start or join is one clear error
            _restore(restore)
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001
                pass
            raise _join_error(address, exc, token=token_available()) from None
        _errors_to_stderr(ray)
        executor = cls(ray, opts, owns_cluster=address is None, address=address or "local",
                       restore_env=restore)  # fmt: skip
        executor._joined = True
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
                  **self.options.resources}  # fmt: skip
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
        print(f"warning: {message}; cases wait until such a node joins ({hint})", file=sys.stderr)

    # ------------------------------------------------------------------------------------------------ the protocol

    def submit(self, item: dict[str, Any]) -> Any:
        ref = self._task.remote(item, self._cancel_key)
        self._items[ref] = item
        return ref

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
        item = self._items.pop(ref, {})
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
        if not self._flag_raised:
            self._flag_raised = True
            try:
                from ray.experimental.internal_kv import _internal_kv_put

                _internal_kv_put(self._cancel_key, b"1", overwrite=True, namespace=KV_NAMESPACE)
            except Exception as exc:  # noqa: BLE001 - the cases then end with the job when the driver leaves
                print(f"warning: could not tell the cluster to cancel the running cases: {exc}", file=sys.stderr)

    def close(self) -> None:
        """Disconnect (and stop the private local Ray, if this executor started it)."""
        if self._flag_raised:
            try:
                from ray.experimental.internal_kv import _internal_kv_del

                _internal_kv_del(self._cancel_key, namespace=KV_NAMESPACE)
            except Exception:  # noqa: BLE001 - a flag left behind names no other sweep
                pass
        if self._joined:
            self._joined = False
            try:
                self.ray.shutdown()
            except Exception:  # noqa: BLE001 - closing must not hide the sweep's outcome
                pass
        _restore(self._restore_env)
        self._restore_env = {}


def ray_case(item: dict[str, Any], cancel_key: Optional[str] = None) -> dict[str, Any]:
    """The Ray task of one case: ``run_item(item)`` in the worker Ray chose, stopped at its next step once the
    executor raises the flag ``cancel_key`` (see the module docstring)."""
    import threading

    from rlm_bench.sweep_worker import node_name, run_item

    if cancel_key is None:
        return run_item(item)
    if _flag_raised(cancel_key):
        return {"cancelled": True, "node": node_name()}
    cancel, finished = threading.Event(), threading.Event()

    def watch() -> None:
        while not finished.wait(CANCEL_POLL):
            if _flag_raised(cancel_key):
                cancel.set()
                return

    threading.Thread(target=watch, name="rlm-sweep-cancel", daemon=True).start()
    try:
        return run_item(item, cancel)
    finally:
        finished.set()


def _flag_raised(key: str) -> bool:
    try:
        from ray.experimental.internal_kv import _internal_kv_get

        return _internal_kv_get(key, namespace=KV_NAMESPACE) is not None
    except Exception:  # noqa: BLE001 - no answer is no cancel
        return False


# ---------------------------------------------------------------------------------------------------- helpers


def _restore(saved: dict[str, Optional[str]]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _errors_to_stderr(ray: Any) -> None:
    """Ray's driver prints the cluster's error messages (a node that died, a task retried) to *stdout*, whole
    raylet log tails included, which would corrupt ``--json``: send their first line to stderr instead."""
    try:
        worker = sys.modules["ray._private.worker"]
        original = worker.print_to_stdstream
    except (KeyError, AttributeError):
        return
    if getattr(original, "_rlm_bench", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        if data.get("pid") != "raylet":
            return original(data, ignore_prefix)
        for line in data.get("lines") or []:
            first = str(line).strip().splitlines()[0] if str(line).strip() else ""
            if first:
                print(f"ray: {first[:400]}", file=sys.stderr, flush=True)

    to_stderr._rlm_bench = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


def _refresh_auth_config() -> None:
    """Make this process's Ray see the ``RAY_AUTH_*`` variables set after it was imported (Ray reads them into
    its C++ config at import; ``ray.init`` refreshes it only when it picks the mode itself)."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
    except Exception:  # noqa: BLE001 - another Ray version: its own defaults apply
        pass


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


def _error_result(item: dict[str, Any], where: str, exc: BaseException) -> dict[str, Any]:
    """An exception that escaped ``run_item`` on a node (e.g. rlm-bench or a dependency missing there): this
    case's ``error`` result, naming the node."""
    from rlm_bench.summary import CaseResult

    manifest = item.get("manifest") or {}
    result = CaseResult(case_id=item.get("case_id", "?"), preset=manifest.get("preset", ""), status="error",
                        termination_reason="error", error=f"on node {where}: {type(exc).__name__}: {_gist(exc)}",
                        model=manifest.get("model") or "", sandbox=manifest.get("sandbox") or "",
                        environment=manifest.get("environment") or "")  # fmt: skip
    return {"result": result.model_dump(mode="json"), "node": where.split(" (pid")[0]}


def _join_error(address: Optional[str], exc: BaseException, *, token: bool) -> RlmError:
    causes, cause = [], exc.__cause__
    while cause is not None and len(causes) < 5:
        causes.append(cause)
        cause = cause.__cause__
    refused = next((c for c in causes if type(c).__name__ == "AuthenticationError"), None)
    if address is not None and refused is not None:
        return RayUnavailable(f"the Ray cluster at {address} refused this driver's token (or the lack of one): "
                              f"{_first_line(refused).split(' Note:')[0]}",
                              hint="give this driver the cluster's token: RAY_AUTH_TOKEN=$(ray get-auth-token) "
                                   "run on the head, or its ~/.ray/auth_token copied here")  # fmt: skip
    detail = _first_line(exc)
    if address is None:
        return RayUnavailable(f"could not start a local Ray for the sweep: {type(exc).__name__}: {detail}",
                              hint="see Ray's logs under /tmp/ray/session_latest/logs, or join a running "
                                   "cluster with --address")  # fmt: skip
    hint = "check the address (ray status on the head shows it; ray:// needs the head's client server port)"
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token" and not token:
        hint += ("; if the cluster uses token authentication (Ray's default for clusters that ray.init starts, "
                 "and for `ray start` where a token exists), give this driver its token: "
                 "RAY_AUTH_TOKEN=$(ray get-auth-token) on the head, or copy the head's ~/.ray/auth_token here")
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
            print(f"ray: {address} did not answer in time; trying again ({attempt + 1} of {attempts})",
                  file=sys.stderr)  # fmt: skip
            time.sleep(3 * attempt)
