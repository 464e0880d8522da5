"""``rlm chat`` as a user types it: a bad ``/model`` is refused there, no error in a turn ends the
session, ``/bogus`` is called unknown, and ``--resume`` uses the model and sandbox the session ran with."""

from __future__ import annotations

import json
from pathlib import Path

SCRIPT = {"responses": ["```repl\nprint(len(context))\n```", "FINAL(42)"]}


def _files(work: Path) -> None:
    (work / "a.txt").write_text("The magic number is 42.\n")
    (work / "s.json").write_text(json.dumps(SCRIPT))


PLUGINS = ["rlm-sandbox-monty"]  # not the test site's broken plugins, which warn


def _session_id(err: str) -> str:
    return err.split("rlm chat --resume ")[-1].split()[0]


def test_a_bad_model_is_refused_at_slash_model_and_the_session_goes_on(rlm, isolated_env):
    _files(Path(isolated_env["WORK"]))
    typed = "/model scripted:nosuch.json\nHi?\n/bogus\n/modle x\n/model\n/exit\n"
    chat = rlm("chat", "--context", "a.txt", "--model", "scripted:s.json", "--quiet", plugins=PLUGINS, input=typed)
    assert chat.returncode == 0, chat.stderr
    assert "error: scripted model script nosuch.json" in chat.stderr and "hint:" in chat.stderr
    assert "model from the next turn" not in chat.stdout  # refused: the model stays
    assert "rlm> 42" in chat.stdout and "model: scripted:s.json" in chat.stdout
    assert "unknown command /bogus" in chat.stdout and "did you mean /model?" in chat.stdout
    assert "session saved" in chat.stderr


def test_a_bad_model_flag_is_refused_before_the_first_question(rlm, isolated_env):
    chat = rlm("chat", "--model", "scripted:nosuch.json", plugins=PLUGINS, input="Hi?\n")
    assert chat.returncode == 2 and "error: scripted model script nosuch.json" in chat.stderr


def test_resume_uses_what_the_session_ran_with_and_a_failing_turn_keeps_the_session(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    _files(work)
    first = rlm("chat", "--context", "a.txt", "--model", "scripted:s.json", "--sandbox", "process", "--quiet",
                plugins=PLUGINS, input="Hi?\n")
    assert first.returncode == 0 and "rlm> 42" in first.stdout, first.stderr
    session = _session_id(first.stderr)
    again = rlm("chat", "--resume", session, "--quiet", plugins=PLUGINS, input="/model\nAgain?\n")  # as typed: no flags
    assert again.returncode == 0, again.stderr
    assert "model=scripted:s.json sandbox=process" in again.stderr and "not taken" not in again.stderr
    assert "model: scripted:s.json" in again.stdout and "rlm> 42" in again.stdout
    newest = max((work / ".rlm" / "runs").glob("run_*.jsonl"), key=lambda p: p.stat().st_mtime)
    start = json.loads(newest.read_text().splitlines()[0])["data"]
    assert (start["model"], start["sandbox"]) == ("scripted:s.json", "process")
    flagged = rlm("chat", "--resume", session, "--sandbox", "monty", "--quiet", plugins=PLUGINS, input="/model\n")
    assert "model=scripted:s.json sandbox=monty" in flagged.stderr  # a flag on resume overrides
    (work / "s.json").unlink()  # the session's model can no longer be loaded: the turn fails, the chat goes on
    broken = rlm("chat", "--resume", session, "--quiet", plugins=PLUGINS, input="Third?\n/vars\n/exit\n")
    assert broken.returncode == 0, broken.stderr
    assert "error: scripted model script" in broken.stderr and "kept:" in broken.stdout


def test_a_planted_session_file_is_still_screened(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    _files(work)
    first = rlm("chat", "--model", "scripted:s.json", "--sandbox", "process", "--quiet", plugins=PLUGINS, input="Hi?\n")
    session = _session_id(first.stderr)
    path = work / ".rlm" / "sessions" / f"{session}.json"
    data = json.loads(path.read_text())
    data["options"]["model"] = "scripted:other.json"  # edited: the signature no longer matches
    path.write_text(json.dumps(data))
    again = rlm("chat", "--resume", session, "--quiet", plugins=PLUGINS, input="")
    assert "not taken from the session file" in again.stderr and "sandbox=process" not in again.stderr


def test_chat_through_another_environment_and_a_framework(rlm, isolated_env):
    """``rlm chat --env … --framework …``: each turn is a run of that environment or framework."""
    work = Path(isolated_env["WORK"])
    (work / "a.txt").write_text("The magic number is 42.\n")
    (work / "g.json").write_text(json.dumps({"responses": [
        '{"action": "run_python", "code": "print(len(context))"}', '{"action": "final", "final_response": "24 chars"}',
    ]}))
    chat = rlm("chat", "--context", "a.txt", "--model", "scripted:g.json", "--env", "generic", "--sandbox", "process",
               "--quiet", plugins=[*PLUGINS, "rlm-env-generic"], input="How long?\n")
    assert chat.returncode == 0, chat.stderr
    assert "rlm> 24 chars" in chat.stdout
    runs = sorted((work / ".rlm" / "runs").glob("*.jsonl"))
    start = json.loads(runs[-1].read_text().splitlines()[0])
    assert start["type"] == "run_start" and start["data"]["environment"] == "generic"
    (work / "f.json").write_text(json.dumps({"responses": [
        json.dumps({"tool": "run_code", "args": {"code": "print(context.split()[-1])"}}), json.dumps({"final": "42."}),
    ]}))
    framed = rlm("chat", "--context", "a.txt", "--model", "scripted:f.json", "--framework", "pydantic-ai",
                 "--sandbox", "process", "--quiet", plugins=[*PLUGINS, "rlm-adapter-pydantic-ai"],
                 input="Which number?\n")
    if "not installed" in framed.stderr or "unknown framework" in framed.stderr:
        import pytest

        pytest.skip("rlm-adapter-pydantic-ai is not installed")
    assert framed.returncode == 0, framed.stderr
    assert "rlm> 42." in framed.stdout
    runs = sorted((work / ".rlm" / "runs").glob("*.jsonl"))
    start = json.loads(runs[-1].read_text().splitlines()[0])
    assert start["data"]["framework"] == "pydantic-ai"
    bad = rlm("chat", "--framework", "nosuch", "--model", "scripted:f.json", plugins=PLUGINS, input="Hi?\n")
    assert bad.returncode == 2 and "nosuch" in bad.stderr and "Traceback" not in bad.stderr


def test_an_ordered_script_plays_on_across_turns_and_runs_list_the_question(rlm, isolated_env):
    """An ordered script restarted at every turn (the chat page's session answered 42 twice), and a later
    turn was listed as "This is turn 2 of a conversation…" instead of its question."""
    work = Path(isolated_env["WORK"])
    (work / "nums.txt").write_text("20 22\n")
    (work / "chat.json").write_text(json.dumps({"responses": [
        "```repl\ntotal = sum(int(x) for x in context.split())\nanswer = total\nprint(answer)\n```",
                                                              "FINAL_VAR(answer)",
        "```repl\nanswer = total + 1\nprint(answer)\n```", "FINAL_VAR(answer)"]}))
    chat = rlm("chat", "--context", "nums.txt", "--model", "scripted:chat.json", "--sandbox", "process", "--quiet",
               plugins=PLUGINS, input="Sum the numbers\nAdd one\n/exit\n")
    assert chat.returncode == 0, chat.stderr
    assert [line for line in chat.stdout.splitlines() if "rlm> " in line][-2:] == ["you> rlm> 42", "you> rlm> 43"]
    listed = rlm("runs", "list", plugins=[*PLUGINS, "rlm-runs"])
    assert [line.split("$0.0000")[-1].strip() for line in listed.stdout.splitlines()[1:]] == ["Add one",
                                                                                           "Sum the numbers"]
    shown = rlm("runs", "show", "latest", plugins=[*PLUGINS, "rlm-runs"])
    session = _session_id(chat.stderr)
    assert f"question: Add one (turn 2 of chat {session})" in shown.stdout and "This is turn" not in shown.stdout
