"""The ``scripted`` provider: a deterministic model that plays a script, for dry runs and CI of prompts.

``--model scripted:PATH`` reads PATH, a JSON or JSONL file. JSON is either a list of responses or an object::

    {
      "responses": ["first reply", {"text": "second", "output_tokens": 7}, {"error": "boom"}],
      "rules": [{"match": "summari[sz]e", "text": "a summary"}],
      "context_window": 8192
    }

JSONL holds one item a line: an object with ``"match"`` is a rule, anything else a response.

- ``responses`` are consumed in order, one per ``complete`` call. An item is a string or an object with
  ``text`` (a string, or null for a malformed reply), ``input_tokens``, ``output_tokens``, ``delay``
  (seconds to wait first), ``finish_reason`` and ``error`` (raise ModelError with that message instead).
- ``rules`` are checked first and never consumed: the first whose ``match`` regex is found in the last user
  message answers. They suit concurrent sub-calls whose order is not fixed.
- When neither answers: ModelError "scripted model script PATH: no response left for call N".

Token counts default to an estimate (``rlm_host.tokens.estimate_tokens``). Calls are thread-safe, and every
call's messages are kept in ``calls`` so tests can assert what was sent. ``ScriptedConnector.from_responses([...])``
builds one in code.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rlm_host.config.schema import problems
from rlm_host.models.protocol import Completion, Message, ModelError
from rlm_host.tokens import estimate_tokens

DEFAULT_CONTEXT_WINDOW = 32_768


class ScriptFileError(ModelError):
    """A script file that cannot be read or parsed: bad input (exit 2), not a model failure."""

    exit_code = 2


class ScriptItem(BaseModel):
    """One scripted reply."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    input_tokens: int | None = Field(None, ge=0)
    output_tokens: int | None = Field(None, ge=0)
    delay: float = Field(0.0, ge=0)
    finish_reason: str | None = "stop"
    error: str | None = None


class ScriptRule(ScriptItem):
    """A reply given whenever ``match`` (a regular expression) is found in the last user message."""

    match: str

    @field_validator("match")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"bad regular expression {value!r}: {exc}") from None
        return value


ItemLike = str | Mapping[str, Any] | ScriptItem
_Entry = TypeVar("_Entry", bound=ScriptItem)


def _entry(kind: type[_Entry], value: Any, where: str) -> _Entry:
    """A response (a string or an object) or a rule (an object with ``match``), validated."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and kind is ScriptItem:
        value = {"text": value}
    if not isinstance(value, Mapping):
        expected = "expected a string or an object" if kind is ScriptItem else "a rule is an object with 'match'"
        raise ModelError(f"{where}: {expected}, got {type(value).__name__}")
    try:
        return kind.model_validate(dict(value))
    except ValidationError as exc:
        raise ModelError(f"{where}: {problems(exc, 'item')}") from None


class ScriptedConnector:
    """A ModelConnector replaying scripted responses and rules (see the module docstring)."""

    def __init__(self, responses: Iterable[ItemLike] = (), rules: Iterable[ScriptRule | Mapping[str, Any]] = (), *,
                 name: str = "scripted:inline", context_window: int | None = DEFAULT_CONTEXT_WINDOW) -> None:
        self.name = name
        self.context_window = context_window
        self.responses = [_entry(ScriptItem, r, f"{name}: response {i + 1}") for i, r in enumerate(responses)]
        self.rules = [_entry(ScriptRule, r, f"{name}: rule {i + 1}") for i, r in enumerate(rules)]
        self._patterns = [re.compile(rule.match, re.DOTALL) for rule in self.rules]
        self._next = self._count = 0
        self._lock = threading.Lock()
        self.calls: list[list[Message]] = []  # the messages of every call, in arrival order

    @classmethod
    def from_responses(cls, responses: Iterable[ItemLike], rules: Iterable[Mapping[str, Any]] = (),
                       **kwargs: Any) -> ScriptedConnector:
        """A scripted model from responses (and rules) given in code."""
        return cls(responses, rules, **kwargs)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedConnector:
        """Load a JSON or JSONL script; a clear ModelError for a missing or invalid file."""
        path = Path(path)
        where = f"scripted model script {path}"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScriptFileError(f"{where}: cannot read: {exc.strerror or exc}",
                                  hint="use scripted:PATH/TO/script.json") from None
        try:
            data = _parse_jsonl(text, where) if path.suffix.lower() == ".jsonl" else json.loads(text)
        except json.JSONDecodeError:
            data = _parse_jsonl(text, where)  # several JSON values, one a line
        if isinstance(data, list):
            data = {"responses": data}
        if not isinstance(data, dict):
            raise ScriptFileError(f"{where}: expected a list of responses or an object with 'responses' and 'rules'")
        unknown = set(data) - {"responses", "rules", "context_window"}
        if unknown:
            raise ScriptFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        for key in ("responses", "rules"):
            if not isinstance(data.get(key, []), list):
                raise ScriptFileError(f"{where}: '{key}' must be a list")
        window = data.get("context_window", DEFAULT_CONTEXT_WINDOW)
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
            raise ScriptFileError(f"{where}: 'context_window' must be a positive integer")
        return cls(data.get("responses", []), data.get("rules", []), name=f"scripted:{path}", context_window=window)

    @property
    def remaining(self) -> int:
        """Responses not consumed yet."""
        with self._lock:
            return len(self.responses) - self._next

    def _pick(self, messages: list[Message]) -> tuple[int, ScriptItem, dict[str, Any]]:
        """Under the lock: the call number, the item answering it, and where it came from."""
        with self._lock:
            self._count += 1
            self.calls.append([dict(m) for m in messages])
            last = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
            for index, pattern in enumerate(self._patterns):
                if pattern.search(last):
                    return self._count, self.rules[index], {"rule": index + 1}
            if self._next < len(self.responses):
                self._next += 1
                return self._count, self.responses[self._next - 1], {"response": self._next}
            script = self.name.removeprefix("scripted:")
            raise ModelError(f"scripted model script {script}: no response left for call {self._count}")

    def complete(self, messages: list[Message], *, timeout: float | None = None, on_retry: Any = None,
                 purpose: Any = "turn", reply_format: Any = None) -> Completion:
        """Play the next scripted reply (a rule first when one matches); a script enforces no reply format."""
        started = time.monotonic()
        call, item, origin = self._pick(messages)
        if item.delay:
            if timeout is not None and item.delay > timeout:
                time.sleep(timeout)
                raise ModelError(f"{self.name}: no answer within {timeout:g} s (timeout, scripted delay "
                                 f"{item.delay:g} s)")
            time.sleep(item.delay)
        if item.error is not None:
            raise ModelError(item.error)
        raw: dict[str, Any] = {"call": call, **origin}
        if not item.text:
            raw["malformed"] = "scripted reply with " + ("text null" if item.text is None else "empty text")
        prompt = "".join(str(m.get("content") or "") for m in messages)
        return Completion(text=item.text, model=self.name, cost=0.0, finish_reason=item.finish_reason, raw=raw,
                          input_tokens=item.input_tokens if item.input_tokens is not None else estimate_tokens(prompt),
                          output_tokens=estimate_tokens(item.text or "") if item.output_tokens is None
                          else item.output_tokens, seconds=time.monotonic() - started)


def _parse_jsonl(text: str, where: str) -> dict[str, Any]:
    """JSONL: one response or rule a line (blank lines skipped)."""
    responses: list[Any] = []
    rules: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ModelError(f"{where}: line {number} is not JSON: {exc.msg}") from None
        (rules if isinstance(value, dict) and "match" in value else responses).append(value)
    return {"responses": responses, "rules": rules}


def create(settings: Any, services: Any) -> ScriptedConnector:
    """The provider factory named by the ``scripted`` ProviderSpec: ``scripted:PATH``."""
    if not services.model:
        raise ModelError("scripted: no script given (use scripted:PATH/TO/script.json)")
    return ScriptedConnector.from_file(services.model)


__all__ = ["DEFAULT_CONTEXT_WINDOW", "ScriptItem", "ScriptRule", "ScriptedConnector", "create"]
