"""``from rlm_host import RLM``: completion, acompletion, stream and astream over the real engine (scripted model,
process sandbox), settings layered as for the CLI, one object serving many threads and tasks, a shared budget."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rlm_host import RLM, RlmError, RunEvent
from rlm_host.models.scripted import ScriptedConnector

CODE = "```repl\nprint(len(context))\nnote = llm_query('Summarise: ' + context[:40])\nprint(note)\n```"


def script(path: Path, replies: list, rules: list | None = None) -> str:
    path.write_text(json.dumps({"responses": replies, "rules": rules or [{"match": "Summarise", "text": "a note"}]}))
    return f"scripted:{path}"


@pytest.fixture
def here(rlm_isolated) -> Path:
    return rlm_isolated.work


def test_completion_runs_the_loop_and_records_the_run(here):
    rlm = RLM(script(here / "s.json", [CODE, "FINAL(42)"]), sandbox="process")
    result = rlm.completion("the quick brown fox", "How long is the context?")
    assert result.completed and result.final_response == "42" and result.steps == 2
    assert result.usage.sub.calls == 1 and Path(result.trajectory_path).parent == here / ".rlm" / "runs"
    events = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
    assert events[0]["data"]["context"]["total_chars"] == len("the quick brown fox")


def test_settings_come_from_rlm_toml_and_arguments_override_them(here):
    (here / "rlm.toml").write_text('[run]\nsandbox = "process"\nmax_steps = 1\n')
    model = script(here / "s.json", [CODE, "FINAL(42)"])
    assert RLM(model).completion("ctx", "q").termination_reason == "max_steps"  # max_steps = 1 from the file
    assert RLM(model, max_steps=3).completion("ctx", "q").final_response == "42"
    assert RLM(model).completion("ctx", "q", max_steps=3).final_response == "42"  # per call, too


def test_a_path_is_loaded_as_a_file_or_folder_and_a_str_is_text(here):
    (here / "docs").mkdir()
    (here / "docs" / "a.txt").write_text("alpha")
    (here / "docs" / "b.txt").write_text("beta")
    rlm = RLM(script(here / "s.json", ["```repl\nprint(list_files())\n```", "FINAL(2)"]), sandbox="process")
    result = rlm.completion(here / "docs", "How many files?")
    start = json.loads(Path(result.trajectory_path).read_text().splitlines()[0])
    assert start["data"]["context"]["documents"] == 2
    text = RLM(script(here / "t.json", ["```repl\nprint(context)\n```", "FINAL(1)"]), sandbox="process")
    start = json.loads(Path(text.completion("docs", "q").trajectory_path).read_text().splitlines()[0])
    assert start["data"]["context"]["total_chars"] == 4  # "docs" is text, not a folder name


def test_bad_input_raises_one_clear_error(here):
    with pytest.raises(RlmError, match="unknown sandbox 'nope'"):
        RLM(script(here / "s.json", ["FINAL(1)"]), sandbox="nope").completion("ctx", "q")
    with pytest.raises(TypeError, match="max_stepz"):
        RLM(max_stepz=3)


def test_stream_yields_events_as_they_happen_and_keeps_the_result(here):
    slow = [{"text": CODE, "delay": 0.3}, {"text": "FINAL(42)", "delay": 0.3}]
    stream = RLM(script(here / "s.json", slow), sandbox="process").stream("the context", "q")
    seen: list[tuple[str, float]] = []
    for event in stream:
        assert isinstance(event, RunEvent)
        seen.append((event.type, time.monotonic()))
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "run_start" and kinds[-1] == "final" and kinds.count("step") == 2 and "sub_call" in kinds
    first_step = next(t for kind, t in seen if kind == "step")
    assert seen[-1][1] - first_step > 0.2, "events arrive while the run goes, not all at the end"
    assert stream.result is not None and stream.result.final_response == "42"


def test_leaving_a_stream_early_cancels_the_run(here):
    slow = [{"text": CODE, "delay": 0.2}] * 10 + ["FINAL(1)"]
    stream = RLM(script(here / "s.json", slow), sandbox="process", max_steps=20).stream("ctx", "q")
    for event in stream:
        if event.type == "step":
            break
    assert stream.result is not None and stream.result.termination_reason == "cancelled"
    final = json.loads(Path(stream.result.trajectory_path).read_text().splitlines()[-1])
    assert final["type"] == "final" and final["data"]["termination_reason"] == "cancelled"


def test_acompletion_and_astream_in_one_event_loop(here):
    rlm = RLM(script(here / "s.json", [CODE, "FINAL(7)"]), sandbox="process")  # each run reads the script anew

    async def main():
        results = await asyncio.gather(*(rlm.acompletion(f"context {i}", f"q{i}") for i in range(4)))
        events = [event.type async for event in rlm.astream("ctx", "q")]
        return results, events

    results, events = asyncio.run(main())
    assert [r.final_response for r in results] == ["7"] * 4
    assert len({r.run_id for r in results}) == 4 and len({r.trajectory_path for r in results}) == 4
    assert events[0] == "run_start" and events[-1] == "final"


def test_leaving_an_astream_early_stops_the_run_before_the_loop_closes(here):
    """Breaking out of ``async for`` left the run's thread handing events to a closed loop
    (``RuntimeError: Event loop is closed`` on stderr); the run now ends, cancelled, before ``asyncio.run`` returns."""
    import subprocess
    import sys

    slow = [{"text": CODE, "delay": 0.2}] * 10 + ["FINAL(1)"]
    model = script(here / "s.json", slow)
    program = f"""
import asyncio, json, pathlib, time
from rlm_host import RLM

async def main():
    async for event in RLM({model!r}, sandbox="process", max_steps=20).astream("ctx", "q"):
        if event.type == "step":
            break

asyncio.run(main())
last = [json.loads(p.read_text().splitlines()[-1]) for p in pathlib.Path(".rlm/runs").glob("*.jsonl")]
print(last[0]["type"], last[0]["data"].get("termination_reason"))
time.sleep(1.0)  # the run's thread would still be pushing events here
"""
    done = subprocess.run([sys.executable, "-c", program], cwd=here, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["final", "cancelled"], done.stdout + done.stderr
    assert "Event loop is closed" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_cancelling_an_acompletion_task_cancels_the_run(here):
    slow = [{"text": CODE, "delay": 0.3}] * 20
    rlm = RLM(script(here / "s.json", slow), sandbox="process", max_steps=20)

    async def main():
        task = asyncio.create_task(rlm.acompletion("ctx", "q"))
        await asyncio.sleep(0.8)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    deadline = time.monotonic() + 10
    finals: list = []
    while time.monotonic() < deadline and not finals:
        for path in (here / ".rlm" / "runs").glob("*.jsonl"):
            last = json.loads(path.read_text().splitlines()[-1])
            if last["type"] == "final":
                finals.append(last)
        time.sleep(0.1)
    assert finals and finals[0]["data"]["termination_reason"] == "cancelled"


def test_one_object_serves_many_threads_with_independent_runs(here):
    rlm = RLM(script(here / "s.json", ["```repl\nn = len(context)\nprint(n)\n```", "FINAL_VAR('n')"]),
              sandbox="process")
    contexts = ["x" * (i + 1) for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda c: rlm.completion(c, "How long?"), contexts))
    assert [r.final_response for r in results] == [str(len(c)) for c in contexts]  # each run saw its own context
    assert len({r.trajectory_path for r in results}) == 12


def test_a_shared_budget_covers_all_runs_of_one_object(here):
    # one connector for every run: its rules answer turn 1 with code, and the turn that saw the note with FINAL
    root = ScriptedConnector.from_responses([], rules=[{"match": "a note", "text": "FINAL(1)"},
                                                       {"match": ".", "text": CODE}])
    sub = ScriptedConnector.from_responses([], rules=[{"match": ".", "text": "a note"}])
    shared = RLM(sandbox="process", shared_budget=True, max_llm_calls=2, connectors={"root": root, "sub": sub})
    outcomes = [shared.completion("ctx", "q").termination_reason for _ in range(3)]
    assert outcomes[:2] == ["final", "final"] and outcomes[2] == "max_llm_calls"
    assert shared.spent is not None and shared.spent.llm_calls == 2
    alone = RLM(sandbox="process", max_llm_calls=2, connectors={"root": root, "sub": sub})
    assert [alone.completion("ctx", "q").termination_reason for _ in range(3)] == ["final"] * 3


def test_importing_rlm_host_stays_cheap():
    import subprocess
    import sys

    code = ("import sys; import rlm_host; from rlm_host import RLM; "
            "print('pydantic' in sys.modules, 'rlm_host.engine.runner' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    # the face and the RLM class load nothing heavy: no pydantic, no engine, no plugin until RLM() is built
    assert out == ["False", "False"], out


def test_every_run_setting_is_an_rlm_option_as_it_is_a_cli_flag(tmp_path, monkeypatch):
    """The options are declared once (``RunSettings``): what ``rlm run`` takes, ``RLM(...)`` takes."""
    from rlm_host import RLM
    from rlm_host.config.schema import RunSettings
    from rlm_host.models.scripted import ScriptedConnector

    monkeypatch.chdir(tmp_path)
    (tmp_path / "guide.txt").write_text("Answer in French.")
    model = ScriptedConnector.from_responses(["```repl\nprint(1)\n```", "FINAL(oui)"], name="scripted:x")
    rlm = RLM(home=tmp_path / ".rlm", connectors={"root": model}, instructions="@guide.txt", allow_any_workdir=False,
              sandbox="process", labels={"team": "a"})
    result = rlm.completion("ctx", "q")
    assert result.final_response == "oui"
    settings = json.loads(Path(result.trajectory_path).read_text().splitlines()[0])["data"]["settings"]
    assert settings["instructions"] == "Answer in French." and settings["labels"] == {"team": "a"}
    with pytest.raises(TypeError, match="unknown option"):
        RLM(home=tmp_path / ".rlm", nonsense=1)
    from rlm_host.api.client import run_options

    assert set(run_options()) == set(RunSettings.model_fields)
