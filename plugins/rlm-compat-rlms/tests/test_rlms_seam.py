"""``rlm_compat_rlms.core.rlm.get_client``: the seam the authors' tests patch. Whatever client it returns — here a
small ``BaseLM`` of the test's own — receives every model call of the run, root and sub-calls alike, and its usage
is what the run counts."""

from __future__ import annotations

from typing import Any

import pytest

import rlm_compat_rlms.core.rlm as front
from rlm_compat_rlms import RLM
from rlm_compat_rlms.clients import BaseLM
from rlm_compat_rlms.core.types import ModelUsageSummary, UsageSummary
from rlm_compat_rlms.utils.exceptions import RunFailedError


class ListClient(BaseLM):
    """Answers from a list and keeps every prompt it was given."""

    def __init__(self, model_name: str, replies: list[str]) -> None:
        super().__init__(model_name)
        self.replies = list(replies)
        self.prompts: list[Any] = []

    def completion(self, prompt: Any) -> str:
        self.prompts.append(prompt)
        if not self.replies:
            raise RuntimeError("no reply left")
        return self.replies.pop(0)

    async def acompletion(self, prompt: Any) -> str:
        return self.completion(prompt)

    def get_usage_summary(self) -> UsageSummary:
        return UsageSummary({self.model_name: ModelUsageSummary(len(self.prompts), 0, 0)})

    def get_last_usage(self) -> ModelUsageSummary:
        return ModelUsageSummary(1, 100, 5)


@pytest.fixture
def clients(rlm_isolated, monkeypatch):
    made: dict[str, ListClient] = {}
    scripts = {"root": ["```repl\nnote = llm_query('Describe: ' + context)\nprint(note)\n```",
                        "```repl\nanswer['content'] = note.upper()\nanswer['ready'] = True\n```"],
               "helper": ["a short text"]}

    def get_client(backend: str, backend_kwargs: dict) -> ListClient:
        name = backend_kwargs["model_name"]
        made[name] = ListClient(name, scripts[name])
        return made[name]

    monkeypatch.setattr(front, "get_client", get_client)
    return made


def test_every_call_goes_to_the_client_the_seam_returns(clients):
    rlm = RLM(backend="openai", backend_kwargs={"model_name": "root"}, other_backends=["anthropic"],
              other_backend_kwargs=[{"model_name": "helper"}], environment="process")
    completion = rlm.completion("some words", "What is it?")
    assert completion.response == "A SHORT TEXT"
    root, helper = clients["root"], clients["helper"]
    assert len(root.prompts) == 2 and all(m["role"] in ("system", "user", "assistant") for m in root.prompts[1])
    assert helper.prompts == [[{"role": "user", "content": "Describe: some words"}]]
    usage = completion.usage_summary.model_usage_summaries
    assert usage == {"root": ModelUsageSummary(2, 200, 10, None), "helper": ModelUsageSummary(1, 100, 5, None)}
    assert completion.run.model == "openai:root"


def test_the_clients_failure_ends_the_run_as_an_error_not_an_answer(clients, monkeypatch):
    one_reply = ListClient("root", ["```repl\nprint(1)\n```"])  # then it has nothing left to say
    monkeypatch.setattr(front, "get_client", lambda backend, kwargs: one_reply)
    with pytest.raises(RunFailedError, match="the client's completion failed: RuntimeError: no reply left"):
        RLM(backend="openai", backend_kwargs={"model_name": "root"}, environment="process").completion("x", "q")


def test_a_client_without_completion_is_refused_by_name(clients, monkeypatch):
    monkeypatch.setattr(front, "get_client", lambda backend, kwargs: object())
    with pytest.raises(TypeError, match="get_client returned object, which has no completion"):
        RLM(backend="openai", backend_kwargs={"model_name": "root"}, environment="process").completion("x", "q")
