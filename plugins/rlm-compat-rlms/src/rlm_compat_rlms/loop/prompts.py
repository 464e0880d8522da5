"""What the root model of the ``rlms`` loop is told, in this layer's words, with the structure of the authors'
loop: a system prompt naming the REPL (their names: ``answer``, ``rlm_query(prompt, model)``…), a first user
message with the question and the context's shape (never its content), then one short user prompt per turn that
counts turns and says which earlier contexts and conversations the REPL holds."""

from __future__ import annotations

from typing import Any, Optional

from rlm_host.sdk.environments import with_instructions

from rlm_compat_rlms.core.types import QueryMetadata

SYSTEM_PROMPT = """\
You are a Recursive Language Model (RLM). You answer a query about a context that lives in a Python REPL, not in \
this conversation, and you work on it turn by turn until you submit an answer.

Each turn, say briefly what you will do, then write Python in a ```repl block. The REPL runs it and shows you what \
it printed; variables stay from one turn to the next. In the REPL:
- `context`: the data the query is about (often a long `str`, or a `list` / `dict`).
- `llm_query(prompt, model=None) -> str`: one call to a sub-model, no REPL. For reading, extracting from or \
summarising a piece of text; a sub-model reads about 500,000 characters at once.
- `llm_query_batched(prompts, model=None) -> list[str]`: several llm_query calls at once; answers in the order of \
the prompts.
- `rlm_query(prompt, model=None) -> str` and `rlm_query_batched(prompts, model=None) -> list[str]`: a recursive RLM \
with a REPL of its own, for a sub-problem that needs several steps; without recursion they are llm_query and \
llm_query_batched.
- `SHOW_VARS()`: your variables and their types.
- `answer`: a dict that starts as {{"content": "", "ready": False}}. To submit, set `answer["content"]` to your \
final answer and `answer["ready"] = True` in a ```repl block; the run ends there and returns `answer["content"]`. \
(`FINAL(value)` and `FINAL_VAR("name")` in code end it the same way.)
{custom_tools_section}
Only what you print comes back to you, and long output is cut: print sizes, slices and samples, and hand long \
text to llm_query instead of printing it. A failing llm_query raises an exception in your code.

Start by looking at `context` (its type, its size, a few lines). Do not set answer["ready"] on your first turn."""

ORCHESTRATOR_ADVICE = """\
Work as an orchestrator rather than a solver. Once you have looked at `context`, write down a short plan: which \
turns compute what, and which sub-model calls each one makes. Then follow it one turn at a time, printing a small \
sample of each result to check it.

Keep long text out of your own messages: reading, summarising, classifying and checking belong in llm_query / \
llm_query_batched calls, with prompts of up to about 100,000 characters each and batches of up to about 20 \
prompts (several full prompts beat many tiny ones). When plain Python can narrow the data first (a search, a \
filter), do that before asking a sub-model.

Print your candidate answer and check it before you set answer["ready"]. If you are running out of turns, submit \
your best answer rather than none."""

FIRST_TURN = "You have not looked at `context` yet: look at it first, and do not submit an answer on this turn."

SYNTHESIS_PROMPT = ("You have used all your turns. From everything above, give your final answer to the query now, "
                    "as plain text, without code.")


def system_prompt(custom: Optional[str], orchestrator: bool, instructions: Optional[str] = None,
                  tools: str = "") -> str:
    """The system prompt: the user's own (``custom_system_prompt``) or this layer's, the orchestration advice,
    and ``[run] instructions`` after them. ``tools`` (the host's lines for the user's functions) fills a
    ``{custom_tools_section}`` as rlms fills it, or follows the prompt; a prompt that is not a format string is used
    as it is."""
    template = custom if custom is not None else SYSTEM_PROMPT
    section = f"\n\n{tools}" if tools else ""
    try:
        text = template.format(custom_tools_section=section)
    except (KeyError, IndexError, ValueError):
        text = template
    if tools and tools not in text:
        text = f"{text}{section}"
    if orchestrator:
        text = f"{text}\n\n{ORCHESTRATOR_ADVICE}"
    return with_instructions(text, instructions)


def opening(question: Optional[str], context: Any, prologue: Optional[str] = None) -> str:
    """The first user message: the question (when there is one) and the context's shape."""
    shape = describe(context)
    parts = [f"Answer the following: {question}", shape] if question else [shape]
    if prologue:
        parts.append(prologue)
    return "\n\n".join(parts)


def describe(context: Any) -> str:
    """The context's type and length, and the length of each part when it has several (at most 20 listed)."""
    if context is None:
        return "There is no context: `context` is None. Answer from the query, with sub-model calls if they help."
    try:
        meta = QueryMetadata(context)
    except ValueError:
        return f"Your context is a {type(context).__name__}."
    text = f"Your context is a {meta.context_type} of {meta.context_total_length:,} characters in total"
    if len(meta.context_lengths) > 1:
        shown = ", ".join(f"{n:,}" for n in meta.context_lengths[:20])
        more = f", … ({len(meta.context_lengths)} parts)" if len(meta.context_lengths) > 20 else ""
        text += f", in parts of [{shown}{more}] characters"
    return text + ". A sub-model call reads about 100,000 tokens at once."


def turn_prompt(step: int, max_steps: int, contexts: int, histories: int) -> str:
    """The user prompt of a turn: its number, the first turn's caution, and the earlier contexts and conversations
    the REPL holds (a persistent RLM's)."""
    parts = [f"Turn {step} of {max_steps}."]
    if step == 1:
        parts.append(FIRST_TURN)
    if contexts > 1:
        newest = f"context_{contexts - 1}"
        parts.append(f"The REPL holds {contexts} contexts: context_0 … {newest} (`context` is context_0, the newest "
                     f"is {newest}).")
    if histories == 1:
        parts.append("The REPL holds the conversation of 1 earlier completion in `history` (also history_0): a list of "
                     "messages.")
    elif histories > 1:
        parts.append(f"The REPL holds the conversations of {histories} earlier completions: history_0 … "
                     f"history_{histories - 1} (`history` is history_0), each a list of messages.")
    return " ".join(parts)


def repl_output(outputs: list[str]) -> str:
    """What the code of a turn printed, one section per block."""
    if len(outputs) == 1:
        return f"REPL output:\n{outputs[0]}"
    return "\n\n".join(f"REPL output (block {i}):\n{text}" for i, text in enumerate(outputs, 1))


__all__ = ["SYSTEM_PROMPT", "ORCHESTRATOR_ADVICE", "SYNTHESIS_PROMPT", "system_prompt", "opening", "describe",
           "turn_prompt", "repl_output"]
