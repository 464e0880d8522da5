"""The run's sandbox as tools for a framework: the same session, context and sub-calls a native run has.

``run_code`` executes Python in one persistent sandbox session (the run's runtime: Monty, Docker…) where
``context`` holds the run's context and ``llm_query`` / ``llm_query_batched`` / ``rlm_query`` reach the sub-model
through the run's budget; ``rlm_query`` starts a child run one level deeper (the same framework, the shared
budget, ``max_depth``), as in a native run. So a native run and a framework run of one task differ only in who
drives the loop.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from rlm_host.environments.kit import answer_text, execute_code, truncate
from rlm_host.approvals import ALLOW_ALL
from rlm_host.environments.repl import SubCalls, document_names
from rlm_host.errors import RecursionRefused
from rlm_host.results import ExecResult
from rlm_host.sandbox.protocol import SandboxSession

#: What a tool result shows of a code run's output.
TOOL_OUTPUT_CHARS = 8000

TOOL_DESCRIPTIONS = {
    "run_code": "Run Python code in a persistent sandboxed REPL. The variable `context` holds the task's context "
                "(do not print it whole: inspect it). Variables persist between calls. Inside the code, "
                "llm_query(prompt) and llm_query_batched(prompts) ask a language model. Returns what the code "
                "printed, or its error. Call FINAL(answer) in the code to give the final answer.",
    "llm_query": "Ask a language model one question (for reading or summarising a piece of text).",
}  # fmt: skip


@dataclass
class CodeOutcome:
    """One ``run_code``: the sandbox's result, the text a framework shows the model, and a FINAL answer if any."""

    result: ExecResult
    text: str
    final: Optional[str]

    @property
    def ok(self) -> bool:
        return self.result.ok


class _RunLink:
    """What ``SubCalls`` needs of a framework run: its budget, its events, its child runs (``spawn_child``; none
    when not given) and the user's tools with the run's approvals."""

    def __init__(self, budget: Any, scope: Any, spawn_child: Optional[Callable[[str, Any], Any]],
                 tools: tuple[Any, ...] = (), approvals: Any = ALLOW_ALL, tool_timeout: float = 30.0) -> None:  # fmt: skip
        self.budget, self.scope, self._spawn = budget, scope, spawn_child
        self.tools, self.approvals, self.tool_timeout = tools, approvals, tool_timeout

    def spawn_child(self, task: str, context: Any) -> Any:
        if self._spawn is None:
            raise RecursionRefused("max_depth", "this run has no child runs")
        return self._spawn(task, context)


class SandboxTools:
    """The sandbox session of a framework run, opened on first use (thread-safe) and closed by the runner."""

    def __init__(self, open_sandbox: Callable[[], SandboxSession], context: Any, *, budget: Any, scope: Any,
                 model_for: Callable[[Optional[str]], Any], exec_timeout: float, concurrency: int = 32,
                 spawn_child: Optional[Callable[[str, Any], Any]] = None, tools: tuple[Any, ...] = (),
                 approvals: Any = ALLOW_ALL, tool_timeout: float = 30.0) -> None:  # fmt: skip
        self._open = open_sandbox
        self._context = context
        self._budget = budget
        self._exec_timeout = exec_timeout
        self._scope = scope  # code_start / code_end events (None: none)
        link = _RunLink(budget, scope, spawn_child, tools, approvals, tool_timeout)
        self.sub_calls = SubCalls(link, concurrency=concurrency,  # type: ignore[arg-type]
                                  model_for=model_for)  # fmt: skip
        self._session: Optional[SandboxSession] = None
        self._lock = threading.Lock()

    @property
    def session(self) -> SandboxSession:
        with self._lock:
            if self._session is None:
                session = self._open()
                session.start()
                session.register_functions(self.sub_calls.functions())
                session.set_variable("context", self._context)
                session.set_variable("context_names", document_names(self._context))
                session.execute(self.sub_calls.helpers_source())
                self._session = session
            return self._session

    def run_code(self, code: str) -> CodeOutcome:
        """Run ``code`` in the session; the text shows stdout, stderr and the error, cut to a readable size."""
        timeout = max(0.5, min(self._exec_timeout, self._budget.remaining()))
        result = execute_code(self._scope, self.session, code, timeout)  # the sandbox's own failure raises
        final = answer_text(result.final) if result.final is not None else None
        parts = [result.stdout.rstrip()] if result.stdout.strip() else []
        if result.stderr.strip():
            parts.append("stderr:\n" + result.stderr.rstrip())
        if result.error:
            parts.append("error:\n" + result.error.rstrip())
        if final is not None:
            parts.append(f"FINAL answer given: {final}")
        text = truncate("\n".join(parts) or "(no output)", TOOL_OUTPUT_CHARS)
        return CodeOutcome(result, text, final)

    def llm_query(self, prompt: str) -> str:
        return self.sub_calls.llm_query(prompt)

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.shutdown()
                self._session = None


#: The instructions every tool-calling agent framework gives its agent (``{description}``:
#: :func:`describe_context_briefly`; ``{extra}``: a sentence of the framework's own, or nothing).
AGENT_INSTRUCTIONS = """\
You answer a task about a context that is too large to read at once. The context is NOT in this conversation: \
it is loaded in a persistent Python REPL as the variable `context` ({description}).

Work in steps with your tools. Use run_code to look at `context` (its length, slices, searches, splitting it \
into parts) and to compute; inside the code, llm_query(prompt) asks a language model about a piece of text you \
pass it, and llm_query_batched(prompts) asks about several at once. Print what you need to see: only printed \
output comes back to you, cut to a readable size. Variables persist between run_code calls.{extra}

When you know the answer, give it as the final answer (or call FINAL(answer) inside run_code). You have \
{max_steps} turns (replies) in all."""


def describe_context_briefly(meta: dict[str, Any], preview_chars: int) -> str:
    """The context's metadata in a few words for an agent's instructions (never the context: at most its
    preview's first ``preview_chars`` characters)."""
    kind = meta.get("type")
    if kind in (None, "none"):
        return "here None: there is no context, answer from the task alone"
    if kind == "path":
        return f"the path of the file {meta.get('path')}, {meta.get('bytes', 0):,} bytes"
    if kind == "str":
        text = f"a string of {meta.get('total_chars', 0):,} characters"
    elif kind == "list":
        text = f"a list of {meta.get('documents', 0):,} documents, {meta.get('total_chars', 0):,} characters in total"
        lengths = (meta.get("document_lengths") or [])[:10]
        if lengths:
            more = ", …" if meta.get("documents", 0) > len(lengths) else ""
            text += f" (lengths: {', '.join(f'{n:,}' for n in lengths)}{more})"
    else:
        text = f"a {kind} of {meta.get('total_chars', 0):,} characters as JSON"
        if meta.get("keys"):
            text += f", {meta.get('key_count', len(meta['keys'])):,} keys: {', '.join(meta['keys'][:20])}"
    preview = str(meta.get("preview") or "")[:preview_chars]
    if preview:
        text += f"; it begins: {json.dumps(preview, ensure_ascii=False)}"
    return text
