"""Token counts: one estimate for the host and its plugins, and a connector's own ``count_tokens`` where exactness
matters (here: when pure_rlm compacts its history)."""

from __future__ import annotations

import rlm_host.sdk.models
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.testing import isolated_runner
from rlm_host.tokens import count_tokens, estimate_tokens


class CharTokens(ScriptedConnector):
    """A scripted model whose tokenizer makes every character a token (four times the estimate)."""

    def count_tokens(self, text: str) -> int:
        return len(text)


def test_the_estimate_and_the_models_own_count():
    assert (estimate_tokens("abcdefghi"), estimate_tokens(9), estimate_tokens("")) == (2, 2, 0)
    assert count_tokens("abcdefghi") == count_tokens("abcdefghi", ScriptedConnector()) == 2
    assert count_tokens("abcdefghi", CharTokens()) == 9
    assert (rlm_host.sdk.models.estimate_tokens, rlm_host.sdk.models.count_tokens) == (estimate_tokens, count_tokens)


def compacted(tmp_path, model_type: type[ScriptedConnector]) -> list:
    """The compaction events of a two-step run on a 2048-token window whose first turn leaves about 2,500
    characters of history: past 85 % of the window by the model's count, far below it by the estimate."""
    runner = isolated_runner(tmp_path, sandbox="process")
    root = model_type(["```repl\nx = 1\n```", "the summary", "FINAL(1)"], name="scripted:root", context_window=2048)
    events: list = []
    runner.run_task("q", connectors={"root": root}, on_event=events.append, max_steps=2)
    return [e for e in events if e.type == "compaction"]


def test_compaction_counts_the_history_with_the_models_tokenizer(tmp_path):
    assert compacted(tmp_path / "estimated", ScriptedConnector) == []
    [event] = compacted(tmp_path / "counted", CharTokens)
    assert (event.data["step"], event.data["summary"]) == (2, "the summary")
