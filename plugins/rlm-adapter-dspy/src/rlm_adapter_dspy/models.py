"""The run's model roles as dspy LMs: ``dspy.LM(engine=...)`` with an engine that calls ``ctx.root`` / ``ctx.sub``.

dspy 3.4 deprecates custom LMs written as ``BaseLM.forward()`` subclasses (removed in 3.5) in favour of an
*engine*: an object with ``complete(Request) -> Response`` handed to ``dspy.LM(model, engine=...)``. That is
what this is: dspy's LM front (adapters, history, callbacks) over our model role, which does the real work —
usage, cost, budgets, retries and record-and-replay are the runner's. So the LM is built with dspy's response
cache off (our replay is the record) and ``num_retries=0`` (the connector retries); no provider name is
guessed and no environment variable is read: dspy only ever sees the role's name, behind an ``rlm/`` prefix.

``RootEngine`` keeps the text of every root reply until the interpreter files it with the step it belongs to
(``take_replies``): each step's ``reply`` is then the exact text the model returned, which is what the replay
provider plays back. ``SubEngine`` sends a bare prompt (``llm_query`` from the sandbox) through the run's
``SubCalls`` (``ctx.tools.sub_calls``), the path native runs take: one ``max_llm_calls`` unit from the run's
budget and a ``sub_call`` event (live view, trajectory, replay) per call.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import dspy
from dspy import lm15

from rlm_host.sdk.frameworks import FrameworkContext
from rlm_host.sdk.models import Purpose, ReplyFormat

#: The output field of the signature ``context, query -> answer``.
ANSWER_FIELD = "answer"


def role_lm(engine: Any, name: str) -> Any:
    """A ``dspy.LM`` whose calls go to ``engine``; dspy's cache and retries off (the runner has both)."""
    return dspy.LM(f"rlm/{name}", engine=engine, cache=False, num_retries=0)


def request_messages(request: Any) -> list[dict[str, str]]:
    """An lm15 ``Request`` as our messages: ``[{"role", "content"}]`` (the system prompt first)."""
    messages: list[dict[str, str]] = []
    system = request.system
    if system is not None:
        text = system if isinstance(system, str) else "".join(getattr(part, "text", "") or "" for part in system)
        messages.append({"role": "system", "content": text})
    for message in request.messages:
        role = message.role if message.role in ("user", "assistant", "system") else "user"
        messages.append({"role": role, "content": message.text or ""})
    return messages


def response(text: Optional[str], model: str, input_tokens: int = 0, output_tokens: int = 0,
             finish_reason: Optional[str] = None) -> Any:
    """An lm15 ``Response`` carrying ``text`` and its usage."""
    return lm15.Response(
        id=None, model=model or "rlm", message=lm15.Message.assistant([lm15.TextPart(text or "")]),
        finish_reason="length" if finish_reason == "length" else "stop",
        usage=lm15.Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                         total_tokens=input_tokens + output_tokens),
    )


class _Engine:
    """What dspy asks of a custom engine besides ``complete``: streaming (one event per reply) and ``close``."""

    def complete(self, request: Any) -> Any:
        raise NotImplementedError

    def stream(self, request: Any) -> Any:
        return lm15.response_to_events(self.complete(request))

    def close(self) -> None:
        pass


#: dspy.RLM's action reply in dspy's field format (``ChatAdapter``): reasoning, then the code in a python fence,
#: then the completed marker; a provider that enforces grammars holds each turn to it (extract's answer is free).
ACTION_GRAMMAR = r'''
root      ::= "[[ ## reasoning ## ]]\n" reasoning "\n\n[[ ## code ## ]]\n```python\n" codeline{1,25} "```\n\n[[ ## completed ## ]]"
reasoning ::= [^\[\n`]{1,400} ("\n" [^\[\n`]{1,400}){0,4}
codeline  ::= [^`\n]{0,200} "\n"
'''  # noqa: E501
ACTION_FORMAT = ReplyFormat("dspy_rlm_action", gbnf=ACTION_GRAMMAR.strip() + "\n")


class RootEngine(_Engine):
    """dspy.RLM's main LM: each call is one root turn of the run (``ctx.root`` raises StepLimitReached at the turn
    after ``max_steps``)."""

    def __init__(self, ctx: FrameworkContext) -> None:
        self.ctx = ctx
        self.purpose: Purpose = "turn"  # "synthesis" while dspy's extract asks for the answer after the last turn
        self._replies: list[Optional[str]] = []
        self._lock = threading.Lock()

    def complete(self, request: Any) -> Any:
        shape = ACTION_FORMAT if self.purpose == "turn" else None  # extract's fields differ: left free
        completion = self.ctx.root.complete(request_messages(request), purpose=self.purpose,
                                            reply_format=shape)
        with self._lock:
            self._replies.append(completion.text)
        return response(completion.text, completion.model or self.ctx.root.name, completion.input_tokens,
                        completion.output_tokens, completion.finish_reason)

    def take_replies(self) -> list[Optional[str]]:
        """The root replies since the previous call, in order (the last one is the current step's)."""
        with self._lock:
            replies, self._replies = self._replies, []
        return replies


class SubEngine(_Engine):
    """dspy.RLM's ``sub_lm``: ``llm_query`` / ``llm_query_batched`` from sandbox code."""

    def __init__(self, ctx: FrameworkContext) -> None:
        self.ctx = ctx

    def complete(self, request: Any) -> Any:
        messages = request_messages(request)
        if len(messages) == 1 and messages[0]["role"] == "user":
            # the native path: budget, sub_call event (replayable), errors as RuntimeError for the sandbox code
            text = self.ctx.tools.sub_calls.llm_query(messages[0]["content"])
            return response(text, self.ctx.sub.name)
        self.ctx.budget.take_llm_call()
        completion = self.ctx.sub.complete(messages)
        return response(completion.text, completion.model or self.ctx.sub.name, completion.input_tokens,
                        completion.output_tokens, completion.finish_reason)
