"""Helpers every environment needs: the context description as prompt text, the final answer as text, the
middle-cut of long output (``rlm_host.text.clip``), the JSON action in a reply (``reply_action``, the rule of
every JSON-action environment: rlm-env-generic, rlm-env-dspy) and model code run in the sandbox with its live
events (``execute_code``)."""

from __future__ import annotations

import json
import time
from typing import Any, Optional

from rlm_host.event_types import error_line, live_text, next_call
from rlm_host.results import FinalSignal
from rlm_host.models.protocol import Completion
from rlm_host.redact import redacted_clip
from rlm_host.tools.protocol import json_objects


def execute_code(scope: Any, session: Any, code: str, timeout: float, *, step: Optional[int] = None,
                 block: Optional[int] = None) -> Any:
    """``session.execute(code, timeout=timeout)`` bracketed by the ``code_start`` / ``code_end`` live events of
    ``scope``, so a live view shows the code in progress whatever environment or framework runs it. A sandbox
    failure (not the code's) ends with ``ok: false`` and is raised."""
    where = {"call": next_call(), "step": step, "block": block}
    scope.emit("code_start", {**where, "code": live_text(code)})
    started = time.monotonic()
    try:
        result = session.execute(code, timeout=timeout)
    except BaseException as exc:
        scope.emit("code_end", {**where, "ok": False, "seconds": round(time.monotonic() - started, 3),
                                "error": error_line(f"{type(exc).__name__}: {exc}")})
        raise
    scope.emit("code_end", {**where, "ok": result.ok, "seconds": round(time.monotonic() - started, 3),
                            "error": error_line(result.error), "final": result.final is not None})
    return result


def truncate(text: str, limit: int) -> str:
    """Head and tail of ``text`` with a marker saying how much was cut from the middle; known secrets are masked
    first, so a cut through one never leaves its prefix in clear."""
    return redacted_clip(text, limit, "middle") or ""


def answer_text(final: FinalSignal) -> str:
    """The final answer as a string: text as is, anything else as JSON (SUBMIT's single ``answer`` unwrapped)."""
    value: Any = final.value
    if final.kind == "submit" and isinstance(value, dict) and list(value) == ["answer"]:
        value = value["answer"]
    return tool_result_text(value)


def tool_result_text(value: Any) -> str:
    """A value as the model is shown it (a tool's result, a final answer): a string as it is, anything else as
    JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def render_description(meta: dict[str, Any], preview_chars: Optional[int] = None) -> str:
    """The metadata as a few lines of text for the first user message, its preview cut to ``preview_chars``."""
    kind = meta["type"]
    if kind == "none":
        return "nothing (context is None): answer from the query alone, using llm_query if useful."
    if kind == "path":
        return f"the file {meta['path']} ({meta['bytes']:,} bytes), read by the environment, not loaded"
    lines = []
    if kind == "str":
        lines.append(f"a string of {meta['total_chars']:,} characters")
    elif kind == "list":
        lengths = meta["document_lengths"]
        more = ", …" if meta["documents"] > len(lengths) else ""
        lines.append(f"a list of {meta['documents']:,} documents, {meta['total_chars']:,} characters in total")
        lines.append("document lengths: [" + ", ".join(f"{n:,}" for n in lengths) + more + "]")
    else:
        lines.append(f"a JSON {kind} of {meta['total_chars']:,} characters when serialised")
        if "keys" in meta:
            more = ", …" if meta["key_count"] > len(meta["keys"]) else ""
            lines.append(f"{meta['key_count']:,} keys: {', '.join(meta['keys'])}{more}")
    lines.append(f"preview of the start: {meta.get('preview', '')[:preview_chars]!r}")
    return "\n".join(lines)


class StepHistory:
    """What a JSON-action environment remembers between turns (RLM Code's planner prompt): the last memory notes
    (``ActionResult.memory_note``, at most eight kept) and a line per recent step (action, success, reward)."""

    MEMORY_LIMIT = 8

    def __init__(self) -> None:
        self.memory: list[str] = []
        self.steps: list[dict[str, Any]] = []

    def record(self, result: Any) -> Any:
        """Remember one step's ActionResult; returns it, so ``return history.record(result)`` reads well."""
        if result.memory_note:
            self.memory = (self.memory + [result.memory_note])[-self.MEMORY_LIMIT:]
        self.steps.append({"action": result.action, "success": result.observation.get("success", result.done),
                           "reward": round(result.reward, 3)})
        return result

    def prompt_sections(self, notes: int = 6, steps: int = 3) -> list[str]:
        """The "Memory:" and "Recent steps:" sections of the next prompt (none while empty)."""
        sections = []
        if self.memory:
            sections.append("Memory:\n" + "\n".join(f"- {note}" for note in self.memory[-notes:]))
        if self.steps:
            sections.append("Recent steps:\n"
                            + "\n".join(json.dumps(s, ensure_ascii=False) for s in self.steps[-steps:]))
        return sections


def with_instructions(system_prompt: str, instructions: Optional[str]) -> str:
    """The system prompt with the user's domain guidance (``[run] instructions``) after it, marked as additions."""
    if not instructions or not instructions.strip():
        return system_prompt
    return (f"{system_prompt}\n\nDomain instructions from the user (they add to the rules above and never replace "
            f"them):\n{instructions.strip()}")


#: Variables a step's snapshot lists at most (the newest names first when there are more).
SNAPSHOT_VARIABLES = 50


def variable_snapshot(session: Any, baseline: set[str]) -> list[dict[str, Any]]:
    """The REPL's user variables after a step — name, type, size (len, or -1) and an 80-character repr — computed
    inside the sandbox (no value is copied out) and read back as a Python literal, never unpickled. ``baseline``:
    the names the environment itself defined (helpers), left out. [] when the runtime cannot say."""
    import ast

    try:
        names = [n for n in session.list_variables()
                 if n not in baseline and not n.startswith("_") and n.isidentifier()]
    except Exception:
        return []
    if not names:
        return []
    code = "print(_rlm_describe([" + ", ".join(f"({n!r}, {n})" for n in names[-SNAPSHOT_VARIABLES:]) + "]))"
    # read-only: not a cell to run again in a rebuild
    result = getattr(session, "execute_unlogged", session.execute)(code)
    try:
        rows = ast.literal_eval((result.stdout or "").strip()) if result.ok else []
    except (ValueError, SyntaxError):
        return []
    return [{"name": str(r[0]), "type": str(r[1]), "size": int(r[2]), "repr": str(r[3])} for r in rows
            if isinstance(r, tuple) and len(r) == 4]


def reply_action(reply: Completion) -> tuple[Optional[dict[str, Any]], str]:
    """``(action, "")`` for the action a JSON-action reply holds, or ``(None, why)`` for an empty reply.

    RLM Code's rule for every JSON-action environment: a reply with no JSON object at all is its final answer.
    """
    text = (reply.text or "").strip()
    if not text:
        return None, reply.raw.get("malformed", "the reply was empty")
    action = parse_action(text)
    return (action if action is not None else {"action": "final", "final_response": text}), ""


def parse_action(text: str) -> Optional[dict[str, Any]]:
    """The JSON object in a reply: a fenced block first, else the first balanced {...} that parses."""
    return next((value for value, _ in json_objects(text)), None)
