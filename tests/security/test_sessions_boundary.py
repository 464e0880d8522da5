"""Chat session ids are names, not paths, and a session file cannot choose the caller's sandbox, models or limits.

Attacks first, through the real ``rlm`` script, the in-process CLI and the Python API: ids that climb out of
``<home>/sessions`` or are absolute, ids with a NUL or a slash, session and context files that are symbolic links
or FIFOs, and session files whose stored options ask for ``process``, a file-reading model or a looser limit. Then
legitimate use: a saved session resumes with what it ran with, and the caller's flags override it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from rlm_host import RLM, InputError

GOOD_ID = "chat_20260101_120000_ab12"
SECRET = "OUTSIDE-SECRET-7f3a"
LOOK = "```repl\nprint(len(context))\n```"


def victim(folder: Path, name: str = "victim") -> Path:
    """A JSON file outside the sessions folder shaped like a session, holding a secret it must never give away."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"id": name, "options": {"sandbox": "process"}, "context": {"file": "x"},
                                "turns": [{"query": SECRET, "answer": SECRET}],
                                "variables": {"s": SECRET}}))
    return path


def sessions(rlm_isolated) -> Path:
    folder = rlm_isolated.runs / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save_session(rlm_isolated, options: dict, session_id: str = GOOD_ID, context: str = "20 22") -> Path:
    """A session file as ``ChatSession.save`` writes it, with ``options`` as what it says it ran with."""
    folder = sessions(rlm_isolated)
    (folder / f"{session_id}.context.json").write_text(json.dumps({"value": context}))
    path = folder / f"{session_id}.json"
    path.write_text(json.dumps({"id": session_id, "options": options, "context": {"file": f"{session_id}.context.json"},
                                "turns": [{"query": "Sum the numbers", "answer": "42", "run_id": "r1",
                                           "termination_reason": "final"}], "variables": {"total": 42}}))
    return path


def final_script(rlm_script) -> str:
    return rlm_script(rules=[{"match": ".", "text": "FINAL(ok)"}])


def bad_ids(rlm_isolated) -> list[str]:
    outside = victim(rlm_isolated.work)  # work/victim.json: two levels above work/.rlm/sessions
    return ["../../victim", str(outside.with_suffix("")), f"{GOOD_ID}\x00", f"{GOOD_ID}/../../../victim",
            f"x/{GOOD_ID}", f"{GOOD_ID}\n", "", "latest/../../victim", "chat_2026_x", GOOD_ID.upper()]


# ------------------------------------------------------------------------------------------ ids are not paths


def test_api_refuses_ids_that_are_not_session_ids(rlm_isolated):
    outside = victim(rlm_isolated.work)
    before = outside.read_bytes()
    rlm = RLM("scripted:x.json", sandbox="monty")
    for bad in bad_ids(rlm_isolated):
        with pytest.raises(InputError, match="not a chat session id") as caught:
            rlm.session(resume=bad)
        assert SECRET not in str(caught.value) + caught.value.hint
    assert outside.read_bytes() == before  # read nothing, overwrote nothing
    assert not (rlm_isolated.runs / "sessions").exists()


@pytest.mark.parametrize("bad", ["../../victim", "ABSOLUTE", f"{GOOD_ID}\x00", f"{GOOD_ID}/x", "..\\..\\victim"])
def test_chat_resume_of_a_bad_id_exits_2_with_one_error_line(rlm_cli, rlm_isolated, monkeypatch, bad):
    outside = victim(rlm_isolated.work)
    before = outside.read_bytes()
    bad = str(outside.with_suffix("")) if bad == "ABSOLUTE" else bad
    monkeypatch.setattr("sys.stdin", io.StringIO("What is it?\n"))
    result = rlm_cli("chat", "--resume", bad, "--model", "scripted:x.json", "--sandbox", "monty", "--quiet")
    assert result.code == 2, result.err
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: not a chat session id: "), result.err
    assert SECRET not in result.out + result.err and "Traceback" not in result.err
    assert outside.read_bytes() == before


def test_the_installed_rlm_script_refuses_a_climbing_id(rlm_isolated):
    from support import RLM_SCRIPT

    outside = victim(rlm_isolated.work)
    before = outside.read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    for bad in ("../../victim", str(outside.with_suffix(""))):
        done = subprocess.run([RLM_SCRIPT, "chat", "--resume", bad, "--model", "scripted:x.json", "--quiet"],
                              input="What is it?\n", capture_output=True, text=True, timeout=60,
                              cwd=rlm_isolated.work, env={**env, "HOME": str(rlm_isolated.home)})
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: not a chat session id") and done.stderr.count("error:") == 1
        assert SECRET not in done.stdout + done.stderr
    assert outside.read_bytes() == before


def test_a_session_file_that_is_a_link_out_of_the_sessions_folder_is_refused(rlm_cli, rlm_isolated, monkeypatch):
    outside = victim(rlm_isolated.home)
    before = outside.read_bytes()
    link = sessions(rlm_isolated) / f"{GOOD_ID}.json"
    link.symlink_to(outside)
    with pytest.raises(InputError, match="leads outside"):
        RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)
    monkeypatch.setattr("sys.stdin", io.StringIO("What is it?\n"))
    result = rlm_cli("chat", "--resume", GOOD_ID, "--model", "scripted:x.json", "--sandbox", "monty", "--quiet")
    assert result.code == 2 and "error: chat session" in result.err and "leads outside" in result.err
    assert SECRET not in result.out + result.err
    assert outside.read_bytes() == before and link.is_symlink()


def test_a_session_file_linked_inside_the_folder_or_not_regular_is_refused(rlm_isolated):
    folder = sessions(rlm_isolated)
    real = save_session(rlm_isolated, {}, session_id="chat_20260101_120000_0000")
    (folder / f"{GOOD_ID}.json").symlink_to(real)  # stays inside, yet a link: not opened
    with pytest.raises(InputError, match="symbolic link"):
        RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)
    fifo = folder / "chat_20260101_120000_ffff.json"
    os.mkfifo(fifo)  # would hang a plain open()
    with pytest.raises(InputError, match="not a regular file"):
        RLM("scripted:x.json", sandbox="monty").session(resume="chat_20260101_120000_ffff")


def test_a_context_file_linked_out_of_the_folder_is_not_read(rlm_isolated):
    save_session(rlm_isolated, {})
    context = sessions(rlm_isolated) / f"{GOOD_ID}.context.json"
    context.unlink()
    outside = rlm_isolated.home / "secret.json"
    outside.write_text(json.dumps({"value": SECRET}))
    context.symlink_to(outside)
    with pytest.raises(InputError, match="symbolic link"):
        RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)


def test_a_context_file_name_in_the_record_cannot_climb(rlm_isolated):
    path = save_session(rlm_isolated, {})
    outside = rlm_isolated.work / "secret.json"
    outside.write_text(json.dumps({"value": SECRET}))
    data = json.loads(path.read_text())
    data["context"] = {"file": "../../secret.json"}
    path.write_text(json.dumps(data))
    chat = RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)
    assert chat.context == "20 22"  # its own context file, whatever the record names


def test_a_malformed_session_file_is_an_input_error_or_loads_what_is_sound(rlm_isolated):
    path = save_session(rlm_isolated, [])
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "turns": [3, {"query": 4}, {"query": "Fine?"}], "dropped": [1, "x (module)"],
                                "variables": ["not", "a", "dict"], "context": "nonsense"}))
    chat = RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)
    assert [t["query"] for t in chat.turns] == ["Fine?"] and chat.dropped == ["x (module)"] and chat.variables == {}
    assert chat.stored == {} and chat.context is None
    path.write_text("{not json")
    with pytest.raises(InputError, match="not a chat session file"):
        RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)


def test_a_sessions_folder_that_is_a_link_elsewhere_is_refused(rlm_isolated):
    elsewhere = rlm_isolated.home / "elsewhere"
    elsewhere.mkdir()
    victim(elsewhere, GOOD_ID)
    rlm_isolated.runs.mkdir()
    (rlm_isolated.runs / "sessions").symlink_to(elsewhere)
    with pytest.raises(InputError, match="leads outside"):
        RLM("scripted:x.json", sandbox="monty").session(resume=GOOD_ID)


# ------------------------------------------------------------------------- the caller's options win


def test_a_stored_process_sandbox_does_not_override_the_callers_monty(rlm_isolated, rlm_script):
    save_session(rlm_isolated, {"sandbox": "process", "max_steps": 5})
    chat = RLM(final_script(rlm_script), sandbox="monty").session(resume=GOOD_ID)
    result = chat.ask("And now?")
    assert result.final_response == "ok" and result.sandbox == "monty" and chat.ignored == []
    start = json.loads(Path(result.trajectory_path).read_text().splitlines()[0])
    assert start["data"]["settings"]["max_steps"] == 5  # a tighter stored limit fills in
    saved = json.loads((sessions(rlm_isolated) / f"{GOOD_ID}.json").read_text())
    assert saved["options"]["sandbox"] == "monty"  # what it actually ran with


def test_a_stored_process_sandbox_is_not_taken_when_the_caller_names_none(rlm_isolated, rlm_script, caplog):
    save_session(rlm_isolated, {"sandbox": "process"})
    chat = RLM(final_script(rlm_script)).session(resume=GOOD_ID)
    assert "sandbox" not in chat.stored and any("not a security boundary" in why for why in chat.ignored)
    assert any("not taken from the session file" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert chat.ask("And now?").sandbox == "monty"  # auto: the best boundary


def test_a_stored_process_sandbox_is_kept_when_the_caller_chose_it(rlm_isolated, rlm_script):
    save_session(rlm_isolated, {"sandbox": "process"})
    chat = RLM(final_script(rlm_script), sandbox="process").session(resume=GOOD_ID)
    assert chat.ignored == [] and chat.ask("And now?").sandbox == "process"


def test_session_and_call_options_also_win_over_the_file(rlm_isolated, rlm_script):
    save_session(rlm_isolated, {"sandbox": "monty"})
    chat = RLM(final_script(rlm_script)).session(resume=GOOD_ID, sandbox="process")
    assert chat.ask("And now?").sandbox == "process"
    assert chat.ask("Again?", sandbox="monty").sandbox == "monty"


def test_stored_models_that_read_files_and_loose_limits_are_not_taken(rlm_isolated):
    secret = rlm_isolated.home / "replies.json"
    secret.write_text(json.dumps({"responses": [SECRET]}))
    save_session(rlm_isolated, {"model": f"scripted:{secret}", "sub_model": "replay:/other/home/runs/r.jsonl",
                                "max_cost": 1000.0, "max_steps": 999, "timeout": 1.5, "base_url": "http://evil.test/v1",
                                "sinks": ["otel"], "workdir": "/", "sandbox": "docker-but-missing",
                                "environment": "dspy"})
    rlm = RLM(max_cost=0.5)
    chat = rlm.session(resume=GOOD_ID)
    ignored = " ".join(chat.ignored)
    for key in ("model=", "sub_model=", "max_steps=999", "base_url=", "sinks=", "workdir=", "environment="):
        assert key in ignored, (key, ignored)
    assert chat.stored == {"timeout": 1.5}  # tighter than the configured 600 s: taken
    assert "sandbox='docker-but-missing' (not installed)" in ignored
    assert chat.using("model") == "auto" and chat.using("max_cost") == 0.5 and chat.using("sandbox") == "auto"


def test_a_stored_llamacpp_weights_path_is_not_taken_but_an_alias_is(rlm_isolated):
    save_session(rlm_isolated, {"model": "llamacpp:/home/someone/model.gguf", "sub_model": "llamacpp:smollm2"})
    chat = RLM(sandbox="monty").session(resume=GOOD_ID)
    if chat.ignored and "names no installed provider" in chat.ignored[0]:
        pytest.skip("rlm-provider-llamacpp is not installed")
    assert chat.stored == {"sub_model": "llamacpp:smollm2"} and "model='llamacpp:/home" in chat.ignored[0]


def test_chat_resume_says_what_it_uses_and_what_it_ignored(rlm_cli, rlm_isolated, rlm_script, monkeypatch):
    model = final_script(rlm_script)
    save_session(rlm_isolated, {"sandbox": "process", "model": "scripted:/etc/passwd"})
    monkeypatch.setattr("sys.stdin", io.StringIO("And now?\n"))
    result = rlm_cli("chat", "--resume", GOOD_ID, "--model", model, "--quiet", plugins=None)
    assert result.code == 0, result.err
    assert f"model={model} sandbox=auto" in result.err and "resumed, 1 turns" in result.err
    assert "not taken from the session file: sandbox='process' (not a security boundary)" in result.err
    assert "rlm> ok" in result.out
    saved = json.loads((sessions(rlm_isolated) / f"{GOOD_ID}.json").read_text())
    assert saved["options"]["sandbox"] == "monty" and saved["options"]["model"] == model


def test_a_save_before_the_first_turn_signs_only_what_was_taken(rlm_isolated):
    """``rlm chat --resume ID`` then ``/save``: the planted options are not signed with the user's key."""
    save_session(rlm_isolated, {"sandbox": "process", "max_steps": 999, "timeout": 1.5})
    RLM().session(resume=GOOD_ID).save()
    again = RLM().session(resume=GOOD_ID)
    assert again.stored == {"timeout": 1.5} and again.ignored == []


# ------------------------------------------------------------------------------------- legitimate use


def test_a_saved_session_resumes_with_what_it_ran_with_and_flags_override(rlm_isolated, monkeypatch):
    from rlm_host.testing.openai_server import OpenAIServer, answer

    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-session")
        server.push(answer(LOOK), answer("FINAL(first)"), answer(LOOK), answer("FINAL(second)"))
        first = RLM("openai:gpt-first", sandbox="monty", max_steps=3).session("some text")
        assert first.ask("One?").final_response == "first"
        saved = json.loads(first.path.read_text())["options"]
        assert saved == {"model": "openai:gpt-first", "sandbox": "monty", "max_steps": 3}
        again = RLM().session(resume=first.id)  # another process: nothing but the id
        assert again.ignored == [] and again.using("model") == "openai:gpt-first"
        result = again.ask("Two?")
        body = server.requests[-1].body
    assert result.final_response == "second" and result.sandbox == "monty" and result.model == "openai:gpt-first"
    assert (body if isinstance(body, dict) else json.loads(body))["model"] == "gpt-first"
    assert "Earlier questions and your answers" in json.dumps(body)
    assert RLM("openai:gpt-other").session(resume=first.id).using("model") == "openai:gpt-other"


def test_chat_list_shows_sessions_and_skips_links(rlm_cli, rlm_isolated):
    save_session(rlm_isolated, {})
    (sessions(rlm_isolated) / "chat_20260101_120000_9999.json").symlink_to(victim(rlm_isolated.home))
    listed = rlm_cli("chat", "--list")
    assert listed.code == 0 and f"{GOOD_ID}  1 turns  Sum the numbers" in listed.out
    assert SECRET not in listed.out and "9999" not in listed.out


# ------------------------------------------------------------------------------ a context path must be the user's


def test_a_planted_session_cannot_point_its_context_at_a_host_file(rlm_isolated, rlm_script):
    secret = rlm_isolated.home / "credentials"
    secret.write_text(SECRET)
    path = save_session(rlm_isolated, {})
    record = json.loads(path.read_text())
    record["context"] = {"path": str(secret), "signature": "0" * 64}  # a cloned project's .rlm/sessions
    path.write_text(json.dumps(record))
    chat = RLM(final_script(rlm_script), sandbox="monty").session(resume=GOOD_ID)
    assert chat.context is None and "not signed by this user's rlm" in " ".join(chat.ignored)


def test_without_a_user_key_nothing_unsigned_counts_as_signed(rlm_isolated, rlm_script, monkeypatch):
    """A key that cannot be read or made verifies nothing: a missing signature is not a match for a missing key."""
    from rlm_host.config import user_key

    def no_key(env=None):
        raise OSError("no key here")

    monkeypatch.setattr(user_key, "user_key", no_key)
    secret = rlm_isolated.home / "credentials"
    secret.write_text(SECRET)
    path = save_session(rlm_isolated, {"sandbox": "process"})
    record = json.loads(path.read_text())
    record["context"] = {"path": str(secret)}  # no signature at all
    path.write_text(json.dumps(record))
    chat = RLM(final_script(rlm_script), sandbox="monty").session(resume=GOOD_ID)
    assert chat.context is None and "sandbox" not in chat.stored
    assert "not signed by this user's rlm" in " ".join(chat.ignored)


def test_a_session_saved_over_a_file_resumes_over_the_same_file(rlm_isolated, rlm_script):
    document = rlm_isolated.work / "notes.txt"
    document.write_text("20 22")
    rlm = RLM(final_script(rlm_script), sandbox="monty")
    first = rlm.session(document)
    first.ask("Sum the numbers")
    again = rlm.session(resume=first.id)
    assert again.context == document.resolve() and not again.ignored


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_a_key_file_planted_as_a_fifo_or_a_link_is_no_key(tmp_path, plant):
    """Another local user (or a tool) puts a FIFO or a symbolic link where the user's key lives: reading the key
    neither hangs on the FIFO nor follows the link to a file it would then sign with; it is an OSError (no key:
    nothing verifies)."""
    import threading

    from rlm_host.config.user_key import KEY_FILE, user_key

    folder = tmp_path / "config" / "rlm"
    folder.mkdir(parents=True)
    if plant == "fifo":
        os.mkfifo(folder / KEY_FILE)
    else:
        (tmp_path / "chosen").write_bytes(b"k" * 32)  # a key the planter knows
        (folder / KEY_FILE).symlink_to(tmp_path / "chosen")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: outcome.append(_attempt(user_key, env)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading the key hung"
    assert isinstance(outcome[0], OSError), outcome


def _attempt(function, *args):
    try:
        return function(*args)
    except BaseException as exc:  # noqa: BLE001 - the test looks at what was raised
        return exc
