"""What a run is doing now and how much of its budget it used, folded from its events as they are read.

The budget is the root ``run_start``'s ``settings`` (``max_steps``, ``timeout``, ``max_tokens``, ``max_cost``);
tokens and cost add up every ``model_call_end`` of the tree (a child run spends the root's budget). The calls in
progress are the live events' starts without their end yet (``model_call_start``/``end`` and ``code_start``/``end``
by ``call``, ``sub_call_start``/``sub_call`` by kind, prompt hash and index, ``child_run_start``/``end`` by child id);
the root's next ``step``, ``error`` or ``final`` closes whatever was left open, as docs/schemas.md says.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional


#: The clock of a live run's elapsed time (tests freeze it).
clock = time.time


def _first_line(text: Any, limit: int = 60) -> str:
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class LiveState:
    task: str = ""
    model: str = ""
    environment: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    started: Optional[float] = None
    last_ts: Optional[float] = None
    steps: int = 0
    current_step: Optional[int] = None
    tokens: int = 0
    cost: float = 0.0
    cost_known: bool = False
    final: Optional[dict[str, Any]] = None
    in_progress: dict[Any, str] = field(default_factory=dict)
    events: int = 0

    # ------------------------------------------------------------------ folding

    def on_step(self, count: int) -> None:
        self.steps = count
        self.current_step = None
        self.in_progress.clear()
        self.events += 1

    def on_event(self, event: dict[str, Any], *, root: bool) -> None:
        self.events += 1
        kind, data = event.get("type"), event.get("data") or {}
        ts = event.get("ts")
        if isinstance(ts, (int, float)):
            self.last_ts = float(ts)
        if kind == "run_start" and root:
            self.task, self.model = str(data.get("task") or ""), str(data.get("model") or "")
            self.environment = str(data.get("environment") or "")
            self.settings = got if isinstance(got := data.get("settings"), dict) else {}
            self.started = self.last_ts
        elif kind == "step_start" and root:
            self.current_step = data.get("step")
        elif kind == "model_call_start":
            self.in_progress[("call", data.get("call"))] = (
                f"model {data.get('model') or '?'} ({data.get('role') or '?'} {data.get('purpose') or ''})".rstrip())
        elif kind == "model_call_end":
            self.in_progress.pop(("call", data.get("call")), None)
            self.tokens += int(data.get("input_tokens") or 0) + int(data.get("output_tokens") or 0)
            if isinstance(data.get("cost"), (int, float)):
                self.cost += float(data["cost"])
                self.cost_known = True
        elif kind == "code_start":
            self.in_progress[("call", data.get("call"))] = (
                f"code step {data.get('step')} block {data.get('block')}: {_first_line(data.get('code'))}")
        elif kind == "code_end":
            self.in_progress.pop(("call", data.get("call")), None)
        elif kind == "sub_call_start":
            key = ("sub", data.get("kind"), data.get("prompt_hash"), data.get("index"))
            self.in_progress[key] = f"{data.get('kind') or 'sub-call'}: {_first_line(data.get('prompt'))}"
        elif kind == "sub_call":
            self.in_progress.pop(("sub", data.get("kind"), data.get("prompt_hash"), data.get("index")), None)
        elif kind == "child_run_start":
            self.in_progress[("child", data.get("child_run_id"))] = (
                f"child run {data.get('child_run_id')}: {_first_line(data.get('task'))}")
        elif kind == "child_run_end":
            self.in_progress.pop(("child", data.get("child_run_id")), None)
        elif kind in ("final", "error") and root:
            self.in_progress.clear()
            if kind == "final":
                self.final = data

    # ------------------------------------------------------------------ reading

    @property
    def finished(self) -> bool:
        return self.final is not None

    def elapsed(self, now: Optional[float] = None) -> float:
        """Seconds the run has taken: its recorded duration once finished, else up to now (``live``) or its last
        event."""
        if self.final is not None and isinstance(self.final.get("duration_s"), (int, float)):
            return float(self.final["duration_s"])
        if self.started is None:
            return 0.0
        end = now if now is not None else (self.last_ts or self.started)
        return max(0.0, end - self.started)

    def meters(self, live: bool) -> list[tuple[str, float, Optional[float], str]]:
        """(label, used, limit or None, text) for steps, time, tokens and cost."""
        s = self.settings
        elapsed = self.elapsed(clock() if live and not self.finished else None)
        out = [("steps", float(self.steps), _num(s.get("max_steps")), f"{self.steps}/{s.get('max_steps', '?')}"),
               ("time", elapsed, _num(s.get("timeout")), f"{elapsed:.1f}s/{_fmt(s.get('timeout'), 's')}")]
        limit = _num(s.get("max_tokens"))
        out.append(("tokens", float(self.tokens), limit, f"{self.tokens:,}" + (f"/{int(limit):,}" if limit else "")))
        cost = f"${self.cost:.4f}" if self.cost_known else "—"
        limit = _num(s.get("max_cost"))
        out.append(("cost", self.cost, limit, cost + (f"/${limit:g}" if limit else "")))
        return out

    def status(self) -> str:
        if self.final is not None:
            return str(self.final.get("termination_reason") or "done")
        return "running" if self.started is not None else "waiting"


def _num(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _fmt(value: Any, unit: str) -> str:
    return f"{value:g}{unit}" if isinstance(value, (int, float)) else "—"
