"""A known secret (here the sink's own token) is masked whole in what ``rlm run`` exports over OTLP, even where a
text is cut: the model's reply (sent as it came, redacted by the sink's content policy) holds the secret across
the 16,000-character cut of a content text and across the 4,000-character share of one message in a list."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from otel_support import PLUGIN
from rlm_sink_otel.testing import OTLPReceiver


def reply_across(secret: str, *cuts: int) -> str:
    """A ``FINAL(...)`` reply with ``secret`` starting 20 characters before each cut, long enough to be cut there
    even once every secret in it is masked."""
    reply = "FINAL("
    for cut in cuts:
        reply += "x" * (cut - 20 - len(reply)) + secret
    return reply + "y" * 20_000 + ")"


def test_a_secret_cut_by_an_export_leaves_no_prefix(rlm_cli, rlm_script, monkeypatch):
    secret = f"sekret-{uuid.uuid4().hex}"
    monkeypatch.setenv("RLM_SINK__OTEL__HEADERS__AUTHORIZATION", f"Bearer {secret}")  # a credential rlm knows
    Path("notes.txt").write_text("a context of a few words")
    reply = reply_across(secret, 4_000, 16_000)
    model = rlm_script([reply, reply])  # answered at once: the run asks again, sending the first reply back
    with OTLPReceiver() as receiver:
        monkeypatch.setenv("RLM_RUN__SINKS", '["otel"]')
        monkeypatch.setenv("RLM_SINK__OTEL__ENDPOINT", receiver.traces_url)
        result = rlm_cli("run", "What is in the notes?", "--context", "notes.txt", "--model", model, "--sandbox",
                         "process", "--json", plugins=PLUGIN)
        assert result.code == 0, result.err
        chats = [s["attributes"] for s in receiver.wait_for_spans(3) if s["name"].startswith("chat")]
        sent = receiver.received_text()
    assert len(chats) == 2 and all("more characters]" in c["output.value"] for c in chats), "the replies were cut"
    sent_back = [m["parts"][0]["content"] for c in chats for m in json.loads(c["gen_ai.input.messages"])
                 if m["role"] == "assistant"]
    assert sent_back and "more characters]" in sent_back[0], "the second call's messages carry the first reply, cut"
    assert secret[:8] not in sent, "a secret's prefix left at a cut"


def test_a_backend_echoing_the_token_across_the_cut_of_its_answer_leaves_no_prefix_in_the_warning(
        rlm_cli, rlm_script, monkeypatch):
    """The sink's one warning quotes the start of the backend's answer: the token it echoes there is masked
    whole, even where that quote is cut (the log's own redaction comes after the cut)."""
    token = f"sekret-{uuid.uuid4().hex}"
    monkeypatch.setenv("RLM_SINK__OTEL__HEADERS__AUTHORIZATION", f"Bearer {token}")
    Path("notes.txt").write_text("a context of a few words")
    model = rlm_script(["```repl\nprint(len(context))\n```", "FINAL(24)"])
    with OTLPReceiver() as receiver:
        receiver.respond("/v1/traces", status=401, body=f"{'x' * 180} rejected: {token}", content_type="text/plain")
        monkeypatch.setenv("RLM_RUN__SINKS", '["otel"]')
        monkeypatch.setenv("RLM_SINK__OTEL__ENDPOINT", receiver.traces_url)
        monkeypatch.setenv("RLM_SINK__OTEL__METRICS", "false")
        result = rlm_cli("run", "How long are the notes?", "--context", "notes.txt", "--model", model, "--sandbox",
                         "process", plugins=PLUGIN)
    assert result.code == 0 and "otel sink: could not export" in result.err and "HTTP 401" in result.err, result.err
    assert token[:8] not in result.err, "a prefix of the token in the warning"
