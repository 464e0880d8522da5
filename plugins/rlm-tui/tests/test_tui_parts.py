"""The parts under the app: slash commands, completion, the lazy trajectory index, live state, safe rendering."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rich.text import Text
from tui_support import CANDIDATES, sample_home, step_events, write_run

from rlm_tui.index import TrajectoryIndex
from rlm_tui.render import clean, step_detail
from rlm_tui.slash import SlashError, complete, parse
from rlm_tui.runs_view import FilterError, RunFilter


def test_slash_commands_parse_into_records():
    run = parse('/rlm run "find the number" env=pure_rlm framework=native context=data.txt steps=3 model=x:y')
    assert (run.name, run.args, run.context) == ("run", ["find the number"], "data.txt")
    assert run.options == {"env": "pure_rlm", "framework": "native", "steps": "3", "model": "x:y"}  # as typed
    assert parse("/rlm chat 'hello there'").name == "chat"
    assert parse("/rlm bench preset=pure_rlm_smoke limit=2").options == {"preset": "pure_rlm_smoke", "limit": "2"}
    report = parse("/rlm bench report candidate=latest baseline=previous")
    assert (report.name, report.options) == ("bench_report", {"candidate": "latest", "baseline": "previous"})
    assert parse("/rlm replay latest").args == ["latest"]
    assert parse("/rlm abort").args == [] and parse("/rlm abort all").args == ["all"]
    assert parse("/connect openai gpt-4o-mini").args == ["openai:gpt-4o-mini"]
    assert parse("/sandbox monty").args == ["monty"]
    assert parse("/help").name == "help" and parse("/compare a b").args == ["a", "b"]
    board = parse("/leaderboard runs metric=cost model=scripted* label=expected label=case=c1")
    assert (board.name, board.args, board.options) == ("leaderboard", ["runs"], {"metric": "cost"})
    assert board.filters == ["model=scripted*", "label=expected", "label=case=c1"]  # each kept, as typed
    assert parse("/leaderboard").args == ["benchmarks"] and parse("/leaderboard metric=avg_cost").options == \
        {"metric": "avg_cost"}


@pytest.mark.parametrize("line, says", [
    ("/nope", "unknown command"), ("/rlm", "usage"), ("/rlm fly", "unknown /rlm command"),
    ('/rlm run "unclosed', "close the quotes"), ("/rlm run two words", "task in quotes"),
    ("/rlm bench limit=2", "preset=NAME"), ("/rlm bench preset=x limit=many", "whole number"),
    ("/rlm bench preset=x colour=red", "unknown option"), ("/connect openai", "usage"), ("/compare a", "usage"),
    ('/rlm run "t" steps=', "needs a value"), ("/leaderboard runs metric=speed", "unknown metric 'speed'"),
    ("/leaderboard runs colour=red", "unknown option 'colour=red'"), ("/leaderboard boats", "usage"),
    ("/leaderboard metric=reward", "unknown metric"), ("/leaderboard runs model=", "needs a value"),
])
def test_bad_command_lines_say_what_is_wrong(line, says):
    with pytest.raises(SlashError, match=says):
        parse(line)


def test_completion_offers_commands_options_run_ids_and_presets():
    assert complete("/rlm r", [], []) == '/rlm run "'
    assert complete("/rlm replay run_2026", ["run_20261116_a"], []) == "/rlm replay run_20261116_a"
    assert complete("/rlm abort a", [], []) == "/rlm abort all"
    assert complete("/rlm bench preset=pure", [], ["pure_rlm_smoke"]) == "/rlm bench preset=pure_rlm_smoke"
    assert complete('/rlm run "task" st', [], []) == '/rlm run "task" steps='
    assert complete('/rlm run "task st', [], []) is None  # inside the quoted task
    assert complete("hello", [], []) is None
    assert complete("/lea", [], []) == "/leaderboard runs metric="
    assert complete("/leaderboard runs metric=c", [], []) == "/leaderboard runs metric=cost"


def test_run_filters():
    chosen = RunFilter.parse("status=final env=pure model=scripted since=2026-11-01 magic")
    assert (chosen.status, chosen.environment, chosen.model, chosen.words) == ("final", "pure", "scripted", ("magic",))
    with pytest.raises(FilterError, match="date"):
        RunFilter.parse("since=yesterday")
    with pytest.raises(FilterError, match="unknown filter"):
        RunFilter.parse("colour=red")


def test_the_index_reads_a_growing_file_and_a_half_written_line(tmp_path):
    path = write_run(tmp_path, "run_x", [{"code": "print(1)", "stdout": "1\n"}], finished=False)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5]) + lines[5][:10])  # the writer is in the middle of a line
    index = TrajectoryIndex(path)
    assert index.refresh() == 5 and index.root_id == "run_x" and len(index.root) == 0
    assert list(index.live.in_progress.values()) == ["code step 1 block 1: print(1)"]  # running now
    path.write_bytes(b"".join(lines))
    assert index.refresh() == len(lines) - 5
    assert len(index.root) == 1 and index.step("run_x", 0)["code"] == "print(1)"
    assert index.live.steps == 1 and not index.live.finished and not index.live.in_progress
    meters = {label: text for label, _, _, text in index.live.meters(live=False)}
    assert meters["steps"] == "1/10" and meters["cost"].endswith("/$0.05")


def test_steps_sub_calls_child_runs_and_errors_are_attached(tmp_path):
    paths = sample_home(tmp_path)
    index = TrajectoryIndex(paths["a"])
    index.refresh()
    root = index.root
    assert len(root) == 4 and index.error_indices(root.run_id) == [1]
    assert [c["kind"] for c in root.sub_calls[2]] == ["llm_query"]
    assert index.live.finished and index.live.status() == "final"
    child = TrajectoryIndex(paths["c"])
    child.refresh()
    assert child.root.children == {0: ["run_20261116_020000_000001_dddd"]}
    assert len(child.runs["run_20261116_020000_000001_dddd"]) == 1


def test_hostile_text_stays_text():
    nasty = "[bold red]boom[/] \x1b[2J\x07 [link=file:///etc/passwd]x[/link]"
    data = {"action": "run_code", "code": nasty, "reply": nasty,
            "observation": {"blocks": [{"stdout": nasty}],
                            "variables": [{"name": nasty, "type": "str", "repr": nasty}]}}
    detail = step_detail(1, data, nasty, [{"kind": nasty, "prompt": nasty, "response": nasty}], [(nasty, nasty)])
    assert isinstance(detail, Text)
    assert "[bold red]boom[/]" in detail.plain and "\x1b" not in detail.plain and "\x07" not in detail.plain
    assert all(span.style in ("bold", "dim", "cyan", "red", "green", "bold red", "") for span in detail.spans)
    assert clean("\x1b[31m") == "␛[31m"
    assert clean("a\x9b2J\x9d8;;u\x07\x85\x7fb") == "a?2J?8;;u???b"  # C1 (CSI, OSC, NEL) and DEL too
    long = step_detail(1, {"action": "run_code", "code": "x", "observation": {"blocks": [{"stdout": "y" * 50_000}]}},
                       None, [], [])
    assert "30,000 more characters" in long.plain and len(long.plain) < 21_000


def test_rlm_help_does_not_import_textual():
    code = ("import sys, runpy; sys.argv = ['rlm', '--help']\n"
            "try:\n    runpy.run_module('rlm_host', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "mine = ('textual', 'textual_serve', 'rlm_tui')\n"
            "print('\\n' + str(sorted(m for m in sys.modules if m.split('.')[0] in mine)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "tui " in out, out  # the command is listed…
    loaded = out.strip().splitlines()[-1]
    # …from the hooks module alone, or from the command cache (no plugin imported at all): never Textual
    assert loaded in ("[]", "['rlm_tui', 'rlm_tui.hooks']"), loaded


def test_the_index_agrees_with_the_hosts_replay(tmp_path):
    """The TUI's own lazy navigation finds the steps and error steps the host's ``Replay`` finds."""
    from rlm_host.sdk.embedding import Replay, RunStore

    for path in sample_home(tmp_path).values():
        replay = Replay(RunStore(tmp_path).load(path))
        index = TrajectoryIndex(path)
        index.refresh()
        assert len(index.root) == len(replay)
        assert index.error_indices(index.root_id) == replay.errors()
        assert [index.step(index.root_id, i)["code"] for i in range(len(replay))] == \
            [step.record.code for step in replay.steps]


def test_a_steps_candidates_are_attached_as_the_hosts_replay_attaches_them(tmp_path):
    """``--branch-width``: the ``branch`` events before a step are its candidates, read lazily like the step."""
    from rlm_host.sdk.embedding import Replay, RunStore

    path = write_run(tmp_path, "run_branch", [{"code": "print(1)"}, {"code": "x = 6 * 7", "stdout": "42\n",
                                                                     "branches": CANDIDATES},
                                              {"code": "FINAL(x)", "final": True}])
    index = TrajectoryIndex(path)
    index.refresh()
    replay = Replay(RunStore(tmp_path).load(path))
    assert [index.branches("run_branch", i) for i in range(3)] == [step.branches for step in replay.steps]
    assert [b["candidate"] for b in index.branches("run_branch", 1)] == [1, 2, 3] and len(index.root) == 3
    assert index.step("run_branch", 1)["code"] == "x = 6 * 7"  # the kept candidate is the step
    detail = step_detail(2, index.step("run_branch", 1), None, [], [], index.branches("run_branch", 1)).plain
    assert "candidates (3)" in detail
    assert "▶ 2. run_code · score +0.80 · 41 tok · kept\n    x = 6 * 7\n    → 42" in detail
    assert "  1. run_code · score -0.20 · 40 tok · error\n    x = 1/0\n    ✗ ZeroDivisionError" in detail
    assert "  3. final · score +0.00" in detail and "FINAL(41)" in detail
    assert step_detail(1, index.step("run_branch", 0), None, [], [], []).plain.count("candidates") == 0


def test_run_options_are_named_as_typed_without_rewriting(rlm_isolated):
    """Issue 48: each option maps to its run option by name and is labelled as typed, so the host's own message
    names it (``steps=`` or ``max_steps=``, whichever was typed), and nothing else in it is touched."""
    from rlm_host import RlmError
    from rlm_host.sdk.embedding import load_settings

    from rlm_tui.workspace import merge_options

    loaded = load_settings()

    def error(given):
        with pytest.raises(RlmError) as caught:
            merge_options(loaded, given)
        return str(caught.value), caught.value.hint or ""

    assert error({"steps": "many"})[0].startswith("invalid run option: steps=: Input should be a valid integer")
    assert error({"max_steps": "many"})[0].startswith("invalid run option: max_steps=: ")
    message = error({"depth": "x", "timeout": "soon"})[0]
    assert "depth=: " in message and "timeout=: " in message and "--" not in message
    message, hint = error({"budget": "5"})
    assert message.startswith("unknown run option budget=") and "cost=" in hint and "help=" not in hint
    assert "max_steps=" in error({"max_step": "5"})[0]  # the nearest names, as the command line takes them
    message, hint = error({"labels": "nokey"})
    assert message.startswith("labels=nokey: ") and "KEY=VALUE" in message  # a pairs option: typed, then the host's
    merged = merge_options(loaded, {"steps": "3", "env": "generic", "labels": "team=a,case=c1"})
    run = merged.settings.run
    assert (run.max_steps, run.environment, run.labels) == (3, "generic", {"team": "a", "case": "c1"})
    assert merged.sources["run.max_steps"] == "steps=" and merged.sources["run.environment"] == "env="
