"""Recorded run trees made by hand, for tests of what reads trajectories back (a store, a replay, an exporter, a
viewer) without running a model.

    from rlm_host.testing import RunTreeEvents, sample_run_tree, write_trajectory

    def test_my_exporter_writes_every_step(tmp_path):
        events = RunTreeEvents("run_a")
        sample_run_tree(events)
        path = write_trajectory(tmp_path / ".rlm", events)      # <home>/runs/run_a.jsonl, as a run writes it

``RunTreeEvents`` numbers and times events as a run's event bus does (a fixed clock, so "newest first" does not
depend on test speed); ``step_data``, ``code_block`` and ``result_data`` build a step's record, an executed code
block and a final ``RunResult`` in the shapes the runner records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from rlm_host.events import EventType, RunEvent
from rlm_host.results import RunResult, RunUsage, StepRecord, Usage

#: When the events' fixed clock starts (seconds since the epoch); it moves one second per event.
SAMPLE_START = 1_795_000_000.0
#: The root model's replies of ``sample_run_tree``, one per root step.
SAMPLE_REPLIES = ["```repl\nprint(len(context))\n```", "```repl\nprint(x)\n```", "```repl\nFINAL('42')\n```"]


class RunTreeEvents:
    """The events of one run tree, in order (``events``); ``publish`` (say, an ``EventBus``'s ``emit``) also
    receives each one, and what it returns is kept."""

    def __init__(self, root: str, t0: float = SAMPLE_START,
                 publish: Optional[Callable[[RunEvent], RunEvent]] = None) -> None:
        self.root, self.ts, self.publish = root, t0, publish
        self.events: list[RunEvent] = []

    def emit(self, type_: EventType, run_id: str, data: dict, parent: Optional[str] = None, depth: int = 0) -> RunEvent:
        self.ts += 1.0
        event = RunEvent(type=type_, run_id=run_id, root_run_id=self.root, parent_run_id=parent, depth=depth,
                         ts=self.ts, seq=len(self.events) + 1, data=data)
        if self.publish is not None:
            event = self.publish(event)
        self.events.append(event)
        return event


def step_data(n: int, action: str, *, code: Optional[str] = None, reply: Optional[str] = None,
              observation: Optional[dict] = None, reward: float = 0.0, total: float = 0.0, sub: int = 0) -> dict:
    """A step event's data as the runner records it (root tokens 100 in / 20 out, ``sub`` sub-call tokens)."""
    usage = RunUsage(root=Usage(calls=1, input_tokens=100, output_tokens=20))
    if sub:
        usage.sub.add(sub, 0)
    record = StepRecord(step=n, action=action, code=code, reply=reply, observation=observation or {}, reward=reward,
                        cumulative_reward=total, usage=usage, duration_s=1.25)
    return record.model_dump(mode="json")


def code_block(code: str, stdout: str = "", error: Optional[str] = None) -> dict:
    """One executed code block of an observation, in pure_rlm's shape."""
    return {"code": code, "stdout": stdout, "duration_s": 0.01, **({"error": error} if error else {})}


def result_data(run_id: str, *, steps: int, reward: float, parent: Optional[str] = None, depth: int = 0,
                answer: str = "42", task: str = "count") -> dict:
    """A ``final`` event's data: a completed run's ``RunResult`` (priced, with sub-call tokens)."""
    usage = RunUsage(root=Usage(calls=steps, input_tokens=300, output_tokens=60, cost=0.003))
    usage.sub.add(50, 10, 0.0005)
    return RunResult(run_id=run_id, parent_run_id=parent, depth=depth, task=task, environment="pure_rlm",
                     model="openai:test", sandbox="process", completed=True, final_response=answer, steps=steps,
                     total_reward=reward, usage=usage, cost=0.0035, duration_s=4.5,
                     termination_reason="final").model_dump(mode="json")


def sample_run_tree(events: RunTreeEvents, *, final: bool = True, link_child: bool = True) -> str:
    """A whole run tree: step 1 calls ``rlm_query`` (a child run, linked by its sub-call unless not ``link_child``)
    and ``llm_query``, step 2 fails (a NameError), step 3 answers 42 and the run ends — unless not ``final``: then
    it was interrupted after step 2. Returns the child run's id."""
    root = events.root
    child = f"{root}_c1"
    events.emit("run_start", root, {"task": "How many characters are in the context? " * 5, "environment": "pure_rlm",
                                    "model": "openai:test", "sandbox": "process", "context": {"chars": 12345}})
    events.emit("run_start", child, {"task": "summarise chunk 0", "environment": "pure_rlm"}, root, 1)
    events.emit("step", child, step_data(1, "final", code="FINAL('chunk ok')", reply="FINAL('chunk ok')", reward=1.0,
                                         total=1.0, observation={"blocks": [code_block("FINAL('chunk ok')")],
                                                                 "success": True, "final_source": "code"}), root, 1)
    events.emit("final", child, result_data(child, steps=1, reward=1.0, parent=root, depth=1, answer="chunk ok"),
                root, 1)
    if link_child:
        events.emit("sub_call", root, {"kind": "rlm_query", "model": "openai:test", "prompt": "summarise chunk 0",
                                       "response": "chunk ok", "seconds": 1.5, "child_run_id": child})
    events.emit("sub_call", root, {"kind": "llm_query", "model": "openai:mini", "prompt": "classify",
                                   "response": "yes", "usage": {"input_tokens": 50, "output_tokens": 10}})
    code = "print(len(context))\nprint(rlm_query('summarise chunk 0'))"
    events.emit("step", root, step_data(1, "run_code", code=code, reply=SAMPLE_REPLIES[0], reward=0.1, total=0.1,
                                        sub=60, observation={"blocks": [code_block(code, "12345\nchunk ok\n")],
                                                             "success": True}))
    failed = code_block("print(x)", error="NameError: name 'x' is not defined")
    events.emit("step", root, step_data(2, "run_code", code="print(x)", reply=SAMPLE_REPLIES[1], reward=-0.1,
                                        total=0.0, observation={"blocks": [failed], "success": False}))
    if final:
        events.emit("step", root, step_data(3, "final", code="FINAL('42')", reply=SAMPLE_REPLIES[2], reward=1.0,
                                            total=1.0, observation={"blocks": [code_block("FINAL('42')")],
                                                                    "success": True, "final_source": "code"}))
        events.emit("final", root, result_data(root, steps=3, reward=1.0))
    return child


def write_trajectory(home: Path, events: RunTreeEvents) -> Path:
    """Write ``events`` where a run's trajectory goes, ``<home>/runs/<root>.jsonl``, one JSON line per event."""
    path = Path(home) / "runs" / f"{events.root}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(event.model_dump_json() + "\n" for event in events.events), encoding="utf-8")
    return path


__all__ = ["RunTreeEvents", "SAMPLE_REPLIES", "SAMPLE_START", "code_block", "result_data", "sample_run_tree",
           "step_data", "write_trajectory"]
