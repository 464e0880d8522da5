"""One case of a sweep, run where an executor puts it: a thread of the driver, a worker process, or a Ray task on
any node of a cluster.

``run_item(item)`` (a ``SweepItem``) runs exactly what ``rlm bench run`` runs for that case
(``BenchmarkRunner.run_case``) with the settings, plugins, sandboxes, providers and keys of the process it runs in, and
returns plain JSON data: the ``CaseResult``, the node that ran it and, when asked, the run's trajectory (so the driver,
which alone writes the bench store, can keep it). Anything that stops the case on this node (a sandbox or provider it
cannot serve, a missing key) is an ``error`` result naming the node, never a silent fallback.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

#: Trajectories larger than this stay on the node that ran the case (the result says where).
SHIP_BYTES = 64_000_000

_CACHE: dict[str, Any] = {}  # per process: runners and presets, built once for each distinct settings
_LOCK = threading.Lock()


@dataclass(frozen=True)
class SweepItem:
    """One case of a sweep as an executor hands it to ``run_item``, on this machine or any node: plain data, pickled
    to worker processes and Ray tasks. The cases of one point share the same ``manifest`` and ``run`` dicts (a
    point's ``Manifest`` as JSON and its ``[run]`` settings), which an executor may send once per point."""

    benchmark_id: str
    case_id: str
    manifest: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    sweep_id: str = ""
    packs: tuple[str, ...] = ()  # pack files, as absolute paths
    config_file: Optional[str] = None  # the driver's --config file, as an absolute path
    cwd: Optional[str] = None  # the driver's working folder: where project settings are found
    home: Optional[str] = None  # the driver's run home (used where it exists and is writable)
    ship_trajectory: bool = False  # send the run's trajectory back with the result (another node ran it)
    trust: bool = False  # --trust-config


def node_name() -> str:
    """Where this runs: the Ray node (its IP and a short id) inside a Ray task, else this host's name."""
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        try:
            context = ray.get_runtime_context()
            return f"{ray.util.get_node_ip_address()}/{context.get_node_id()[:8]}"
        except Exception:  # noqa: BLE001 - a name is only a label
            pass
    return socket.gethostname()


def _runner(item: SweepItem) -> Any:
    """The ``RLMRunner`` of this item's settings: loaded here (this node's files, variables and plugins), with
    the point's ``[run]`` settings on top, labelled as coming from the sweep file."""
    from rlm_host.sdk.embedding import RLMRunner, load_settings

    key = json.dumps([item.config_file, item.cwd, item.home, item.run], sort_keys=True, default=str)
    with _LOCK:
        if key not in _CACHE:
            cwd = Path(item.cwd) if item.cwd and Path(item.cwd).is_dir() else None
            config = Path(item.config_file) if item.config_file else None
            loaded = load_settings(config_file=config if config and config.is_file() else None, cwd=cwd,
                                   trust=item.trust)
            loaded = loaded.with_run(item.run, {name: f"sweep file ({name})" for name in item.run})
            home = Path(item.home) if item.home and _writable(Path(item.home)) else None
            _CACHE[key] = RLMRunner(loaded=loaded, home=home)
        return _CACHE[key]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return os.access(folder, os.W_OK)
    except OSError:
        return False


def _case(item: SweepItem, runner: Any) -> Any:
    from rlm_bench.catalog import find_preset

    key = json.dumps(["preset", item.manifest["preset"], item.packs, id(runner)])
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = find_preset(item.manifest["preset"], runner.host, list(item.packs), loaded=runner.loaded)
        preset = _CACHE[key]
    for case in preset.cases:
        if case.case_id == item.case_id:
            return case
    from rlm_host import InputError

    raise InputError(f"preset {preset.name!r} has no case {item.case_id!r} here")


def run_item(item: SweepItem, cancel: Optional[threading.Event] = None) -> dict[str, Any]:
    """Run one case of a sweep; ``{"result": CaseResult JSON, "node": …, "trajectory": text?}``, or
    ``{"cancelled": True, "node": …}`` when it was cancelled underneath."""
    from rlm_bench.runner import BenchmarkRunner
    from rlm_bench.store import Manifest
    from rlm_bench.summary import CaseResult
    from rlm_host import RlmError

    node, started = node_name(), time.monotonic()
    manifest = Manifest.model_validate(item.manifest)
    try:
        runner = _runner(item)
        case = _case(item, runner)
        result = BenchmarkRunner(runner).run_case(case, manifest, cancel or threading.Event())
    except KeyboardInterrupt:  # a Ray cancel, or Ctrl-C in a worker process
        return {"cancelled": True, "node": node}
    except Exception as exc:  # noqa: BLE001 - this case fails on this node; the sweep goes on
        detail = str(exc) if isinstance(exc, RlmError) else f"{type(exc).__name__}: {exc}"
        hint = getattr(exc, "hint", "") or ""
        error = f"on node {node}: {detail}" + (f" ({hint})" if hint else "")
        result = CaseResult(case_id=item.case_id, preset=manifest.preset, status="error", termination_reason="error",
                            error=error, model=manifest.model or "", sandbox=manifest.sandbox or "",
                            environment=manifest.environment or "",
                            duration_s=round(time.monotonic() - started, 4))
    if result is None:
        return {"cancelled": True, "node": node}
    out: dict[str, Any] = {"result": result.model_dump(mode="json"), "node": node}
    if item.ship_trajectory and result.trajectory_path:
        path = Path(result.trajectory_path)
        try:
            if path.stat().st_size <= SHIP_BYTES:
                out["trajectory"] = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            pass
    return out
