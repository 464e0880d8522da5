"""How a step reads, live and afterwards: ``step_lines`` formats one step for ``rlm run``'s live view (compact) and
for a saved run's text (whole: rlm-runs' ``rlm runs show`` and ``rlm replay``), with the same line shapes."""

from __future__ import annotations

import json
from typing import Any, Iterable

from rlm_host.results import StepRecord
from rlm_host.text import clip, clip_lines
from rlm_host.trajectory.tree import observation_error

WHOLE = (40, 20_000)  # a saved step's code and output: up to this many lines and characters…
COMPACT = (12, 600)  # … the live view's
LINE_CHARS = 200  # a tool call's arguments, a harness step's path or command, a reason an answer was refused
SUB_TEXT_CHARS = 80
Line = tuple[str, str]  # a line's text and its style in the live view ("" for none)


def _short(value: Any, limit: int = SUB_TEXT_CHARS) -> str:
    return clip(value if isinstance(value, str) else json.dumps(value, default=str), limit, one_line=True)


def _tokens(input_tokens: int, output_tokens: int) -> str:
    return f"{input_tokens + output_tokens:,} tokens ({input_tokens:,} in / {output_tokens:,} out)"


def step_lines(record: StepRecord, *, total: int | None = None, sub_calls: Iterable[dict[str, Any]] = (),
               branches: Iterable[dict[str, Any]] = (), children: dict[str, tuple[str, int]] | None = None,
               compact: bool = False) -> list[Line]:
    """One step as lines: a header, then what the model wrote (``│``), what came back (``→``, ``!`` stderr), why it
    failed (``✗``), notes (``!``), candidates (``⑂``) and sub-calls (``↳``; an ``rlm_query`` with its child run's
    model and tokens from ``children``). ``compact`` (the live view) cuts code and output shorter, an error to its
    first line, and leaves out the reply, the variables, the other observation fields and the sub-calls' texts."""
    max_lines, max_chars = COMPACT if compact else WHOLE
    root, sub = record.usage.root, record.usage.sub
    head = [f"step {record.step}{f'/{total}' if total else ''}", record.action, f"reward {record.reward:+.2f}"]
    head += [_tokens(root.input_tokens, root.output_tokens)] if root.total_tokens else []
    head += [f"sub {sub.total_tokens:,} tokens"] if sub.total_tokens else []
    lines: list[Line] = [("── " + " · ".join([*head, f"{record.duration_s:.2f}s"]), "cyan")]

    def show(mark: str, text: Any, style: str = "") -> None:
        text = clip(str(text or "").strip("\n"), max_chars, "count")
        lines.extend((f"  {mark} {line}".rstrip(), style) for line in clip_lines(text, max_lines).splitlines())

    def failed(error: Any) -> None:  # every sandbox writes ``ExcType: message`` first, then the traceback
        first, _, rest = str(error).strip().partition("\n")
        lines.append((f"  ✗ {first}", "red"))
        show(" ", "" if compact else rest)

    observation = dict(record.observation)
    blocks = [b for b in observation.pop("blocks", None) or [] if isinstance(b, dict)]
    for block in blocks:
        show("│", block.get("code"), "dim")
        show("→", block.get("stdout"))
        show("!", block.get("stderr"), "yellow")
        if block.get("error") or block.get("timed_out"):
            failed(block.get("error") or "timed out")
    if not blocks and record.code:
        show("│", record.code, "dim")
    elif not blocks and observation.get("tool") and "args" in observation:  # a framework's tool call
        args = clip(json.dumps(observation.pop("args"), ensure_ascii=False, default=str), LINE_CHARS)
        show("│", f"{observation.pop('tool')}({args})", "dim")
    elif not blocks and not compact:
        show("│", record.reply, "dim")
    detail = next((key for key in ("path", "command", "pattern") if isinstance(observation.get(key), str)), None)
    if detail and not record.code:  # a tool-protocol step (the harness)
        show("│", clip(f"{detail}: {observation.pop(detail)}", LINE_CHARS), "dim")
    outputs = [observation.pop(key, None) for key in ("output", "stdout", "content")]  # a command's, a file's…
    show("→", next((text for text in outputs if isinstance(text, str)), None))
    show("!", observation.pop("stderr", None), "yellow")
    error = observation.pop("error", None)
    success = observation.pop("success", None)
    if error or (success is False and not blocks):  # a refusal says "refused: …" itself
        exit_code = observation.get("exit_code")
        failed(error or (f"exit code {exit_code}" if exit_code is not None else "failed"))
    elif record.action == "error" and not observation_error(record.observation):
        failed(record.observation.get("message") or record.reply or "error")
    rejected = observation.pop("final_rejected", None)  # an answer the run's output type refused
    for line in rejected.splitlines()[:5] if isinstance(rejected, str) else []:
        lines.append((f"  ✗ not the required type: {clip(line, LINE_CHARS)}", "red"))
    lines += [(f"  ! {note}", "yellow") for note in observation.pop("notes", None) or [] if note != error]
    variables = [v for v in observation.pop("variables", None) or [] if isinstance(v, dict)]
    rest = ", ".join(f"{k}={_short(v, 60)}" for k, v in observation.items() if v not in (None, "", [], {}, False))
    if not compact:
        for v in variables:
            size = f", {v['size']:,}" if isinstance(v.get("size"), int) and v["size"] >= 0 else ""
            lines.append((f"  var {v.get('name')} ({v.get('type')}{size}) = {_short(v.get('repr'), 70)}", "dim"))
        lines += [(f"  · {rest}", "dim")] if rest else []
    for tried in branches:  # --branch-width: each candidate's number, action and score, then kept or why it failed
        mark = "kept" if tried.get("chosen") else clip(str(tried.get("error") or "").strip().partition("\n")[0], 100)
        text = f"  ⑂ candidate {tried.get('candidate')} · {tried.get('action')} · score {tried.get('score', 0):+.2f}"
        text += f" · {mark}" if mark else ""
        text += "" if compact else f"  {_short(str(tried.get('code') or tried.get('reply') or ''), 70)}"
        lines.append((text, "green" if tried.get("chosen") else "dim"))
    return lines + [sub_call_line(data, children or {}, compact=compact) for data in sub_calls]


def sub_call_line(data: dict[str, Any], children: dict[str, tuple[str, int]], *, compact: bool = False) -> Line:
    """One sub-call: its kind, model or tool, tokens (an ``rlm_query``: its child run's; a user's tool: none, it
    costs none) and time, then ``ok`` or its error; whole, also what it asked and answered and the child run."""
    child = children.get(data.get("child_run_id") or "")
    usage = data.get("usage") or {}
    who = data.get("tool") or data.get("model") or (child[0] if child else "")
    tokens = _tokens(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)) if usage else ""
    parts = [f"{data.get('kind') or 'sub_call'} {who}".rstrip(), f"{child[1]:,} tokens" if child else tokens,
             f"{float(data.get('seconds') or 0):.2f}s"]
    parts += [f"error: {_short(data['error'])}"] if data.get("error") else ["ok"] if data.get("tool") else []
    text = "  ↳ " + " · ".join(part for part in parts if part)
    if not compact:
        asked = data.get("prompt") or data.get("arguments")
        answer = data.get("response") if data.get("response") is not None else data.get("result")
        text += f"  {_short(asked)!r}" if asked else ""
        text += f"  → {_short(answer)!r}" if answer is not None and not data.get("error") else ""
        text += f"  (child run {data['child_run_id']})" if data.get("child_run_id") else ""
    return text, "red" if data.get("error") else "magenta"
