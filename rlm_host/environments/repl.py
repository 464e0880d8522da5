"""The REPL kit: what a REPL-style run puts in its sandbox session, shared by pure_rlm, the framework tools
(``rlm_host.frameworks.tools``) and plugin environments (rlm-env-dspy): the helper functions (``HELPERS_SOURCE``,
the sandbox-side source in ``repl_helpers.py``), the names ``list_files()`` shows (``document_names``) and the
sub-call host functions ``llm_query``, ``llm_query_batched``, ``rlm_query`` and ``rlm_query_batched`` with the
user's own tools (``SubCalls``).

The helper source sticks to the Python subset every runtime supports (Monty has no generators, no class
inheritance), so it runs unchanged in the process, Monty and Docker sandboxes. It is a file of its own so that it
is read, linted and tested as Python, like the worker script.
"""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from rlm_host.environments.protocol import EnvironmentContext
from rlm_host.environments.repl_tools import ToolCalls
from rlm_host.errors import BudgetExceeded, RecursionRefused
from rlm_host.events import prompt_hash, sub_call_text
from rlm_host.models.protocol import ModelError

__all__ = ["HELPERS_SOURCE", "SubCalls", "document_names", "gather_calls"]

#: The REPL helpers (chunk_text, list_files, load_file, switch_to…): ``repl_helpers.py``'s source, run once in
#: every session after ``context`` and ``context_names`` (``document_names``) are set.
HELPERS_SOURCE = (Path(__file__).parent / "repl_helpers.py").read_text(encoding="utf-8")


def document_names(context: Any) -> list[str]:
    """The names ``list_files()`` shows for a file-set context (generated for a plain list)."""
    if isinstance(context, list):
        names = getattr(context, "names", None)
        return list(names) if names else [f"document_{i}" for i in range(len(context))]
    return []


class SubCalls:
    """The host functions behind ``llm_query``, ``llm_query_batched`` and ``rlm_query``.

    Every failure raises an exception inside the sandbox code (never a string that looks like an answer).
    ``model_for(model)``: the role answering ``llm_query(..., model=model)``, the run's sub model or
    ``ctx.sub_model_for(model)`` when one is named (an environment may replace it: rlm-adapter-adk's agent does).
    """

    def __init__(self, ctx: EnvironmentContext, *, concurrency: int):
        self.ctx = ctx
        self.concurrency = concurrency
        self.model_for = lambda model: ctx.sub if model is None else ctx.sub_model_for(model)
        self.tools = ToolCalls(ctx.tools, emit=ctx.scope.emit, approvals=ctx.approvals, timeout=ctx.tool_timeout)

    def functions(self) -> dict[str, Callable[..., Any]]:
        """Every host function of the REPL: the sub-calls and the bridges of the user's tools."""
        return {"llm_query": self.llm_query, "llm_query_batched": self.llm_query_batched, "rlm_query": self.rlm_query,
                "rlm_query_batched": self.rlm_query_batched, **self.tools.functions()}

    def install(self, session: Any) -> None:
        """Register ``functions`` in a started ``session`` and bind ``context`` and ``context_names`` there: what
        ``helpers_source`` expects before it runs."""
        session.register_functions(self.functions())
        session.set_variable("context", self.ctx.context)
        session.set_variable("context_names", document_names(self.ctx.context))

    def helpers_source(self) -> str:
        """``HELPERS_SOURCE`` and the sandbox-side definitions of the user's tools: run once after ``functions`` are
        registered and ``context`` is set."""
        tools = self.tools.source()
        return f"{HELPERS_SOURCE}\n\n{tools}" if tools else HELPERS_SOURCE

    def llm_query(self, prompt: Any, model: Optional[str] = None) -> str:
        return self._query(str(prompt), model, kind="llm_query")

    def llm_query_batched(self, prompts: Any, model: Optional[str] = None) -> list[str]:
        if not isinstance(prompts, (list, tuple)):
            raise TypeError("llm_query_batched expects a list of prompts")
        calls = [functools.partial(self._query, str(p), model, "llm_query_batched", i) for i, p in enumerate(prompts)]
        return gather_calls("llm_query_batched", calls, self._workers(len(calls), model))

    def rlm_query_batched(self, prompts: Any, contexts: Any = None) -> list[str]:
        """Several ``rlm_query`` child runs at once (up to the batch cap), answers in order; they share the run
        tree's budget and ``max_depth`` as ``rlm_query`` does."""
        if not isinstance(prompts, (list, tuple)):
            raise TypeError("rlm_query_batched expects a list of prompts")
        if contexts is not None and (not isinstance(contexts, (list, tuple)) or len(contexts) != len(prompts)):
            raise TypeError("rlm_query_batched: contexts must be a list as long as prompts (or None)")
        calls = [functools.partial(self.rlm_query, p, c) for p, c in zip(prompts, contexts or [None] * len(prompts))]
        return gather_calls("rlm_query_batched", calls, max(1, min(len(calls), self.concurrency)))

    def _workers(self, calls: int, model: Optional[str]) -> int:
        """All of a batch at once, up to the cap and the provider's own limit (one connection pool serves them)."""
        try:
            # not a ModelRole member: a model client has it, a role without it sets no limit
            limit = getattr(self.model_for(model), "max_concurrency", None) or calls
        except Exception:  # an unknown model: each call reports it
            limit = calls
        return max(1, min(calls, self.concurrency, limit))

    def rlm_query(self, prompt: Any, context: Any = None) -> str:
        prompt = str(prompt)
        started = time.monotonic()
        self.ctx.scope.emit("sub_call_start", {"kind": "rlm_query", "prompt": sub_call_text(prompt)})
        try:
            child = self.ctx.spawn_child(prompt, context)
        except RecursionRefused as refused:
            if refused.reason != "max_depth":
                raise RuntimeError(f"rlm_query refused: {refused}") from None
            full = prompt if context is None else f"{prompt}\n\nContext:\n{context}"
            return self._query(full, None, kind="rlm_query(max_depth: plain llm_query)", announce=False)
        self.ctx.scope.emit("sub_call", {
            "kind": "rlm_query", "prompt": sub_call_text(prompt), "child_run_id": child.run_id,
            "response": sub_call_text(child.final_response), "termination_reason": child.termination_reason,
            "seconds": round(time.monotonic() - started, 3)})
        if child.final_response is None:
            raise RuntimeError(f"rlm_query: the child run ended without an answer ({child.termination_reason})")
        return child.final_response

    def _query(self, prompt: str, model: Optional[str], kind: str, index: Optional[int] = None,
               announce: bool = True) -> str:
        """One sub-model call, bracketed by ``sub_call_start`` (unless the caller announced it: ``announce``) and
        the ``sub_call`` event."""
        started = time.monotonic()
        event: dict[str, Any] = {"kind": kind, "prompt": sub_call_text(prompt), "prompt_hash": prompt_hash(prompt)}
        if index is not None:
            event["index"] = index
        if announce:
            self.ctx.scope.emit("sub_call_start", {**event, "model": model} if model else dict(event))
        try:
            self.ctx.budget.take_llm_call()
            client = self.model_for(model)
            event["model"], event["provider"] = client.name, client.provider
            completion = client.complete([{"role": "user", "content": prompt}])
            event["usage"] = {"input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens}
            if not completion.text:
                detail = completion.raw.get("malformed", "no content")
                raise ModelError(f"the sub-model returned an empty response ({detail})")
            event["response"] = sub_call_text(completion.text)
            if event["response"] != completion.text:
                event["response_full"] = completion.text  # the exact text, for the replay provider
            return completion.text
        except (BudgetExceeded, ModelError) as exc:
            event["error"] = str(exc)
            raise RuntimeError(f"{kind} failed: {exc}") from None
        finally:
            event["seconds"] = round(time.monotonic() - started, 3)
            self.ctx.scope.emit("sub_call", event)


def gather_calls(kind: str, calls: Sequence[Callable[[], str]], workers: int) -> list[str]:
    """Run ``calls`` on ``workers`` threads; their answers in order, or one RuntimeError naming every failure."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(call) for call in calls]
        answers, failures = [], []
        for index, future in enumerate(futures):
            try:
                answers.append(future.result())
            except Exception as exc:
                failures.append(f"prompt {index}: {exc}")
    if failures:
        raise RuntimeError(f"{kind}: {len(failures)} of {len(calls)} calls failed: " + "; ".join(failures))
    return answers
