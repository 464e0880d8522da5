"""``rlm runs fork RUN --at STEP``: a new run that takes RUN's first STEP steps as recorded (no model is called for
them, their code runs again so the REPL state is rebuilt) and goes on with other settings; it records where it
came from, ``rlm runs compare`` lines the two up, a step that does not replay as recorded stops it, and a record's
settings are screened like an untrusted file's."""

from __future__ import annotations

import json
from pathlib import Path

ORIGINAL = ["```repl\nx = 6\nprint('x is', x)\n```", "```repl\ny = x * 7\nprint('y is', y)\n```", "FINAL_VAR(y)"]


def events_of(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def run_json(rlm_cli, *args: str) -> dict:
    done = rlm_cli(*args, "--json")
    assert done.code == 0, done.out + done.err
    return json.loads(done.out)


def test_a_fork_keeps_the_first_steps_and_goes_on_with_another_model(rlm_cli, rlm_script):
    original = run_json(rlm_cli, "run", "Compute", "--model", rlm_script(ORIGINAL), "--sandbox", "process")
    assert original["final_response"] == "42"
    other = rlm_script(["```repl\nz = y + 1\nprint('z is', z)\n```", "FINAL_VAR(z)"])  # two replies: none for 1-2
    fork = run_json(rlm_cli, "runs", "fork", original["run_id"], "--at", "2", "--model", other, "--sandbox", "process")
    assert fork["final_response"] == "43", "step 3 used the y rebuilt by replaying steps 1 and 2"
    assert fork["steps"] == 4 and fork["model"] == other
    events = events_of(fork["trajectory_path"])
    start = next(e for e in events if e["type"] == "run_start")
    assert start["data"]["task"] == "Compute"
    assert start["data"]["settings"]["labels"] == {"fork_of": original["run_id"], "fork_at": "2"}
    steps = [e["data"] for e in events if e["type"] == "step" and e["depth"] == 0]
    assert [s["reply"] for s in steps[:2]] == ORIGINAL[:2] and "y is 42" in json.dumps(steps[1]["observation"])
    compared = rlm_cli("runs", "compare", original["run_id"], fork["run_id"])
    assert compared.code == 0 and "fork of the other at step 2" in compared.out
    assert "diverge at step 3" in compared.out


def test_sub_calls_of_the_replayed_steps_are_replayed_too(rlm_cli, rlm_script):
    code = "```repl\nanswer = llm_query('What is the capital of Kasria?')\nprint(answer)\n```"
    original = run_json(rlm_cli, "run", "Ask", "--model", rlm_script([code, "FINAL_VAR(answer)"],
                        rules=[{"match": "capital of Kasria", "text": "Kasrin"}]), "--sandbox", "process")
    silent = rlm_script(["FINAL_VAR(answer)"])  # no rule: a sub-call to it would fail the run
    fork = run_json(rlm_cli, "runs", "fork", original["run_id"], "--at", "1", "--model", silent, "--sandbox",
                    "process")
    assert fork["final_response"] == "Kasrin"


def test_a_step_that_does_not_replay_as_recorded_stops_the_fork(rlm_cli, rlm_script, rlm_isolated):
    notes = rlm_isolated.work / "notes.txt"
    notes.write_text("hello world\n")
    original = run_json(rlm_cli, "run", "Count", "--context", str(notes), "--model",
                        rlm_script(["```repl\nprint(len(context))\n```", "FINAL(done)"]), "--sandbox", "process")
    notes.write_text("hello there, world\n")  # the context read again is another one
    done = rlm_cli("runs", "fork", original["run_id"], "--at", "1", "--model", rlm_script(["FINAL(other)"]),
                   "--sandbox", "process")
    assert done.code == 1, done.out + done.err
    assert "diverged at step 1 of 1 replayed: its output differs (recorded '12\\n', now '19\\n')" in done.err
    assert "other" not in done.out, "the new model was never asked"


def test_bad_forks_are_exit_2(rlm_cli, rlm_script, rlm_isolated):
    original = run_json(rlm_cli, "run", "Compute", "--model", rlm_script(ORIGINAL), "--sandbox", "process")
    done = rlm_cli("runs", "fork", original["run_id"], "--at", "4")
    assert done.code == 2 and "has 3 step(s): --at takes 1 to 3, not 4" in done.err
    done = rlm_cli("runs", "fork", "run_nope", "--at", "1")
    assert done.code == 2 and "no saved run matches 'run_nope'" in done.err
    outside = rlm_isolated.home / "secret.txt"  # a context outside this folder is not read again from a record
    outside.write_text("private\n")
    inside = rlm_isolated.work / "notes.txt"
    inside.write_text("notes\n")
    with_context = run_json(rlm_cli, "run", "Count", "--context", str(inside), "--model",
                            rlm_script(["```repl\nprint(len(context))\n```", "FINAL(done)"]), "--sandbox", "process")
    trajectory = Path(with_context["trajectory_path"])
    text = trajectory.read_text().replace(str(inside.resolve()), str(outside.resolve()))
    trajectory.write_text(text)
    done = rlm_cli("runs", "fork", with_context["run_id"], "--at", "1")
    assert done.code == 2 and "cannot be read again here" in done.err and "--context FILE" in done.err


def test_a_records_settings_are_screened_like_an_untrusted_files(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-elsewhere")
    original = run_json(rlm_cli, "run", "Compute", "--model", rlm_script(ORIGINAL), "--sandbox", "process",
                        "--max-steps", "5")
    trajectory = Path(original["trajectory_path"])
    lines = [json.loads(line) for line in trajectory.read_text().splitlines()]
    lines[0]["data"]["settings"]["base_url"] = "http://127.0.0.1:9/v1"  # planted: where a key would go
    trajectory.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    fork = rlm_cli("runs", "fork", original["run_id"], "--at", "2", "--model", rlm_script(["FINAL_VAR(y)"]), "--json",
                   plugins="rlm-sandbox-monty")  # the recorded process runtime is not taken: a boundary is
    assert fork.code == 0, fork.out + fork.err
    assert "not taken again" in fork.err and "base_url (sends your API key to another server)" in fork.err
    assert "sandbox (runs model code without a security boundary)" in fork.err
    settings = next(e for e in events_of(json.loads(fork.out)["trajectory_path"]) if e["type"] == "run_start")
    assert settings["data"]["settings"]["base_url"] is None and settings["data"]["settings"]["max_steps"] == 5


def test_a_child_run_of_a_replayed_step_is_replayed_too(rlm_cli, rlm_script):
    code = "```repl\nhalf = rlm_query('What is half of 84? Answer with FINAL.')\nprint('child', half)\n```"
    original = run_json(rlm_cli, "run", "Halve eighty-four.", "--model", rlm_script(
        [code, "FINAL_VAR(half)"], rules=[{"match": "half of 84", "text": "FINAL(42)"}]), "--sandbox", "process")
    assert original["final_response"] == "42"
    fork = run_json(rlm_cli, "runs", "fork", original["run_id"], "--at", "1", "--model",
                    rlm_script(["FINAL_VAR(half)"]), "--sandbox", "process")  # no rule: the child is not asked again
    assert fork["final_response"] == "42"
    events = events_of(fork["trajectory_path"])
    assert any(e["type"] == "run_start" and e["depth"] == 1 for e in events), "the child run ran again, replayed"
