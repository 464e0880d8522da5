"""Text of a step: one row of the step list and the full detail, built as ``rich.text.Text`` from plain strings.

A trajectory is model output — hostile text — so nothing here is ever parsed as Rich markup: every piece goes
into ``Text`` (``Text.append`` with a style of ours), and control characters (C0, C1 such as CSI U+009B and OSC
U+009D, DEL) are made visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from rich.text import Text

from rlm_host.sdk.commands import terminal_safe


#: Characters of one text (code, output, reply) shown in a step's detail: a step that printed megabytes must not
#: stall the screen; the rest is counted.
SHOWN_CHARS = 20_000


def clean(value: Any) -> str:
    """A value as plain text for the terminal: C0 and C1 controls, DEL and other unprintable characters shown as
    ``?`` (ESC as ``␛``), never sent (the host's ``terminal_safe``)."""
    return terminal_safe(str(value if value is not None else ""))


def cut(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``clean(value)``, cut to ``limit`` characters with a note of how many were left out."""
    text = str(value if value is not None else "")
    if len(text) <= limit:
        return clean(text)
    return clean(text[:limit]) + f"\n… [{len(text) - limit:,} more characters]"


def one_line(value: Any, limit: int) -> str:
    text = " ".join(clean(value).split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _tokens(usage: Any) -> int:
    total = 0
    if isinstance(usage, dict):
        for role in ("root", "sub"):
            part = usage.get(role)
            if isinstance(part, dict):
                total += int(part.get("input_tokens") or 0) + int(part.get("output_tokens") or 0)
    return total


def _num(value: Any, spec: str, default: str = "—") -> str:
    return format(value, spec) if isinstance(value, (int, float)) else default


def step_row(number: int, data: dict[str, Any], error: Optional[str], candidates: int = 0) -> str:
    """``  12 run_code    ✗  r=+0.10 Σ=1.20  1,234 tok  2.1s  x = 1/0``: one line of the step list (a step that
    tried several candidates, ``--branch-width``, says how many before its code: ``[3 tried]``)."""
    mark = "✗" if error else "✓"
    what = data.get("code") or data.get("reply") or ""
    tried = f"[{candidates} tried] " if candidates else ""
    return (f"{number:>5} {one_line(data.get('action') or '?', 11):<11} {mark} "
            f"r={_num(data.get('reward'), '+.2f', '  —  ')} Σ={_num(data.get('cumulative_reward'), '.2f')} "
            f"{_tokens(data.get('usage')):>7,} tok {_num(data.get('duration_s'), '5.1f')}s  {tried}"
            f"{one_line(what, 200)}")


def step_row_short(number: int, data: dict[str, Any], error: Optional[str]) -> str:
    """``  2 run_code  ✗ x = 1/0``: a row for half the screen (two runs side by side), where the code matters most."""
    what = data.get("code") or data.get("reply") or ""
    return f"{number:>3} {one_line(data.get('action') or '?', 9):<9} {'✗' if error else '✓'} {one_line(what, 200)}"


def _section(text: Text, title: str) -> None:
    text.append(f"\n── {title} ", style="bold")
    text.append("─" * max(2, 24 - len(title)) + "\n", style="dim")


def observation_text(observation: Any) -> str:
    """What a step's code printed (stdout, stderr, errors of each block), else its observation's other fields."""
    if not isinstance(observation, dict):
        return clean(observation)
    blocks = observation.get("blocks")
    parts: list[str] = []
    if isinstance(blocks, list):
        for block in blocks:
            if isinstance(block, dict):
                parts += [clean(block[k]) for k in ("stdout", "stderr") if block.get(k)]  # errors: their own section
                if block.get("timed_out"):
                    parts.append("(timed out)")
    rest = {k: v for k, v in observation.items() if k not in ("blocks", "success", "variables")}
    if rest and not parts:
        parts += [f"{clean(k)}: {clean(v)}" for k, v in rest.items()]
    return "\n".join(p.rstrip("\n") for p in parts)


def step_detail(number: int, data: dict[str, Any], error: Optional[str], sub_calls: list[dict[str, Any]],
                children: list[tuple[str, str]], branches: Sequence[dict[str, Any]] = ()) -> Text:
    """Everything about one step: reply, code, output, REPL variables, the candidates it tried (``branches``),
    sub-calls, child runs and its figures."""
    text = Text()
    text.append(f"Step {number}", style="bold")
    text.append(f"  {clean(data.get('action') or '?')}  ")
    text.append("error" if error else "ok", style="bold red" if error else "green")
    text.append(f"\nreward {_num(data.get('reward'), '+.3f')}  cumulative {_num(data.get('cumulative_reward'), '.3f')}"
                f"  tokens {_tokens(data.get('usage')):,}  model {_num(data.get('model_seconds'), '.2f')}s"
                f"  step {_num(data.get('duration_s'), '.2f')}s")
    usage = got if isinstance(got := data.get("usage"), dict) else {}
    cost = sum(float(part.get("cost") or 0) for part in usage.values() if isinstance(part, dict))
    if cost:
        text.append(f"  cost ${cost:.4f}")
    if error:
        _section(text, "error")
        text.append(cut(error) + "\n", style="red")
    if data.get("code"):
        _section(text, "code")
        text.append(cut(data["code"]).rstrip("\n") + "\n", style="cyan")
    output = observation_text(data.get("observation"))
    if output:
        _section(text, "output")
        text.append(cut(output) + "\n")
    observation = got if isinstance(got := data.get("observation"), dict) else {}
    variables = observation.get("variables")
    if isinstance(variables, list) and variables:
        _section(text, f"REPL variables ({len(variables)})")
        for var in variables:
            if isinstance(var, dict):
                size = var.get("size")
                text.append(f"{clean(var.get('name'))}", style="bold")
                shown = f" [{size}]" if isinstance(size, int) and size >= 0 else ""
                text.append(f": {clean(var.get('type'))}{shown} = {one_line(var.get('repr'), 80)}\n")
    if branches:
        candidates_text(text, branches)
    if sub_calls:
        _section(text, f"sub-calls ({len(sub_calls)})")
        for call in sub_calls:
            usage = got if isinstance(got := call.get("usage"), dict) else {}
            tokens = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
            text.append(f"{clean(call.get('kind') or 'sub_call')}", style="bold")
            text.append(f" {clean(call.get('model') or '')} {tokens:,} tok {_num(call.get('seconds'), '.2f')}s\n")
            text.append(f"  → {one_line(call.get('prompt'), 300)}\n", style="dim")
            answer = call.get("error") or call.get("response")
            text.append(f"  ← {one_line(answer, 300)}\n", style="red" if call.get("error") else "")
    if children:
        _section(text, f"child runs ({len(children)})")
        for run_id, summary in children:
            text.append(clean(run_id), style="bold")
            text.append(f"  {clean(summary)}\n")
    if data.get("reply") and data.get("reply") != data.get("code"):
        _section(text, "reply")
        text.append(cut(data["reply"]).rstrip("\n") + "\n")
    return text


def candidates_text(text: Text, branches: Sequence[dict[str, Any]]) -> None:
    """The candidates a step tried (``--branch-width``; the ``branch`` events, as ``rlm runs show`` lists them): each
    one's number, action, score and tokens, the kept one marked, then its code (or reply) and what it printed or
    its error, one line each."""
    _section(text, f"candidates ({len(branches)})")
    for tried in branches:
        kept = bool(tried.get("chosen"))
        text.append("▶ " if kept else "  ", style="bold green")
        text.append(f"{clean(tried.get('candidate', '?'))}. {clean(tried.get('action') or '?')} · score "
                    f"{_num(tried.get('score'), '+.2f')} · {_num(tried.get('tokens'), ',')} tok",
                    style="bold" if kept else "")
        if kept:
            text.append(" · kept", style="bold green")
        elif tried.get("error"):
            text.append(" · error", style="red")
        text.append(f"\n    {one_line(tried.get('code') or tried.get('reply'), 200)}\n", style="cyan")
        if tried.get("error"):
            text.append(f"    ✗ {one_line(tried['error'], 200)}\n", style="red")
        elif tried.get("output"):
            text.append(f"    → {one_line(tried['output'], 200)}\n", style="dim")
