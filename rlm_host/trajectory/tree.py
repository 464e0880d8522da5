"""Replay: a saved run tree read back as steps, with child runs nested under the step that spawned them.

Events are grouped per run (``run_id``). A run's ``sub_call`` events and its child runs happen while a step's
code executes, before that step's ``step`` event, so each is attached to the next step event of its parent run;
a ``sub_call`` with ``data.child_run_id`` names the child run it started. ``Replay`` holds the tree and the root
run's steps; rlm-runs prints them (``rlm runs show``, ``rlm replay``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from rlm_host.events import RunEvent
from rlm_host.results import RunResult, StepRecord


@dataclass
class SubCall:
    """One ``sub_call`` event: a sub-model call or a child run started from sandbox code."""

    event: RunEvent
    child: Optional["RunTrace"] = None

    @property
    def kind(self) -> str:
        return str(self.event.data.get("kind") or "sub_call")

    @property
    def child_run_id(self) -> Optional[str]:
        return self.event.data.get("child_run_id")


@dataclass
class ReplayStep:
    """One step of a run: its record, the sub-calls made during it and the child runs it spawned."""

    record: StepRecord
    event: RunEvent
    sub_calls: list[SubCall] = field(default_factory=list)
    children: list["RunTrace"] = field(default_factory=list)
    branches: list[dict[str, Any]] = field(default_factory=list)  # --branch-width: every candidate tried

    @property
    def number(self) -> int:
        return self.record.step

    @property
    def error(self) -> Optional[str]:
        """The observation's error (of the step or of one of its code blocks), or why an ``error`` action failed."""
        error = observation_error(self.record.observation)
        if error is None and self.record.action == "error":
            return str(self.record.observation.get("message") or self.record.reply or "error")
        return error

    @property
    def is_error(self) -> bool:
        return self.error is not None


@dataclass
class RunTrace:
    """One run of the tree: its start data, steps, final result and any events after its last step."""

    run_id: str
    parent_run_id: Optional[str] = None
    depth: int = 0
    start: dict[str, Any] = field(default_factory=dict)
    steps: list[ReplayStep] = field(default_factory=list)
    result: Optional[RunResult] = None
    errors: list[RunEvent] = field(default_factory=list)
    pending_sub_calls: list[SubCall] = field(default_factory=list)  # after the last step (interrupted run)
    pending_children: list["RunTrace"] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.result is None


class Replay:
    """A loaded trajectory as a run tree: ``root`` (its root run), ``runs`` (every run by id) and the root's
    ``steps``."""

    def __init__(self, events: Iterable[RunEvent]) -> None:
        self.events = sorted(events, key=lambda e: e.seq)
        if not self.events:
            raise ValueError("a replay needs at least one event")
        self.runs = _build(self.events)
        root_id = self.events[0].root_run_id
        self.root = self.runs.get(root_id) or self.runs[self.events[0].run_id]
        self.steps = self.root.steps

    @property
    def result(self) -> Optional[RunResult]:
        return self.root.result

    def __len__(self) -> int:
        return len(self.steps)

    def step(self, index: int) -> ReplayStep:
        """The step at ``index`` (0-based); IndexError when out of range."""
        if not 0 <= index < len(self.steps):
            raise IndexError(f"step index {index} out of range (run has {len(self.steps)} steps)")
        return self.steps[index]

    def errors(self) -> list[int]:
        """Indices of the steps whose observation has an error or whose action is ``error``."""
        return [i for i, s in enumerate(self.steps) if s.is_error]


def _build(events: list[RunEvent]) -> dict[str, RunTrace]:
    """Group events into runs, attach sub-calls and child runs to the steps that made them."""
    runs: dict[str, RunTrace] = {}
    first_seq: dict[str, int] = {}
    branches: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        run = runs.get(event.run_id)
        if run is None:
            run = runs[event.run_id] = RunTrace(event.run_id, event.parent_run_id, event.depth)
            first_seq[event.run_id] = event.seq
        if event.type == "run_start":
            run.start = dict(event.data)
        elif event.type == "sub_call":
            run.pending_sub_calls.append(SubCall(event))  # the next step's, unless the run ends first
        elif event.type == "branch":
            branches.setdefault(event.run_id, []).append(dict(event.data))
        elif event.type == "step":
            run.steps.append(ReplayStep(_step_record(event.data, len(run.steps) + 1), event, run.pending_sub_calls,
                                        branches=branches.pop(event.run_id, [])))
            run.pending_sub_calls = []
        elif event.type == "final":
            try:
                run.result = RunResult.model_validate(event.data)
            except ValueError:  # an unreadable result still ends the run: keep it as an error event
                run.errors.append(event)
        elif event.type == "error":
            run.errors.append(event)
    _attach_children(runs, first_seq)
    return runs


def _step_record(data: dict[str, Any], number: int) -> StepRecord:
    """A step's record; one that does not validate is kept as an error step rather than lost."""
    try:
        return StepRecord.model_validate(data)
    except ValueError as exc:
        return StepRecord(step=number, action="error",
                          observation={"error": f"unreadable step record: {str(exc).splitlines()[0]}"})


def _attach_children(runs: dict[str, RunTrace], first_seq: dict[str, int]) -> None:
    """Nest each child run under its parent's step: by the sub_call naming it, else by event order."""
    linked: set[str] = set()
    for run in runs.values():
        holders = [(s.sub_calls, s.children) for s in run.steps] + [(run.pending_sub_calls, run.pending_children)]
        for calls, children in holders:
            for call in calls:
                child = runs.get(call.child_run_id or "")
                if child is not None and child.run_id not in linked:
                    call.child = child
                    children.append(child)
                    linked.add(child.run_id)
    for child in runs.values():
        parent = runs.get(child.parent_run_id or "")
        if parent is None or child.run_id in linked:
            continue
        seq = first_seq[child.run_id]
        step = next((s for s in parent.steps if s.event.seq > seq), None)
        (step.children if step else parent.pending_children).append(child)


def observation_error(observation: dict[str, Any]) -> Optional[str]:
    """The error an observation records: its own ``error``, else the first code block's error or time-out."""
    if observation.get("error"):
        return str(observation["error"])
    for block in observation.get("blocks") or []:
        if isinstance(block, dict) and (block.get("error") or block.get("timed_out")):
            return str(block.get("error") or "timed out")
    return None


def run_labels(start: dict[str, Any]) -> dict[str, str]:
    """A run's labels (``--label``, a fork's ``fork_of`` / ``fork_at``), from its ``run_start`` data."""
    settings = start.get("settings")
    labels = settings.get("labels") if isinstance(settings, dict) else None
    return {str(key): str(value) for key, value in labels.items()} if isinstance(labels, dict) else {}
