"""``VerbosePrinter``: what ``RLM(verbose=True)`` prints while a completion runs — the configuration, each root
iteration (reply, code, output), the final answer and a summary — on stderr, as plain lines.

Model text is printed through ``terminal_safe`` (control characters shown, never sent): a reply or a REPL output
must not be able to redraw the user's terminal. rlms prints rich panels on stdout; here stdout stays the program's."""

from __future__ import annotations

import sys
from typing import Any, Optional, TextIO

from rlm_compat_rlms.core.types import RLMIteration, RLMMetadata

#: Characters of a reply or an output shown per iteration (the logger and the trajectory keep them whole).
SHOWN_CHARS = 1500


class VerbosePrinter:
    """Prints when ``enabled``; every method is a no-op otherwise. ``out`` defaults to ``sys.stderr``."""

    def __init__(self, enabled: bool = True, out: Optional[TextIO] = None):
        self.enabled = enabled
        self.out = out

    def print_metadata(self, metadata: RLMMetadata) -> None:
        self._say(f"RLM  model={metadata.root_model} backend={metadata.backend} environment="
                  f"{metadata.environment_type} max_iterations={metadata.max_iterations} "
                  f"max_depth={metadata.max_depth}")

    def print_iteration(self, iteration: RLMIteration, number: int) -> None:
        seconds = f" · {iteration.iteration_time:.2f}s" if iteration.iteration_time is not None else ""
        lines = [f"── iteration {number}{seconds}", _indented(_shown(iteration.response), "  ")]
        for block in iteration.code_blocks:
            lines.append(_indented(block.code.rstrip("\n"), "  │ "))
            output = (block.result.stdout or "") + (block.result.stderr or "")
            if output.strip():
                lines.append(_indented(_shown(output.rstrip("\n")), "  → "))
            for call in block.result.rlm_calls:
                lines.append(f"  ↳ {call.root_model} {call.execution_time or 0:.2f}s")
        self._say("\n".join(lines))

    def print_final_answer(self, answer: Any) -> None:
        self._say(f"✓ final answer: {_shown(str(answer))}")

    def print_summary(self, iterations: int, seconds: float, usage: dict[str, Any]) -> None:
        models = usage.get("model_usage_summaries", {})
        tokens = ", ".join(f"{name} {u.get('total_input_tokens', 0):,} in / {u.get('total_output_tokens', 0):,} out"
                           for name, u in models.items())
        self._say(f"   {iterations} iteration(s) · {seconds:.1f}s" + (f" · {tokens}" if tokens else ""))

    def print_limit_exceeded(self, kind: str, detail: str) -> None:
        self._say(f"✗ stopped ({kind}): {detail}")

    def _say(self, text: str) -> None:
        if not self.enabled:
            return
        from rlm_host.sdk.commands import terminal_safe

        out = self.out or sys.stderr
        out.write(terminal_safe(text) + "\n")
        out.flush()


def _shown(text: str) -> str:
    text = text or ""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"… [{len(text):,} characters]"


def _indented(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in (text or "").splitlines() or [""])


__all__ = ["VerbosePrinter"]
