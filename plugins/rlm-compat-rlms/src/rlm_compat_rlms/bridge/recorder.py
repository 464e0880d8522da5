"""``Recorder``: follows a completion's run events as they happen and gives the authors' interfaces what they
expect — the ``on_iteration_*`` / ``on_subcall_*`` callbacks, and (for a logger or ``verbose``) one ``RLMIteration``
per root turn, built as the ``rlms`` exporter builds its log (sub-calls in their block's ``rlm_calls``, a child run's
trajectory in its call's ``metadata``), with the messages the root model was really sent.

Callbacks get rlms' arguments: ``on_iteration_start(depth, iteration)``, ``on_iteration_complete(depth, iteration,
seconds)`` for the turns of every run of the tree (rlms 0.1.3 accepts these two and never calls them),
``on_subcall_start(depth, model, prompt_preview)`` and ``on_subcall_complete(depth, model, seconds, error_or_none)``
for each child run. A callback that raises is ignored, as in rlms."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from rlm_compat_rlms.core.types import CodeBlock, REPLResult, RLMChatCompletion, RLMIteration

PREVIEW_CHARS = 80


@dataclass(frozen=True)
class Callbacks:
    """The caller's callbacks (each None when not given)."""

    on_subcall_start: Optional[Callable[..., Any]] = None
    on_subcall_complete: Optional[Callable[..., Any]] = None
    on_iteration_start: Optional[Callable[..., Any]] = None
    on_iteration_complete: Optional[Callable[..., Any]] = None


class Recorder:
    """The run's ``on_event``; ``finish()`` once the run has ended. ``turn`` is the completion's ``Turn``."""

    def __init__(self, *, turn: Any, callbacks: Callbacks, model: str, logger: Any = None, printer: Any = None):
        self.turn = turn
        self.callbacks = callbacks
        self.model = model
        self.logger = logger
        self.printer = printer if printer is not None and printer.enabled else None
        self.iterations: list[RLMIteration] = []
        self._events: list[Any] = []
        self._lock = threading.Lock()

    @property
    def _keeps_iterations(self) -> bool:
        return self.logger is not None or self.printer is not None

    def __call__(self, event: Any) -> None:
        if self._keeps_iterations:
            with self._lock:
                self._events.append(event)
        data = event.data
        if event.type == "step_start":
            self._call("on_iteration_start", event.depth, data.get("step"))
        elif event.type == "step":
            self._call("on_iteration_complete", event.depth, data.get("step"), data.get("duration_s"))
            if event.depth == 0 and self._keeps_iterations:
                self._record(live=True)
        elif event.type == "child_run_start":
            self._call("on_subcall_start", data.get("depth"), self.model, str(data.get("task") or "")[:PREVIEW_CHARS])
        elif event.type == "child_run_end":
            self._call("on_subcall_complete", event.depth + 1, self.model, data.get("seconds"), data.get("error"))

    def finish(self) -> None:
        """Record what only the end tells (rlms' closing iteration when the turns ran out)."""
        if self._keeps_iterations:
            self._record(live=False)

    def _record(self, live: bool) -> None:
        from rlm_compat_rlms.log_format import to_rlms_log

        with self._lock:
            events = list(self._events)
            entries = [e for e in to_rlms_log(events) if e["type"] == "iteration"] if events else []
            steps = {e.data.get("step"): e.data for e in events if e.type == "step" and e.depth == 0}
            for entry in entries[len(self.iterations):]:
                iteration = self._iteration(entry, steps.get(entry["iteration"]), live)
                self.iterations.append(iteration)
                if self.logger is not None:
                    self.logger.log(iteration)
                if self.printer is not None:
                    self.printer.print_iteration(iteration, entry["iteration"])

    def _iteration(self, entry: dict[str, Any], step: Optional[dict[str, Any]], live: bool) -> RLMIteration:
        """An exporter entry as an ``RLMIteration``: the real prompt, and (while the run goes on, before the end
        says it) the final answer of the turn that gave it."""
        final = entry.get("final_answer")
        blocks_seen = ((step or {}).get("observation") or {}).get("blocks") or []
        if live and step is not None and step.get("action") == "final":
            final = self.turn.final_answer if self.turn is not None else final
        blocks = []
        for index, block in enumerate(entry["code_blocks"]):
            result = block["result"]
            marked = index < len(blocks_seen) and blocks_seen[index].get("final") is not None
            calls = [RLMChatCompletion.from_dict(call) for call in result.get("rlm_calls") or []]
            outcome = REPLResult(result["stdout"], result["stderr"], {}, result.get("execution_time"), calls,
                                 final if marked else result.get("final_answer"))
            blocks.append(CodeBlock(block["code"], outcome))
        prompt = self.turn.prompts.get(entry["iteration"]) if self.turn is not None else None
        return RLMIteration(prompt if prompt is not None else entry["prompt"], entry["response"], blocks, final,
                            entry.get("iteration_time"))

    def _call(self, name: str, *args: Any) -> None:
        callback = getattr(self.callbacks, name)
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:  # a caller's callback never breaks the run (as in rlms)
            pass


__all__ = ["Callbacks", "Recorder"]
