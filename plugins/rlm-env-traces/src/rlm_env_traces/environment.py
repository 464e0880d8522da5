"""The ``trace_analysis`` environment (alias ``traces``): JSON actions over a ``TraceStore``, no code execution.

Each reply is one JSON object, ``{"action": …}``, parsed as the generic environment parses its own. The trace file
comes from ``--context FILE``: the spec sets ``context_as_path``, so ``ctx.context`` is that file's ``Path``,
never its content (a 1 GB file is indexed, not loaded). Without one, ``trace=<path>`` (or ``trace_path=``) in the
task names it, and the model can switch files with ``set_trace_path``. Paths the model gives are confined to the
trace file's folder and the output folder (``[environment.trace_analysis] output_dir``); an export goes to a new
folder there. Every read and search is bounded by the run's time left. Each successful action
earns the seeds' reward (``ACTION_REWARDS``); a failed one is scored as failed code, an unknown one as no action.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ActionResult, InputError, RlmError
from rlm_host.sdk.environments import EnvironmentContext, reply_action, truncate, with_instructions
from rlm_host.sdk.models import Completion, Message

from rlm_env_traces.paths import confined, new_folder_name, trace_path_of
from rlm_env_traces.store import TraceStore

ACTION_REWARDS = {
    "set_trace_path": 0.55, "get_dataset_overview": 0.45, "query_traces": 0.50, "count_traces": 0.35,
    "view_trace": 0.65, "search_trace": 0.65, "view_spans": 0.70, "export_evidence_corpus": 0.75,
}
FILTERS = ("has_errors", "model", "service", "agent")
RECENT_STEPS = 4
OLDER_OBSERVATION_CHARS = 800

SYSTEM_PROMPT = """\
You analyse the OpenTelemetry traces of an agent harness to find SYSTEMIC failure modes — failures that recur \
across traces — not one-off anomalies. Back every finding with evidence: trace ids and span ids.
Return ONLY one JSON object with an "action" key:
- {"action": "get_dataset_overview"}
- {"action": "query_traces", "has_errors": true, "model": "…", "service": "…", "agent": "…", "limit": 20, "offset": 0}
- {"action": "count_traces", <same filters>}
- {"action": "view_trace", "trace_id": "…"}
- {"action": "view_spans", "trace_id": "…", "span_ids": ["…"]}
- {"action": "search_trace", "trace_id": "…", "pattern": "…", "regex": false}
- {"action": "export_evidence_corpus", "directory": "…", <filters>}
- {"action": "set_trace_path", "path": "…"}
- {"action": "final", "final_response": "your report: each failure mode, how often, evidence ids"}
Spans show their kind (CLIENT: a call out, such as a model call; INTERNAL: a step) and their events (what \
happened inside a span: code run, its output, a model's reply, an exception); search_trace searches those too.
Filters are optional. No markdown. JSON only."""


class TraceSettings(BaseModel):
    """``[environment.trace_analysis]``."""

    model_config = ConfigDict(extra="forbid")

    max_observation_chars: int = Field(20_000, ge=500, description="the last observation shown in the prompt")
    output_dir: str = Field("trace-evidence", description="where exports go (relative to the working directory)")


class TraceAnalysisEnvironment:
    name = "trace_analysis"

    def __init__(self, settings: Optional[TraceSettings], ctx: EnvironmentContext) -> None:
        self.ctx = ctx
        self.settings = settings or TraceSettings()
        self.output_dir = ctx.guarded_folder(Path(self.settings.output_dir), "write trace exports in")
        self.store: Optional[TraceStore] = None
        self.trace = trace_path_of(ctx.context, ctx.task)
        # where set_trace_path and the exports may reach; with no trace named, the working folder, which is guarded
        # (refused before the run when it is a home, documents or system folder)
        self.base = Path.cwd() if self.trace is not None else ctx.guarded_folder(None, "open trace files in")
        self.roots: list[Path] = [self.output_dir] if self.trace is not None else [self.output_dir, self.base]
        self.steps: list[dict[str, Any]] = []

    def start(self) -> None:
        """Index the trace file named by the context or the task (before step 1, as the seeds do)."""
        if self.trace is not None:
            self._open(self.trace)

    def close(self) -> None:
        self.store = None

    def messages(self, step: int) -> list[Message]:
        lines = [f"Task: {self.ctx.task}", f"Step: {step} of {self.ctx.max_steps}"]
        if self.store is None:
            lines.append("No trace file is loaded: use set_trace_path.")
        else:
            overview = json.dumps(self.store.get_overview(), ensure_ascii=False)
            lines.append(f"Trace file: {self.store.path}\nOverview: {truncate(overview, 4000)}")
        if self.steps:
            recent = self.steps[-RECENT_STEPS:]
            shown = [{**s, "observation": truncate(s["observation"], OLDER_OBSERVATION_CHARS)} for s in recent[:-1]]
            shown.append({**recent[-1], "observation": truncate(recent[-1]["observation"],
                                                                self.settings.max_observation_chars)})
            lines.append("Recent steps:\n" + "\n".join(json.dumps(s, ensure_ascii=False) for s in shown))
        system = with_instructions(SYSTEM_PROMPT, self.ctx.instructions)  # the user's guidance, after ours
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(lines)}]

    def execute(self, reply: Completion, step: int) -> ActionResult:
        action, problem = reply_action(reply)  # the generic environment's reading, the seeds' rule included
        if action is None:
            return self._record(ActionResult(action="malformed_reply", observation={"error": problem},
                                             reward=-self.ctx.rewards.no_action_penalty))
        name = str(action.get("action", "")).strip()
        if name == "final":
            answer = action.get("final_response")
            answer = answer if isinstance(answer, str) else json.dumps(answer, default=str)
            return self._record(ActionResult(action="final", observation={}, reward=self.ctx.rewards.final_reward,
                                             done=True, final_response=answer))
        handler = self._handlers().get(name)
        if handler is None:
            return self._record(ActionResult(action="invalid_action", observation={"error": f"unknown action {name!r}"},
                                             reward=-self.ctx.rewards.no_action_penalty))
        try:
            observation = handler(action)
        except (InputError, ValueError, TypeError, KeyError) as exc:
            return self._record(ActionResult(action=name, observation={"error": str(exc)},
                                             reward=self.ctx.rewards.code_step(ok=False, stderr=False)))
        return self._record(ActionResult(action=name, observation={"success": True, "result": observation},
                                         reward=ACTION_REWARDS[name], memory_note=f"{name} ok"))

    def synthesize(self) -> Optional[str]:
        messages = self.messages(self.ctx.max_steps) + [
            {"role": "user", "content": "Steps are used up. Give your best report now as plain text."}
        ]
        completion = self.ctx.root.complete(messages, purpose="synthesis")
        return completion.text.strip() if completion.text else None

    # ------------------------------------------------------------------ actions

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            "set_trace_path": lambda a: self._open(confined(a["path"], self.base, self.roots)).get_overview(),
            "get_dataset_overview": lambda a: self._loaded().get_overview(),
            "query_traces": lambda a: self._loaded().query_traces(**_filters(a), limit=int(a.get("limit", 20)),
                                                                   offset=int(a.get("offset", 0))),
            "count_traces": lambda a: {"count": self._loaded().count_traces(**_filters(a)), "filters": _filters(a)},
            "view_trace": lambda a: self._loaded().view_trace(str(a["trace_id"])),
            "view_spans": lambda a: self._loaded().view_spans(str(a["trace_id"]), _id_list(a["span_ids"])),
            "search_trace": lambda a: self._loaded().search_trace(str(a["trace_id"]), str(a["pattern"]),
                                                                   regex=bool(a.get("regex", False))),
            "export_evidence_corpus": lambda a: self._loaded().export_evidence_corpus(
                confined(a.get("directory") or new_folder_name(), self.output_dir, self.roots), **_filters(a),
                limit=int(a.get("limit", 200))),
        }

    def _open(self, path: Path) -> TraceStore:
        self.store = TraceStore.load(path, time_left=self.ctx.budget.remaining)
        self.base, self.roots = self.store.path.parent, [self.output_dir, self._trace_root(self.store.path)]
        return self.store

    def _trace_root(self, trace: Path) -> Path:
        """Where set_trace_path may reach from the open trace: its folder, or the file alone when that folder is a
        home, documents or system folder (the model would read whatever lies there) and the run does not allow it."""
        try:
            return self.ctx.guarded_folder(trace.parent)
        except RlmError:
            return trace

    def _loaded(self) -> TraceStore:
        if self.store is None:
            raise InputError("no trace file is loaded: use set_trace_path first")
        return self.store

    def _record(self, result: ActionResult) -> ActionResult:
        observation = json.dumps(result.observation, ensure_ascii=False, default=str)
        self.steps.append({"action": result.action, "reward": round(result.reward, 3), "observation": observation})
        return result


def _filters(action: dict[str, Any]) -> dict[str, Any]:
    """The query filters an action names (``has_errors`` as a bool, the others as text)."""
    found = {key: action[key] for key in FILTERS if action.get(key) not in (None, "")}
    if "has_errors" in found:
        found["has_errors"] = found["has_errors"] in (True, "true", "True", 1)
    return {key: value if key == "has_errors" else str(value) for key, value in found.items()}


def _id_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ValueError("span_ids must be a non-empty list of span ids")
    return [str(item) for item in value]
