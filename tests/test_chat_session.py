"""Chat sessions: turns over one context that see the earlier turns, keep the REPL's JSON variables, and continue
in another process from what was saved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host import RLM, InputError


def script(path: Path, rules: list) -> str:
    path.write_text(json.dumps({"responses": [], "rules": rules}))
    return f"scripted:{path}"


@pytest.mark.parametrize("sandbox", ["process", "monty"])
def test_turns_keep_variables_and_history_and_resume_elsewhere(rlm_isolated, sandbox):
    model = script(rlm_isolated.work / "s.json", [
        {"match": "New question: Add one", "text": "```repl\nanswer = total + 1\nhelper = len\nprint(answer)\n```"},
        {"match": "New question: Double it", "text": "```repl\nanswer = answer * 2\nprint(answer)\n```"},
        {"match": "Sum the numbers", "text": "```repl\ntotal = sum(int(x) for x in context.split())\nanswer = total\n"
                                             "print(answer)\n```"},
        {"match": ".", "text": "FINAL_VAR('answer')"},
    ])
    rlm = RLM(model, sandbox=sandbox)
    chat = rlm.session("20 22")
    first = chat.ask("Sum the numbers")
    assert first.final_response == "42" and chat.variables == {"answer": 42, "total": 42}
    second = chat.ask("Add one")
    assert second.final_response == "43"  # `total` came from turn 1, in a fresh sandbox session
    assert chat.variables["answer"] == 43 and any(d.startswith("helper") for d in chat.dropped)
    start = json.loads(Path(second.trajectory_path).read_text().splitlines()[0])
    assert "Earlier questions and your answers" in start["data"]["task"] and "A: 42" in start["data"]["task"]
    assert start["data"]["settings"]["labels"] == {"session_id": chat.id, "turn": "2"}
    # another process: only the saved session
    again = RLM(model, sandbox=sandbox).session(resume=chat.id)
    assert [t["query"] for t in again.turns] == ["Sum the numbers", "Add one"] and again.context == "20 22"
    third = again.ask("Double it")
    assert third.final_response == "86"
    assert json.loads(again.path.read_text())["turns"][-1]["answer"] == "86"


def test_resuming_an_unknown_session_is_a_clear_error(rlm_isolated):
    with pytest.raises(InputError, match="no chat session 'chat_20260101_120000_abcd'"):
        RLM("scripted:x.json", sandbox="process").session(resume="chat_20260101_120000_abcd")
    with pytest.raises(InputError, match="not a chat session id: 'chat_nope'"):
        RLM("scripted:x.json", sandbox="process").session(resume="chat_nope")


def test_rlm_chat_keeps_variables_between_lines_and_resumes(rlm_cli, rlm_isolated, monkeypatch):
    import io

    model = script(rlm_isolated.work / "chat.json", [
        {"match": "New question: Add one", "text": "```repl\nanswer = total + 1\nprint(answer)\n```"},
        {"match": "Sum the numbers", "text": "```repl\ntotal = sum(int(x) for x in context.split())\nanswer = total\n"
                                             "print(answer)\n```"},
        {"match": ".", "text": "FINAL_VAR('answer')"},
    ])
    (rlm_isolated.work / "nums.txt").write_text("20 22")
    monkeypatch.setattr("sys.stdin", io.StringIO("Sum the numbers\n/vars\n/bogus\nAdd one\n"))
    first = rlm_cli("chat", "--context", "nums.txt", "--model", model, "--sandbox", "process", "--quiet")
    assert first.code == 0, first.err
    assert "rlm> 42" in first.out and "kept: answer (int), total (int)" in first.out and "rlm> 43" in first.out
    assert "/context  /model NAME" in first.out  # an unknown command shows the commands
    session_id = first.err.split("rlm chat --resume ")[-1].split()[0]
    monkeypatch.setattr("sys.stdin", io.StringIO("/context\nAdd one\n/exit\n"))
    again = rlm_cli("chat", "--resume", session_id, "--model", model, "--sandbox", "process", "--quiet")
    assert again.code == 0, again.err
    assert "nums.txt (5 bytes" in again.out and "rlm> 43" in again.out and "resumed, 2 turns" in again.err
    assert f"context={(rlm_isolated.work / 'nums.txt').resolve()}" in again.err  # the file it reads again
    listed = rlm_cli("chat", "--list")
    assert f"{session_id}  3 turns  Add one" in listed.out


@pytest.mark.slow
def test_ctrl_c_cancels_the_turn_not_the_session(rlm_isolated):
    import os
    import signal
    import subprocess
    import time

    from support import RLM_SCRIPT

    model = script(rlm_isolated.work / "slow.json", [
        {"match": "New question: Quick", "text": "FINAL('quick answer')"},  # turn 2's task also names turn 1
        {"match": "Wait forever", "text": "```repl\nprint('waiting')\n```", "delay": 30},
    ])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    chat = subprocess.Popen([RLM_SCRIPT, "chat", "--model", model, "--sandbox", "process", "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=rlm_isolated.work, env={**env, "HOME": str(rlm_isolated.home)})
    assert chat.stdin is not None
    chat.stdin.write("Wait forever\n")
    chat.stdin.flush()
    time.sleep(3)  # the turn is waiting on its model
    chat.send_signal(signal.SIGINT)
    time.sleep(1)
    chat.stdin.write("Quick\n/exit\n")
    chat.stdin.flush()
    out, err = chat.communicate(timeout=60)
    assert chat.returncode == 0, err
    assert "(turn cancelled)" in err and "rlm> quick answer" in out and "Traceback" not in err
    session = next(p for p in (rlm_isolated.work / ".rlm" / "sessions").glob("chat_*.json") if ".context" not in p.name)
    turns = json.loads(session.read_text())["turns"]
    assert [t["termination_reason"] for t in turns] == ["cancelled", "final"]


def test_rlm_chat_resume_uses_the_model_and_sandbox_it_ran_with_unless_flags_say(rlm_cli, rlm_isolated, monkeypatch):
    import io

    from rlm_host.testing.openai_server import OpenAIServer, answer

    look = "```repl\nprint(len(context))\n```"
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-chat")
        server.push(answer(look), answer("FINAL(one)"), answer(look), answer("FINAL(two)"))
        monkeypatch.setattr("sys.stdin", io.StringIO("First?\n"))
        first = rlm_cli("chat", "--model", "openai:gpt-chat", "--sandbox", "monty", "--quiet", plugins=None)
        assert first.code == 0, first.err
        assert "model=openai:gpt-chat sandbox=monty" in first.err and "rlm> one" in first.out
        session_id = first.err.split("rlm chat --resume ")[-1].split()[0]
        monkeypatch.setattr("sys.stdin", io.StringIO("Second?\n"))
        again = rlm_cli("chat", "--resume", session_id, "--quiet", plugins=None)  # no flags: what it ran with
        assert again.code == 0, again.err
        assert "model=openai:gpt-chat sandbox=monty" in again.err and "rlm> two" in again.out
        assert "warning" not in again.err
        monkeypatch.setattr("sys.stdin", io.StringIO("/model\n"))
        flagged = rlm_cli("chat", "--resume", session_id, "--model", "openai:gpt-other", "--quiet", plugins=None)
        assert "model=openai:gpt-other sandbox=monty" in flagged.err and "model: openai:gpt-other" in flagged.out
    assert [json.loads(r.body)["model"] if isinstance(r.body, str) else r.body["model"] for r in server.requests] == [
        "gpt-chat"] * 4
