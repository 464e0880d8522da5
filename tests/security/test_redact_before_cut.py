"""Redact, then cut, where the rest of the host cuts text: the context's preview (in the run
record and the root prompt) and a code step's output shown to the model and recorded. A registered secret across
the cut must not leave its prefix in clear."""

from __future__ import annotations

import json

from rlm_host import redact
from rlm_host.testing.engine import isolated_runner, run_scripted

SECRET = "sk-straddle-0123456789abcdefghijklmnop"


def test_a_secret_across_the_preview_cut_is_masked_whole(tmp_path):
    redact.register(SECRET)
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    context = "x" * 190 + SECRET + " and more text " * 100  # the 200-character preview cuts the key
    result, events, root = run_scripted(runner, "q", ["FINAL(done)"], context=context, sandbox="monty")
    start = [e.data for e in events if e.type == "run_start"][0]
    prompt = json.dumps(root.calls[0])
    record = json.dumps(start) + open(result.trajectory_path).read()
    for text in (prompt, record):
        assert SECRET[:10] not in text and "***" in text


def test_a_secret_across_the_output_cut_is_masked_whole(tmp_path):
    redact.register(SECRET)
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    # the step's output is cut at its middle: head and tail kept, the key straddles where the head ends
    context = "y" * 2655 + SECRET + "z" * 20000
    result, events, root = run_scripted(runner, "q", ["```repl\nprint(context)\n```", "FINAL(done)"], context=context,
                                        sandbox="monty")
    shown = json.dumps(root.calls[1]) + open(result.trajectory_path).read()
    assert "yyyyy" in shown and "zzzzz" in shown  # the output was shown, cut in its middle
    assert SECRET[:10] not in shown
