"""Redaction where text is cut or passed on, attacked through real runs: a registered secret the cut of an event
falls inside (a sub-call's prompt and reply, the live code) is masked whole, never leaving its prefix; an error a
model connector raises quoting a key reaches the caller, the trajectory and the sinks redacted (the runner's own
layer: such an error is no ``RlmError``, which would redact itself)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rlm_host import wait_for_sinks
from rlm_host.redact import register
from rlm_host.testing.engine import isolated_runner, run_scripted


@pytest.fixture
def secret() -> str:
    """A key this process knows (as one from a flag, a setting or a provider's variable is)."""
    value = f"sekret-{uuid.uuid4().hex}"
    register(value)
    return value


def leaks(text: str, secret: str) -> list[str]:
    """The pieces of ``secret`` (its first 8 characters, or its last 8) found in ``text``."""
    return [piece for piece in (secret[:8], secret[-8:]) if piece in text]


def test_a_secret_straddling_an_events_cut_is_masked_whole(tmp_path: Path, monkeypatch, secret: str):
    """The live ``code_start`` keeps 500 characters of the code, ``sub_call`` 500 of the prompt and of the reply:
    the secret sits across each of those cuts."""
    monkeypatch.chdir(tmp_path)
    code = f"prompt = '{'y' * 475}{secret}{'z' * 100}'\nprint(llm_query(prompt))\n"  # its own cut falls there too
    runner = isolated_runner(tmp_path, plugins="rlm-sink-local", sandbox="process",
                             environ={"RLM_RUN__SINKS": '["local"]'})
    result, events, _ = run_scripted(runner, "What does the sub-model say?", [f"```repl\n{code}```", "FINAL(done)"],
                                     sub_rules=[{"match": "y{400}",
                                                 "text": "w" * 490 + secret + "v" * 100}])
    assert result.completed, result.error
    code_start, sub_call = (next(e for e in events if e.type == kind) for kind in ("code_start", "sub_call"))
    assert code_start.data["code"].endswith("characters]"), "the live code was cut"
    assert all("more characters]" in sub_call.data[key] for key in ("prompt", "response")), "both were cut"
    live = json.dumps([e.model_dump(mode="json") for e in events])
    trajectory = Path(result.trajectory_path).read_text()
    sinks = "".join(p.read_text() for p in (tmp_path / ".rlm" / "observability").rglob("*.jsonl"))
    for where, text in (("live events", live), ("trajectory", trajectory), ("local sink", sinks)):
        assert not leaks(text, secret), f"a piece of the secret in the {where}"
    assert "***" in trajectory


class LeakingConnector:
    """A model connector whose failure is a plain exception quoting the user's key (a proxy's answer echoed)."""

    name, provider, context_window = "leaky:model", "leaky", None

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def complete(self, messages, **options):
        raise ConnectionError(f"the proxy refused the request with Authorization: Bearer {self.secret}")


def test_a_connector_error_quoting_a_key_reaches_caller_trajectory_and_sinks_redacted(tmp_path: Path, monkeypatch,
                                                                                     secret: str):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins="rlm-sink-local", sandbox="process",
                             environ={"RLM_RUN__SINKS": '["local"]'})
    connector = LeakingConnector(secret)
    result = runner.run_task("What is the answer?", connectors={"root": connector, "sub": connector})
    assert wait_for_sinks(30)
    assert result.termination_reason == "error" and "ConnectionError" in result.error
    assert not leaks(result.error, secret) and "Bearer ***" in result.error, "the caller got the key in clear"
    trajectory = Path(result.trajectory_path).read_text()
    runs = (tmp_path / ".rlm" / "observability" / "runs.jsonl").read_text()
    assert not leaks(trajectory, secret) and not leaks(runs, secret)
    assert "Bearer ***" in json.loads(runs.splitlines()[-1])["error"]
