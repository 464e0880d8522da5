"""``rlm_query(prompt, model=None)`` and ``rlm_query_batched(prompts, model=None)`` with the authors' signatures,
over rlm's child runs.

A child gets ``prompt`` as its context (and as its question when the two differ, which they do not here: the
child is told the context's shape only, as rlms' children are); it shares the run tree's budget, recursion guard,
sandbox runtime and trajectory. At the depth limit both fall back to ``llm_query`` / ``llm_query_batched``, as in
rlms. A child with another ``model`` is not something rlm's child runs do: at the limit the model is used for the
plain call, otherwise naming one is refused in the code. Failures raise in the model's code (rlms returns an
``"Error: …"`` string as if it were an answer)."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from rlm_host import RecursionRefused
from rlm_host.sdk.environments import gather_calls
from rlm_host.sdk.observability import redacted_clip

PROMPT_CHARS = 500  # of a prompt or an answer kept in a sub_call event (the child's own trajectory has it all)


class Recursion:
    """The two host functions, for one run: ``ctx`` its EnvironmentContext, ``calls`` its ``SubCalls``."""

    def __init__(self, ctx: Any, calls: Any, concurrency: int) -> None:
        self.ctx = ctx
        self.calls = calls
        self.concurrency = concurrency

    def functions(self) -> dict[str, Callable[..., Any]]:
        return {"rlm_query": self.rlm_query, "rlm_query_batched": self.rlm_query_batched}

    @property
    def at_limit(self) -> bool:
        """Whether a child would be past ``max_depth`` (rlms' "recursion disabled")."""
        return self.ctx.scope.depth >= self.ctx.max_depth

    def rlm_query(self, prompt: Any, model: Optional[str] = None) -> str:
        prompt = prompt if isinstance(prompt, str) else str(prompt)
        if self.at_limit:
            return self.calls.llm_query(prompt, model)
        if model is not None:
            raise ValueError("rlm_query(prompt, model=...): a child RLM runs with this run's model here; call "
                             "llm_query(prompt, model=...) for one call to another model")
        started = time.monotonic()
        scope = self.ctx.scope
        scope.emit("sub_call_start", {"kind": "rlm_query", "prompt": _clip(prompt)})
        try:
            child = self.ctx.spawn_child(prompt, prompt)
        except RecursionRefused as refused:
            if refused.reason == "max_depth":
                return self.calls.llm_query(prompt, model)
            raise RuntimeError(f"rlm_query refused: {refused}") from None
        scope.emit("sub_call", {"kind": "rlm_query", "prompt": _clip(prompt), "child_run_id": child.run_id,
                                "response": _clip(child.final_response), "termination_reason": child.termination_reason,
                                "seconds": round(time.monotonic() - started, 3)})
        if child.final_response is None:
            raise RuntimeError(f"rlm_query: the child RLM ended without an answer ({child.termination_reason}: "
                               f"{child.error or 'no detail'})")
        return child.final_response

    def rlm_query_batched(self, prompts: Any, model: Optional[str] = None) -> list[str]:
        if not isinstance(prompts, (list, tuple)):
            raise TypeError("rlm_query_batched expects a list of prompts")
        if self.at_limit:
            return self.calls.llm_query_batched(list(prompts), model)
        if not prompts:
            return []
        calls = [lambda prompt=prompt: self.rlm_query(prompt, model) for prompt in prompts]
        return gather_calls("rlm_query_batched", calls, max(1, min(self.concurrency, len(prompts))))


def _clip(text: Optional[str]) -> Optional[str]:
    """A prompt or answer as a sub_call event keeps it: redacted, then cut (a key across the cut keeps no prefix)."""
    return redacted_clip(text, PROMPT_CHARS, "count")


__all__ = ["Recursion"]
