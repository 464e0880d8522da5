"""A browser session (``rlm tui --web``) driven by Textual's Pilot: the launching user's settings are ceilings.
What the user allowed runs; a weaker sandbox, another server, another model, a higher limit, a file outside the
working folder are refused with one message naming each option, and nothing starts."""

from __future__ import annotations

import json
import threading

from tui_support import drive, wait_for

from rlm_tui.app import RlmTui
from rlm_tui.bench import Bench
from rlm_tui.browser_session import BrowserCeilings
from rlm_tui.workspace import Workspace


def user_settings(work, **chosen):
    """The settings ``rlm tui --web`` was launched with (as flags of the launching user)."""
    from rlm_host.sdk.embedding import load_settings
    from rlm_host.sdk.commands import apply_run_flags

    return apply_run_flags(load_settings(), chosen)


def script(path, replies) -> str:
    path.write_text(json.dumps({"responses": replies}))
    return f"scripted:{path}"


def browser_app(isolated, settings) -> RlmTui:
    workspace = Workspace(home=isolated.runs, settings=settings, ceilings=BrowserCeilings(project=isolated.work))
    return RlmTui(workspace, Bench(cwd=isolated.work))


def test_a_browser_session_is_refused_what_the_user_did_not_allow(rlm_isolated):
    model = script(rlm_isolated.work / "s.json", ["FINAL(1)"])
    app = browser_app(rlm_isolated, user_settings(rlm_isolated.work, model=model, sandbox="monty", max_steps=5,
                                                  approve="ask"))
    outside = rlm_isolated.home / "secret.txt"
    outside.write_text("not for the browser")
    threads = threading.active_count()

    async def body(pilot):
        for line, says in [
            ('/rlm run "x" sandbox=process base_url=http://127.0.0.1:9/v1',
             ["sandbox=process (runs model code without a security boundary)", "base_url=http://127.0.0.1:9/v1"]),
            ('/rlm run "x" model=openai:gpt-4o', ["model=openai:gpt-4o (not a model your settings name)"]),
            ('/rlm run "x" model=scripted:/etc/passwd', ["model=scripted:/etc/passwd"]),
            ('/rlm run "x" sub=openai:gpt-4o', ["sub=openai:gpt-4o"]),
            ('/rlm run "x" steps=50', ["steps=50 (above your limit of 5)"]),
            ('/rlm run "x" approve=auto', ["approve=auto"]),
            ('/rlm run "x" allow_any_workdir=true', ["allow_any_workdir=True"]),
            ('/rlm run "x" workdir=/tmp', ["workdir=/tmp (points outside the project"]),
            (f'/rlm run "x" context={outside}', [f"may not read context={outside}"]),
            ('/rlm chat "x" sandbox=process', ["sandbox=process"]),
            ("/sandbox process", ["sandbox=process"]),
            ("/connect openai gpt-4o", ["model=openai:gpt-4o"]),
            ("/rlm bench preset=pure_rlm_smoke sandbox=process", ["sandbox=process"]),
        ]:
            app.execute(line)
            await pilot.pause()
            assert "a browser session may not" in app.last_message, (line, app.last_message)
            assert all(part in app.last_message for part in says), (line, app.last_message)
        assert app.workspace.overrides == {} and app.workspace.chat is None

    drive(app, body)
    assert not (rlm_isolated.runs / "runs").exists()  # nothing started
    assert threading.active_count() <= threads


def test_a_browser_session_runs_what_the_user_allowed(rlm_isolated):
    model = script(rlm_isolated.work / "s.json", ["```repl\nprint(6 * 7)\n```", "FINAL(42)"])
    other = script(rlm_isolated.work / "t.json", ["FINAL(43)"])
    settings = user_settings(rlm_isolated.work, model=model, sandbox="monty", max_steps=5,
                             allowed_sub_models=[other])
    (rlm_isolated.work / "notes.txt").write_text("inside the working folder")
    app = browser_app(rlm_isolated, settings)

    async def body(pilot):
        app.execute(f"/connect {other}")  # a model the user's settings name
        assert "next runs use model" in app.last_message, app.last_message
        app.execute(f"/connect {model}")
        app.execute('/rlm run "What is six times seven?" steps=3 sandbox=monty context=notes.txt')  # lower, the same
        await wait_for(pilot, lambda: app.last_message.endswith(": final · 42"), what="the run's answer")

    drive(app, body)


def test_a_terminal_session_keeps_its_choices(rlm_isolated, monkeypatch):
    """Without ``--web`` the person at the terminal is the user: the same choices are theirs to make (checked as a
    run would check them: /connect openai needs its key)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    model = script(rlm_isolated.work / "s.json", ["FINAL(1)"])
    workspace = Workspace(home=rlm_isolated.runs, settings=user_settings(rlm_isolated.work, model=model, max_steps=5))
    app = RlmTui(workspace, Bench(cwd=rlm_isolated.work))

    async def body(pilot):
        app.execute("/sandbox process")
        assert app.last_message == "next runs use sandbox process", app.last_message
        app.execute("/connect openai gpt-4o")
        assert app.last_message == "next runs use model openai:gpt-4o", app.last_message

    drive(app, body)
