"""The direct-llm baseline's one prompt: its context is cut to the model's window by the model's own token count
when the connector offers one, else by the host's estimate."""

from __future__ import annotations

from rlm_bench.direct import RESERVED_TOKENS, build_messages, run_direct
from rlm_host.sdk.models import Completion, estimate_tokens

CONTEXT = "word " * 10_000  # 50,000 characters: 12,500 tokens by the estimate


class CharTokens:
    """A model whose tokenizer makes every character a token (four times the estimate); it keeps its prompts."""

    name = "test:chars"
    context_window = 4096

    def __init__(self) -> None:
        self.prompts: list[list[dict[str, str]]] = []

    def count_tokens(self, text: str) -> int:
        return len(text)

    def complete(self, messages, *, timeout=None, **_):
        self.prompts.append(messages)
        return Completion(text="answer")


def prompt_chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_the_context_is_cut_to_the_window_by_the_models_own_count():
    model = CharTokens()
    outcome = run_direct(model, "What is it?", CONTEXT)
    [messages] = model.prompts
    room = model.context_window - RESERVED_TOKENS
    assert room - 200 < prompt_chars(messages) <= model.context_window  # its tokens: one a character
    assert outcome.text == "answer" and outcome.notes[0].startswith("context truncated for direct-llm: 50,000 →")


def test_without_a_tokenizer_the_estimate_sizes_the_cut():
    messages, notes = build_messages("What is it?", CONTEXT, 4096)
    room = 4096 - RESERVED_TOKENS
    assert room - 50 < estimate_tokens(prompt_chars(messages)) <= room + 10  # the question's framing is not counted
    assert notes[0].startswith("context truncated for direct-llm: 50,000 →")
