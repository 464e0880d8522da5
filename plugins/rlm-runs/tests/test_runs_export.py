"""``rlm runs export``: a saved run tree through a registered exporter; rlm-runs' own is ``json`` (its events as
one JSON array). The ``rlms`` exporter and its tests are in ``plugins/rlm-compat-rlms``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.testing import isolated_runner, run_scripted


@pytest.fixture
def recorded(rlm_isolated):
    runner = isolated_runner(rlm_isolated.work, sandbox="process", environ={"RLM_RUN__SINKS": "[]"})
    result, _, _ = run_scripted(runner, "What is the answer?", ["```repl\nprint(1)\n```", "```repl\nFINAL('42')\n```"],
                                context="some words")
    assert result.completed and result.final_response == "42", result.error
    return result


def test_export_as_our_own_events(recorded, rlm_cli, rlm_isolated):
    shown = rlm_cli("runs", "export", recorded.run_id, "--format", "json")
    assert shown.code == 0, shown.err
    events = json.loads(shown.out)
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
    assert events == [json.loads(line) for line in Path(recorded.trajectory_path).read_text().splitlines()]
    target = rlm_isolated.work / "out" / "run.json"
    written = rlm_cli("runs", "export", "latest", "--output", str(target))  # json is the default format
    assert written.code == 0 and written.out == "" and str(target) in written.err
    assert target.read_text() == shown.out


def test_a_bad_format_or_run_exits_2(recorded, rlm_cli):
    bad = rlm_cli("runs", "export", recorded.run_id, "--format", "xml")
    assert bad.code == 2 and bad.out == ""
    assert "unknown exporter 'xml'" in bad.err and "json" in bad.err
    missing = rlm_cli("runs", "export", "run_19990101")
    assert missing.code == 2 and "no saved run" in missing.err
