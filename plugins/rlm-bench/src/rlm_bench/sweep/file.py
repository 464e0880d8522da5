"""Sweep files: a grid of benchmark runs in one TOML file, expanded into points (one benchmark each).

::

    [sweep]
    name = "models-by-framework"
    presets = ["niah_quick", "multi_doc"]       # required; pack files add theirs: packs = ["my_pack.yaml"]
    models = ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"]
    frameworks = ["native", "dspy-rlm"]        # default ["native"]
    environments = []                          # empty: each case's own
    sandboxes = ["docker"]                     # empty: the configured one
    instructions = ["", "@guidance.txt"]       # "" or absent: none
    repeat = 3                                 # each point this many times (a separate benchmark each)
    limit = 20                                 # the first N cases of every preset

    [run]                                      # [run] settings of every case (limits, sinks, labels…)
    timeout = 300
    max_cost = 0.20

    [[override]]                               # where a point matches every axis given here…
    model = "anthropic:claude-3-5-haiku-latest"
    run = { timeout = 600 }                    # …these [run] settings apply on top

    [bench.ray]                                # for --executor ray (see rlm_bench.sweep.ray_executor)
    num_cpus = 0.25

A point has the identity a single ``rlm bench run --preset P --model M --framework F --env E --sandbox S
--instructions I`` would have, so ``rlm bench compare``, ``rlm leaderboard`` and the reports read its benchmark
unchanged; its runs carry the labels ``sweep_id``, ``sweep_point`` and ``repeat``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rlm_host import InputError

AXES = ("preset", "model", "framework", "environment", "sandbox", "instructions")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RayOptions(Strict):
    """``[bench.ray]``: how cases become Ray tasks."""

    address: Optional[str] = Field(None, description="cluster to join ('auto', 'ray://host:port'); --address wins")
    num_cpus: float = Field(0.25, gt=0, description="CPUs a case reserves (cases mostly wait on models)")
    num_gpus: float = Field(0.0, ge=0)
    resources: dict[str, float] = Field(default_factory=dict, description="custom resources a case needs")
    runtime_env: dict[str, Any] = Field(default_factory=dict, description="Ray runtime_env of every case task")
    max_in_flight: int = Field(64, ge=1, le=100_000, description="cases submitted and not yet finished, at most")
    max_retries: int = Field(2, ge=0, le=20, description="reruns of a case whose node or worker died")


class BenchSection(Strict):
    ray: RayOptions = Field(default_factory=RayOptions)


class Override(Strict):
    """``[[override]]``: ``run`` settings for the points matching every axis value given."""

    preset: Optional[str] = None
    model: Optional[str] = None
    framework: Optional[str] = None
    environment: Optional[str] = None
    sandbox: Optional[str] = None
    instructions: Optional[str] = None
    run: dict[str, Any] = Field(default_factory=dict)

    def matches(self, point: "Point") -> bool:
        return all(getattr(self, axis) is None or getattr(self, axis) == getattr(point, axis) for axis in AXES)


class Grid(Strict):
    """``[sweep]``: the axes (each a list; an empty or absent optional axis means "as configured")."""

    name: str = ""
    presets: list[str] = Field(min_length=1)
    packs: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    sub_model: Optional[str] = None
    judge_model: Optional[str] = None
    frameworks: list[str] = Field(default_factory=lambda: ["native"])
    environments: list[str] = Field(default_factory=list)
    sandboxes: list[str] = Field(default_factory=list)
    instructions: list[str] = Field(default_factory=list)
    repeat: int = Field(1, ge=1, le=1000)
    limit: Optional[int] = Field(None, ge=1)
    mode: Literal["native", "direct-llm"] = "native"

    @field_validator("presets", "models", "frameworks", "environments", "sandboxes", "instructions")
    @classmethod
    def _distinct(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(value.strip() for value in values))


class SweepFile(Strict):
    sweep: Grid
    run: dict[str, Any] = Field(default_factory=dict)
    override: list[Override] = Field(default_factory=list)
    bench: BenchSection = Field(default_factory=BenchSection)


@dataclass(frozen=True)
class Point:
    """One benchmark of the sweep: its axis values (None: as configured / each case's own) and repeat number."""

    preset: str
    model: Optional[str]
    framework: str
    environment: Optional[str]
    sandbox: Optional[str]
    instructions: Optional[str]
    repeat: int
    run: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """A stable name of the point: its axis values and repeat."""
        parts = [f"{axis}={getattr(self, axis)}" for axis in AXES if getattr(self, axis) not in (None, "")]
        return " ".join([*parts, f"repeat={self.repeat}"])

    def to_json(self) -> dict[str, Any]:
        return {**{axis: getattr(self, axis) for axis in AXES}, "repeat": self.repeat, "run": self.run}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Point":
        axes: dict[str, Any] = {axis: data.get(axis) for axis in AXES}
        return cls(**axes, repeat=int(data.get("repeat", 1)), run=dict(data.get("run") or {}))


def load_sweep(path: Path) -> SweepFile:
    """The sweep file at ``path``, validated: every error names the file and the key (exit 2)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"sweep file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read sweep file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    try:
        return SweepFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in exc.errors())
        raise InputError(f"{path}: {problems}", hint="see `rlm bench sweep --help` for the file's keys") from None


#: ``[bench.ray]`` settings an untrusted sweep file (or a record nobody signed) may not give, and why: Ray trusts
#: its cluster (a case's result comes back pickled, and the cluster sees every case's keys and data).
CLUSTER_RISKS = {
    "address": "joins a Ray cluster that runs your cases (Ray trusts its cluster: results come back pickled)",
    "runtime_env": "installs and runs programs on every node of the cluster",
}


def cluster_risks(ray: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """The ``[bench.ray]`` settings of ``ray`` (the table as data) that an untrusted file may not give:
    ``(key, value, why)``. Only the user's own ``--address`` chooses a cluster then."""
    return [(key, ray[key], why) for key, why in CLUSTER_RISKS.items() if ray.get(key)]


def check_trusted(spec: SweepFile, file: Path, host: Any, *, trust: bool = False) -> None:
    """A sweep file may come with a cloned project: what it asks that moves keys or data elsewhere, weakens
    isolation or reads files outside its folder (a ``[run]`` base URL, a sandbox that is no boundary, a model or
    ``@instructions`` file outside, a Ray cluster to join or a ``runtime_env`` that installs and runs programs on
    it) is refused, naming each, unless the user trusts the file as it is (``rlm config trust FILE``,
    ``--trust-config``). Models, sandboxes, paths and ``[run]`` settings are judged by the host's screening of
    project files (``risk_of``: a model file in either spelling, ``scripted:PATH`` or ``scripted/PATH``)."""
    import os

    from rlm_host.sdk.embedding import is_trusted, risk_of

    if trust or is_trusted(file, tomllib.loads(file.read_text(encoding="utf-8")), os.environ):
        return
    folder = file.parent.resolve()
    asked: list[tuple[str, str, Any]] = [("run." + key, f"[run] {key}", value) for key, value in spec.run.items()]
    for number, override in enumerate(spec.override, 1):
        asked += [("run." + key, f"[[override]] #{number} run.{key}", value) for key, value in override.run.items()]
    grid = spec.sweep
    asked += [("run.model", "models", model) for model in [*grid.models, *filter(None, (grid.sub_model,
                                                                                        grid.judge_model))]]
    asked += [("run.sandbox", "sandboxes", sandbox) for sandbox in grid.sandboxes]
    asked += [("run.instructions", "instructions", text) for text in grid.instructions if text]
    asked += [("run.workdir", "packs", pack) for pack in grid.packs]
    refused = [f"{where} = {value!r} ({reason})" for key, where, value in asked
               if (reason := risk_of(key, value, folder, host))]
    refused += [f"[bench.ray] {key} = {value!r} ({why})" for key, value, why in
                cluster_risks(spec.bench.ray.model_dump())]
    if refused:
        raise InputError(f"{file} is not trusted, and it asks for: " + "; ".join(refused),
                         hint=f"if you trust it, run `rlm config trust {file}` (or pass --trust-config)")


def expand(spec: SweepFile) -> list[Point]:
    """Every point of the grid, in a stable order (presets outermost, repeats innermost), each with its ``[run]``
    settings: the file's ``[run]``, then every matching ``[[override]]`` in file order."""
    grid = spec.sweep
    none: list[Optional[str]] = [None]
    axes = product(grid.presets, [*grid.models] or none, grid.frameworks or ["native"], [*grid.environments] or none,
                   [*grid.sandboxes] or none, [i or None for i in grid.instructions] or none)
    points = []
    for preset, model, framework, environment, sandbox, instructions in axes:
        for repeat in range(1, grid.repeat + 1):
            bare = Point(preset, model, framework, environment, sandbox, instructions, repeat)
            run = dict(spec.run)
            for override in spec.override:
                if override.matches(bare):
                    run.update(override.run)
            points.append(Point(preset, model, framework, environment, sandbox, instructions, repeat, run))
    return points
