"""A trajectory file read incrementally and lazily, so a 10,000-step run opens at once and a live one is followed.

``<home>/runs/<root_run_id>.jsonl`` holds one ``RunEvent`` a line, flushed after every event. ``TrajectoryIndex``
reads the bytes it has not seen yet (``refresh()``: the whole file the first time, then what was appended), keeps
only the byte ranges of ``step`` lines (the big ones: code, reply, observation) and parses a step when it is shown
(``step(run_id, i)``, cached); so for ``branch`` lines, the candidates a step tried under ``--branch-width``
(``branches(run_id, i)``). Every other line is small and parsed at once; the live events among them feed
``LiveState``. A last line still being written (no newline yet) is kept for the next refresh.

Everything read here is hostile text (model output): it is only ever data, never markup or code.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from rlm_tui.live import LiveState

_HEAD = re.compile(rb'\{"type":"([a-z_]+)","operation":(?:null|"[a-z_]+"),"run_id":"([^"]+)"')
_CACHE = 512
#: A ``branch`` line: its byte range (parsed when shown), or its data when it had to be parsed to be read.
Branch = Union[tuple[int, int], dict[str, Any]]


@dataclass
class RunSteps:
    """One run of the tree: the byte ranges of its step lines and what happened between them."""

    run_id: str
    parent_run_id: Optional[str] = None
    depth: int = 0
    start: dict[str, Any] = field(default_factory=dict)
    spans: list[tuple[int, int]] = field(default_factory=list)  # (offset, length) of each step line
    sub_calls: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # step index → its sub_call data
    children: dict[int, list[str]] = field(default_factory=dict)  # step index → child run ids started in it
    branches: dict[int, list[Branch]] = field(default_factory=dict)  # step index → its candidates' branch lines
    pending_calls: list[dict[str, Any]] = field(default_factory=list)  # before the next step event
    pending_children: list[str] = field(default_factory=list)
    pending_branches: list[Branch] = field(default_factory=list)
    final: Optional[dict[str, Any]] = None
    errors: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.spans)


class TrajectoryIndex:
    """The runs of one trajectory file, growing as the file does (call ``refresh()``)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offset = 0  # bytes consumed (up to the end of the last whole line)
        self.runs: dict[str, RunSteps] = {}
        self.root_id: Optional[str] = None
        self.live = LiveState()
        self.bad_lines = 0
        self._cache: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self._errors: dict[str, list[Optional[str]]] = {}  # run id → error text per step index, filled lazily

    # ------------------------------------------------------------------ reading

    def refresh(self) -> int:
        """Read what was appended since the last call; the number of new events."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return 0
        end = chunk.rfind(b"\n")
        if end < 0:
            return 0
        count, position, base = 0, 0, self.offset
        view = chunk[: end + 1]
        while position <= end:
            stop = view.index(b"\n", position)
            if stop > position:
                self._line(view, position, stop, base)
                count += 1
            position = stop + 1
        self.offset = base + end + 1
        return count

    def _line(self, buffer: bytes, start: int, stop: int, base: int) -> None:
        head = _HEAD.match(buffer, start, min(stop, start + 400))
        if head is not None and head.group(1) == b"step":
            self._add_step(self._run(head.group(2).decode("utf-8", "replace"), None), base + start, stop - start)
            return
        if head is not None and head.group(1) == b"branch":  # a candidate's reply, code and output: big too
            self._run(head.group(2).decode("utf-8", "replace"), None).pending_branches.append((base + start,
                                                                                                stop - start))
            return
        try:
            event = json.loads(buffer[start:stop])
        except ValueError:
            self.bad_lines += 1
            return
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
            self.bad_lines += 1
            return
        if event.get("type") == "step":  # a line of another shape (an older schema): keep it parsed
            self._add_step(self._run(str(event.get("run_id")), event), base + start, stop - start, event["data"])
            return
        self._event(event)

    def _add_step(self, run: RunSteps, offset: int, length: int, data: Optional[dict[str, Any]] = None) -> None:
        """One step line: its byte range, the sub-calls and child runs since the run's previous step."""
        run.spans.append((offset, length))
        index = len(run.spans) - 1
        if data is not None:
            self._cache[(run.run_id, index)] = data
        if run.pending_calls:
            run.sub_calls[index], run.pending_calls = run.pending_calls, []
        if run.pending_children:
            run.children[index], run.pending_children = run.pending_children, []
        if run.pending_branches:
            run.branches[index], run.pending_branches = run.pending_branches, []
        if run.run_id == self.root_id:
            self.live.on_step(len(run.spans))

    def _run(self, run_id: str, event: Optional[dict[str, Any]]) -> RunSteps:
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = RunSteps(run_id)
            if event is not None:
                run.parent_run_id, run.depth = event.get("parent_run_id"), int(event.get("depth") or 0)
            if self.root_id is None:
                self.root_id = run_id
        return run

    def _event(self, event: dict[str, Any]) -> None:
        kind, data = event.get("type"), event["data"]
        run = self._run(str(event.get("run_id")), event)
        if kind == "run_start":
            run.start = data
            run.parent_run_id, run.depth = event.get("parent_run_id"), int(event.get("depth") or 0)
        elif kind == "sub_call":
            run.pending_calls.append(data)
        elif kind == "child_run_start" and data.get("child_run_id"):
            run.pending_children.append(str(data["child_run_id"]))
        elif kind == "branch":
            run.pending_branches.append(data)
        elif kind == "final":
            run.final = data
        elif kind == "error":
            run.errors.append(str(data.get("message") or data))
        if run.run_id == self.root_id or run.depth > 0:
            self.live.on_event(event, root=run.run_id == self.root_id)

    # ------------------------------------------------------------------ steps, parsed when shown

    @property
    def root(self) -> Optional[RunSteps]:
        return self.runs.get(self.root_id or "")

    def step(self, run_id: str, index: int) -> dict[str, Any]:
        """The ``data`` of step ``index`` (0-based) of run ``run_id``: parsed on first use, kept in a small cache."""
        key = (run_id, index)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        offset, length = self.runs[run_id].spans[index]
        try:
            with self.path.open("rb") as handle:
                handle.seek(offset)
                data = json.loads(handle.read(length)).get("data") or {}
        except (OSError, ValueError, AttributeError):
            data = {"step": index + 1, "action": "error", "observation": {"error": "unreadable step record"}}
        self._cache[key] = data
        if len(self._cache) > _CACHE:
            self._cache.popitem(last=False)
        return data

    def branches(self, run_id: str, index: int) -> list[dict[str, Any]]:
        """The candidates step ``index`` of run ``run_id`` tried (its ``branch`` events, ``--branch-width``), in
        order, the kept one with ``chosen``; [] for a step that did not branch."""
        run = self.runs.get(run_id)
        found = []
        for item in run.branches.get(index, []) if run else []:
            if isinstance(item, dict):
                found.append(item)
                continue
            try:
                with self.path.open("rb") as handle:
                    handle.seek(item[0])
                    data = json.loads(handle.read(item[1])).get("data")
            except (OSError, ValueError, AttributeError):
                data = None
            found.append(data if isinstance(data, dict) else {"error": "unreadable branch record"})
        return found

    def step_error(self, run_id: str, index: int) -> Optional[str]:
        """The step's error (its observation's, a code block's, or an ``error`` action's), as replay reports it."""
        errors = self._errors.setdefault(run_id, [])
        while len(errors) <= index:
            errors.append(_error_of(self.step(run_id, len(errors))))
        return errors[index]

    def error_indices(self, run_id: str) -> list[int]:
        """Indices of the run's error steps (parses every step once: a second or so for 10,000)."""
        return [i for i in range(len(self.runs[run_id])) if self.step_error(run_id, i)]


def _error_of(data: dict[str, Any]) -> Optional[str]:
    observation = got if isinstance(got := data.get("observation"), dict) else {}
    if observation.get("error"):
        return str(observation["error"])
    for block in observation.get("blocks") or []:
        if isinstance(block, dict) and (block.get("error") or block.get("timed_out")):
            return str(block.get("error") or "timed out")
    if data.get("action") == "error":
        return str(observation.get("message") or data.get("reply") or "error")
    return None
