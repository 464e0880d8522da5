"""``--framework adk-rlm-agent``, end to end with the real ADK library and a scripted model: seed 003's
conversational root agent (its tools ``rlm_execute_code``, ``rlm_load_context``, ``rlm_query_context``), the
``context_loader`` sub-agent, the ``rlm_workflow`` transfer, the callback bundles (approvals refusing a tool, a
program's own bundle, logging) and the context and sub-LM metadata in the trajectory."""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from rlm_host import ConfigError  # noqa: E402
from rlm_host.sdk.embedding import load_settings  # noqa: E402
from rlm_host.testing import FrameworkContract, call, final, isolated_runner, run_scripted, trajectory  # noqa: E402

PLUGIN = "rlm-adapter-adk"
FRAMEWORK = "adk-rlm-agent"
LOG = "Station log\nday 116: sensor A ok\nday 117: sensor B FAILED, last reading 42.7\nday 118: sensor A ok\n"
SUB_RULES = [{"match": "^Extract the sensor", "text": "sensor B, 42.7"}]
LOOK = ("hit = [l for l in log.splitlines() if 'FAILED' in l][0]\nprint(llm_query('Extract the sensor: ' + hit))\n"
        "print(llm_query_batched(['Extract the sensor: a', 'Extract the sensor: b']))")


class TestAdkRlmAgent(FrameworkContract):
    framework = FRAMEWORK
    distribution = PLUGIN
    heavy_modules = ("google.adk", "google.adk.runners", "google.genai", "rlm_adapter_adk.agent",
                     "rlm_adapter_adk.framework", "rlm_adapter_adk.model", "rlm_adapter_adk.rlm_loop")
    finishing_replies = (call("rlm_execute_code", code="x = llm_query('What is the code word? ' + context)\n"
                                                       "print(context.splitlines()[2], x)"),
                         final("PAPAYA"))
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = call("rlm_execute_code", code="print(len(context))")


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the folder rlm_load_context reads from
    (tmp_path / "station_log.txt").write_text(LOG)
    return isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")


def steps_of(events) -> list[dict]:
    return [event.data for event in events if event.type == "step"]


def run(runner, replies, task="Which sensor failed on day 117?", **options):
    return run_scripted(runner, task, replies, sub_rules=SUB_RULES, framework=FRAMEWORK, **options)


def test_each_tool_end_to_end_with_the_metadata_in_the_trajectory(runner):
    """Load a file into ``log`` (its ContextMetadata), run code over it with llm_query and llm_query_batched (a
    SubLMCallMetadata per call, batched ones marked), ask an RLM sub-query about it (a child run), answer."""
    replies = [call("rlm_load_context", path="station_log.txt", variable="log"),
               call("rlm_execute_code", code=LOOK),
               call("rlm_query_context", query="Name the failed sensor.", variable="log"),
               final("sensor B"),  # the child run's only turn: it answers at once
               final("Sensor B failed on day 117; it read 42.7.")]
    result, events, root = run(runner, replies)
    assert result.completed and result.final_response == "Sensor B failed on day 117; it read 42.7.", result.error
    steps = steps_of(events)
    root_steps = [s for s in steps if s["observation"].get("answer") != "sensor B"]  # the child's final is its own
    assert [s["action"] for s in root_steps] == ["tool_call", "tool_result"] * 3 + ["final"]
    loaded, ran, queried = root_steps[1], root_steps[3], root_steps[5]
    assert loaded["observation"]["output"] == ("Loaded station_log.txt into the REPL: `log` is a string of 98 "
                                               "characters, from station_log.txt.")
    context = loaded["observation"]["metadata"]["context"]
    assert context == {"variable": "log", "context_type": "str", "total_size_chars": 98, "chunk_count": 1,
                       "chunk_sizes": [98], "data_sources": ["station_log.txt"], "schema_hint": None}
    assert ran["observation"]["output"] == "sensor B, 42.7\n['sensor B, 42.7', 'sensor B, 42.7']"
    meta = ran["observation"]["metadata"]
    assert meta["tool"] == "rlm_execute_code" and meta["agent"] == "rlm_agent" and meta["status"] == "success"
    assert meta["variables_created"] == ["hit"]
    calls = meta["sub_lm_calls"]
    assert [(c["call_index"], c["kind"], c["is_batched"], c["batch_size"]) for c in calls] == [
        (1, "llm_query", False, 1), (2, "llm_query_batched", True, 2), (3, "llm_query_batched", True, 2)]
    assert calls[0]["prompt_length"] == len("Extract the sensor: day 117: sensor B FAILED, last reading 42.7")
    assert calls[0]["response_length"] == len("sensor B, 42.7") and calls[0]["model"] == "scripted:sub"
    assert calls[0]["input_tokens"] > 0 and calls[0]["latency_ms"] >= 0
    assert queried["observation"]["output"] == "sensor B"
    (query_call,) = queried["observation"]["metadata"]["sub_lm_calls"]
    assert query_call["kind"] == "rlm_query" and query_call["prompt_length"] == len("Name the failed sensor.")
    children = [e.data for e in events if e.type == "sub_call" and e.data["kind"] == "rlm_query"]
    assert children[0]["child_run_id"] and children[0]["response"] == "sensor B"  # on the run's sub-call path
    # the run's totals, in the result and the trajectory file
    metadata = result.framework_metadata
    assert metadata["callbacks"] == ["approvals", "metadata"] and metadata["contexts"] == [context]
    assert [c["call_index"] for c in metadata["sub_lm_calls"]] == [1, 2, 3, 4]
    metrics = metadata["session_metrics"]
    assert (metrics["tool_calls"], metrics["code_executions"], metrics["contexts_loaded"], metrics["context_queries"],
            metrics["sub_lm_calls"], metrics["model_calls"]) == (3, 1, 1, 1, 4, 4)
    assert metrics["final_answer_found"] and metrics["tool_errors"] == metrics["tools_refused"] == 0
    written = trajectory(result)
    assert written[-1]["data"]["framework_metadata"]["contexts"] == [context]
    written_steps = [e["data"] for e in written if e["type"] == "step"]
    assert written_steps[1]["observation"]["metadata"]["context"] == context
    # the model is never shown the metadata; its instructions describe what was loaded
    shown = "Result of rlm_execute_code:\nsensor B, 42.7\n['sensor B, 42.7', 'sensor B, 42.7']"
    assert root.calls[2][-1]["content"] == shown
    assert "Loaded too: `log` is a string of 98 characters, from station_log.txt" in root.calls[1][0]["content"]
    assert "metadata" not in json.dumps(root.calls[-1])


def test_the_context_loader_agent_loads_files_for_the_root(runner, tmp_path):
    """The root calls ``context_loader`` (a single-turn ADK sub-agent, run inline in the session): it lists the
    folder, loads the file as ``context``, answers; the root then works on the new ``context``."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "readings.json").write_text(json.dumps({"A": 12.5, "B": 42.7, "C": 7.0}))
    replies = [call("context_loader", request="Load the sensor readings as context."),
               call("rlm_list_files", folder="data"),
               call("rlm_load_context", path="data/readings.json"),
               "Loaded data/readings.json as `context`: a dict of three sensors' readings.",
               call("rlm_execute_code", code="FINAL(max(context, key=context.get))")]
    result, events, root = run(runner, replies, task="Which sensor reads highest?", context=None)
    assert result.completed and result.final_response == "B", result.error
    steps = steps_of(events)
    assert [(s["action"], s["observation"].get("tool"), s["observation"].get("agent")) for s in steps] == [
        ("tool_call", "context_loader", None),
        ("tool_call", "rlm_list_files", "context_loader"), ("tool_result", "rlm_list_files", "context_loader"),
        ("tool_call", "rlm_load_context", "context_loader"), ("tool_result", "rlm_load_context", "context_loader"),
        ("model_text", None, "context_loader"),
        ("tool_result", "context_loader", None),
        ("tool_call", "rlm_execute_code", None), ("tool_result", "rlm_execute_code", None),
        ("final", None, None)]
    assert steps[2]["observation"]["output"] == "data/readings.json"
    context = steps[4]["observation"]["metadata"]["context"]
    assert (context["variable"], context["context_type"], context["chunk_count"]) == ("context", "dict", 3)
    assert context["schema_hint"] == {"A": "float", "B": "float", "C": "float"}
    assert steps[4]["observation"]["metadata"]["agent"] == "context_loader"
    assert steps[-1]["observation"] == {"answer": "B", "via": "FINAL() in rlm_execute_code"}
    # the loader's own prompt: its instruction and the root's request; the root's next one describes the data
    loader_system, loader_request = root.calls[1][0]["content"], root.calls[1][1]["content"]
    assert loader_system.startswith("You load data into the Python REPL") and "## rlm_list_files(" in loader_system
    assert loader_request.startswith("Load the sensor readings as context.")
    assert "The variable `context` is None" in root.calls[0][0]["content"]
    assert "The variable `context` holds a dict of 27 characters as JSON, 3 keys: A, B, C" in root.calls[4][0][
        "content"]
    assert root.calls[4][-1]["content"].startswith("Result of context_loader:\nLoaded data/readings.json")


def test_model_named_paths_are_confined_to_the_folder(runner, tmp_path):
    """Paths come from the model: a parent, an absolute path, a link out, a folder, a FIFO, a binary file, a file
    over the limit and a taken variable name are refused with a message the model reads; the run goes on."""
    (tmp_path / "rlm.toml").write_text("[framework.adk-rlm-agent]\nmax_load_bytes = 200\n")
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("SECRET OUTSIDE")
    os.symlink(outside, tmp_path / "link.txt")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    (tmp_path / "big.txt").write_text("x" * 201)
    tries = [("../" + outside.name, "'..' is not allowed"), (str(outside), "is outside the project folder"),
             ("link.txt", "leads outside the project folder"), ("folder", "is a folder"),
             ("pipe.txt", "not a regular file"), ("blob.bin", "is a binary file"),
             ("big.txt", "201 bytes; the limit is 200"), ("", "no path given")]
    replies = [call("rlm_load_context", path=path) for path, _ in tries]
    replies += [call("rlm_load_context", path="station_log.txt", variable="llm_query"), final("none loaded")]
    result, events, root = run(runner, replies, max_steps=20)
    assert result.completed and result.final_response == "none loaded", result.error
    errors = [s["observation"] for s in steps_of(events) if s["action"] == "tool_error"]
    assert len(errors) == len(tries) + 1
    for (path, why), error in zip(tries, errors):
        assert why in error["output"] and error["metadata"]["status"] == "error", (path, error)
    assert "a name the REPL already uses" in errors[-1]["output"]
    assert "SECRET" not in json.dumps(root.calls) and "SECRET" not in Path(result.trajectory_path).read_text()


def test_context_root_is_the_folder_and_is_guarded(tmp_path, monkeypatch):
    """``context_root`` is where files load from; a home or system folder is refused (to the model: the run goes on)
    unless ``--allow-any-workdir``. (A project file sets a folder outside the project only once trusted.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("the code word is PAPAYA")
    (tmp_path / "rlm.toml").write_text('[framework.adk-rlm-agent]\ncontext_root = "data"\n')
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    result, events, _ = run(runner, [call("rlm_load_context", path="notes.txt"), final("loaded")])
    assert steps_of(events)[1]["observation"]["ok"], steps_of(events)[1]
    (tmp_path / "rlm.toml").write_text('[framework.adk-rlm-agent]\ncontext_root = "/etc"\n')
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process", environ={"RLM_TRUST_CONFIG": "1"})
    assert runner.loaded.component("framework", FRAMEWORK).context_root == Path("/etc")
    result, events, _ = run(runner, [call("rlm_load_context", path="passwd"), final("refused")])
    refused = steps_of(events)[1]["observation"]
    assert not refused["ok"] and "refusing to let the model load context files from /etc" in refused["output"]
    assert result.final_response == "refused"


def test_a_context_query_at_the_depth_limit_is_a_plain_sub_call(runner):
    """At ``max_depth`` ``rlm_query`` asks the sub-model the query with the data (the host's fallback): one
    sub-LM call, measured under that name."""
    replies = [call("rlm_load_context", path="station_log.txt", variable="log"),
               call("rlm_query_context", query="Extract the sensor that failed.", variable="log"), final("B")]
    result, events, _ = run(runner, replies, max_depth=0)
    assert result.final_response == "B", result.error
    queried = steps_of(events)[3]["observation"]
    assert queried["output"] == "sensor B, 42.7"
    (measured,) = queried["metadata"]["sub_lm_calls"]
    assert measured["kind"] == "rlm_query at max_depth (a plain llm_query)" and measured["model"] == "scripted:sub"
    assert measured["prompt_length"] > len(LOG)  # the query and the data
    assert not [e for e in events if e.type == "child_run_start"]


def test_approvals_refuse_a_tool_through_the_callbacks(runner, tmp_path):
    """The ``approvals`` bundle's before-tool callback asks the run's approvals: a rule denying rlm_execute_code and a
    person refusing rlm_query_context (an ``ask`` rule) block the tools — their result is the refusal, the code never
    runs — and the run goes on."""
    asked = []
    replies = [call("rlm_execute_code", code="open('marker', 'w').write('ran')"),
               call("rlm_query_context", query="Name the failed sensor."),
               call("rlm_load_context", path="station_log.txt", variable="log"),
               final("refused twice")]
    result, events, root = run(runner, replies, approval_rules={"rlm_execute_code": "deny", "rlm_query_context": "ask"},
                               approver=lambda request: asked.append(request) or False)
    assert result.completed and result.final_response == "refused twice", result.error
    assert not (tmp_path / "marker").exists()
    steps = steps_of(events)
    assert [s["action"] for s in steps] == ["tool_call", "tool_error", "tool_call", "tool_error", "tool_call",
                                            "tool_result", "final"]
    denied, refused = steps[1]["observation"], steps[3]["observation"]
    assert denied["refused"] and denied["output"].startswith("refused: rlm_execute_code is not allowed (a rule")
    assert refused["refused"] and refused["output"] == ("refused by the user: rlm_query_context "
                                                        "(rlm_query_context: Name the failed sensor.)")
    assert denied["metadata"]["status"] == refused["metadata"]["status"] == "refused"
    (request,) = asked
    assert (request.tool, request.kind, request.details["agent"]) == ("rlm_query_context", "read", "rlm_agent")
    assert request.run_id == result.run_id
    assert not [e for e in events if e.type in ("sub_call", "child_run_start")]  # neither tool ran
    assert result.framework_metadata["session_metrics"]["tools_refused"] == 2
    assert root.calls[1][-1]["content"].startswith("rlm_execute_code failed:\nrefused: rlm_execute_code is not")


def test_a_programs_callback_bundle_and_the_logging_bundle(runner, tmp_path, monkeypatch, caplog):
    """A bundle a program registers runs in the chain where the settings name it: its before-tool callback refuses a
    load (the tool does not run), its before-model and after-agent callbacks fire. ``logging`` logs each call;
    without ``metadata`` no metadata is recorded."""
    from rlm_adapter_adk import bundles

    fired: list[tuple[str, str]] = []

    def audit(framework):
        def before_tool(tool, args, tool_context):
            fired.append(("before_tool", tool.name))
            if tool.name == "rlm_load_context" and "log" in str(args.get("path")):
                return {"ok": False, "output": "refused: logs are off limits in this audit"}
            return None

        def after_tool(tool, args, tool_context, tool_response):
            fired.append(("after_tool", tool.name))

        def before_model(callback_context, llm_request):
            fired.append(("before_model", callback_context.agent_name))

        def after_agent(callback_context):
            fired.append(("after_agent", callback_context.agent_name))

        return bundles.CallbackBundle("audit", before_tool=[before_tool], after_tool=[after_tool],
                                      before_model=[before_model], after_agent=[after_agent])

    monkeypatch.setitem(bundles._FACTORIES, "audit", audit)
    (tmp_path / "rlm.toml").write_text('[framework.adk-rlm-agent]\ncallbacks = ["approvals", "audit", "logging"]\n')
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    caplog.set_level(logging.INFO, logger="rlm.adk")
    replies = [call("rlm_load_context", path="station_log.txt"), call("rlm_execute_code", code="print(2 + 2)"),
               final("4")]
    result, events, _ = run(runner, replies)
    assert result.completed and result.final_response == "4", result.error
    steps = steps_of(events)
    assert steps[1]["observation"] == {"tool": "rlm_load_context", "ok": False,
                                       "output": "refused: logs are off limits in this audit"}
    assert steps[3]["observation"] == {"tool": "rlm_execute_code", "ok": True, "output": "4"}  # no metadata
    assert fired == [("before_model", "rlm_agent"), ("before_tool", "rlm_load_context"),
                     ("after_tool", "rlm_load_context"), ("before_model", "rlm_agent"),
                     ("before_tool", "rlm_execute_code"), ("after_tool", "rlm_execute_code"),
                     ("before_model", "rlm_agent"), ("after_agent", "rlm_agent")]
    assert "session_metrics" not in result.framework_metadata
    assert result.framework_metadata["callbacks"] == ["approvals", "audit", "logging"]
    logged = [r.getMessage() for r in caplog.records if r.name == "rlm.adk"]
    assert sum("adk model call" in m for m in logged) == 3 and sum("adk tool result" in m for m in logged) == 2
    assert sum("adk tool call" in m for m in logged) == 1  # audit's refusal ended the load's before-tool chain


def test_callback_settings_are_checked(rlm_isolated, rlm_plugin_host, runner, tmp_path):
    host = rlm_plugin_host(PLUGIN)
    environ = {"HOME": str(rlm_isolated.home)}
    (rlm_isolated.work / "rlm.toml").write_text('[framework.adk-rlm-agent]\ncallbacks = ["metadata"]\n')
    with pytest.raises(ConfigError, match="'approvals' bundle cannot be left out"):
        load_settings(environ=environ, cwd=rlm_isolated.work, host=host, trust=True)
    (rlm_isolated.work / "rlm.toml").write_text('[framework.adk-rlm-agent]\ncallbacks = ["approvals", "logging"]\n'
                                                "context_loader = false\nworkflow = false\n")
    loaded = load_settings(environ=environ, cwd=rlm_isolated.work, host=host, trust=True)
    settings = loaded.component("framework", FRAMEWORK)
    assert settings.callbacks == ["approvals", "logging"] and not settings.context_loader
    (tmp_path / "rlm.toml").write_text('[framework.adk-rlm-agent]\ncallbacks = ["approvals", "nosuch"]\n')
    with pytest.raises(ConfigError, match="no callback bundle named nosuch"):
        run(isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process"), [final("x")])

    def rlm_execute_code(code: str) -> str:
        """A tool with a name of the framework's own."""
        return code

    with pytest.raises(ConfigError, match="rlm_execute_code"):
        run(runner, [final("x")], tools=[rlm_execute_code])


def test_the_root_hands_the_task_to_the_rlm_workflow(runner):
    """``transfer_to_agent(rlm_workflow)``: the adk-rlm loop (code generator, REPL executor, completion checker) runs
    in the same session and sandbox; its FINAL is the run's answer, its metrics in ``workflow_metrics``."""
    replies = [call("rlm_load_context", path="station_log.txt"),
               call("transfer_to_agent", agent_name="rlm_workflow"),
               "```repl\nhit = [l for l in context.splitlines() if 'FAILED' in l][0]\nprint(hit)\n```",
               "FINAL_VAR(hit)"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, events, root = run(runner, replies)
    assert result.completed and result.final_response == "day 117: sensor B FAILED, last reading 42.7", result.error
    steps = steps_of(events)
    assert [s["action"] for s in steps] == ["tool_call", "tool_result", "tool_call", "tool_result", "run_code",
                                            "final"]
    assert steps[2]["observation"]["args"] == {"agent_name": "rlm_workflow"}
    assert steps[4]["observation"]["output"] == "day 117: sensor B FAILED, last reading 42.7"
    assert steps[5]["observation"]["via"] == "FINAL_VAR"
    assert "rlm_workflow" in root.calls[0][0]["content"] and "## transfer_to_agent(" in root.calls[0][0]["content"]
    generator = root.calls[2][0]["content"]  # the loop's system prompt describes the context loaded before
    assert generator.startswith("You are tasked with answering a query") and "a string of 98 characters" in generator
    workflow = result.framework_metadata["workflow_metrics"]
    assert workflow["total_iterations"] == 2 and workflow["termination_reason"] == "FINAL"
    assert not [w for w in caught if "google" in str(w.filename) or "adk" in str(w.message).lower()], \
        [str(w.message) for w in caught]


def test_a_cli_run_and_no_adk_warning(rlm_cli, rlm_script, rlm_isolated, caplog):
    (rlm_isolated.work / "station_log.txt").write_text(LOG)
    model = rlm_script([call("rlm_load_context", path="station_log.txt"),
                        call("rlm_execute_code", code="print([l for l in context.splitlines() if 'FAILED' in l])"),
                        final("Sensor B, 42.7")])
    result = rlm_cli("run", "Which sensor failed on day 117?", "--framework", FRAMEWORK, "--model", model,
                     "--sandbox", "process", "--json", plugins=PLUGIN)
    assert result.code == 0, result.err
    outcome = json.loads(result.out)
    assert outcome["framework"] == FRAMEWORK and outcome["final_response"] == "Sensor B, 42.7"
    assert outcome["framework_metadata"]["contexts"][0]["data_sources"] == ["station_log.txt"]
    assert not [r for r in caplog.records if r.name.startswith("google_adk") and r.levelno >= 30], caplog.text
    assert "Warning" not in result.err, result.err


def test_the_metadata_schemas():
    from rlm_adapter_adk.metadata import ContextMetadata, SubLMCallMetadata, ToolMetadata

    text = ContextMetadata.of("x" * 250, variable="log", sources=["a.txt"], chunk_chars=100)
    assert (text.chunk_count, text.chunk_sizes) == (3, [100, 100, 50])
    assert text.format_for_prompt() == "`log` is a string of 250 characters (3 chunks), from a.txt"
    rows = ContextMetadata.of([{"day": 1, "ok": True}, "two"], variable="context", sources=[], chunk_chars=100)
    assert rows.context_type == "list" and rows.chunk_count == 2 and rows.schema_hint == {"day": "int", "ok": "bool"}
    assert rows.format_for_prompt() == "`context` is a list of 2 items, 22 characters; keys: day (int), ok (bool)"
    call_meta = SubLMCallMetadata(call_index=1, kind="llm_query", prompt_length=3)
    tool = ToolMetadata(tool="rlm_execute_code", agent="rlm_agent", sub_lm_calls=[call_meta], context=text)
    assert ToolMetadata.model_validate(tool.to_dict()) == tool


def test_a_folder_swapped_for_a_link_after_the_check_reaches_nothing_outside(tmp_path):
    """Code in the sandbox may swap a checked folder for a link out before the file is opened: the open walks the
    folders from the project folder's descriptor, never through a link, so the file outside is never opened."""
    from rlm_adapter_adk.agent import read_confined
    from rlm_host.sdk.environments import PathRefused, ProjectFiles

    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "data.txt").write_text("inside")
    outside.mkdir()
    (outside / "data.txt").write_text("SECRET OUTSIDE")

    class Racing(ProjectFiles):
        def resolve(self, raw):
            checked = super().resolve(raw)
            (project / "sub").rename(project / "old")
            os.symlink(outside, project / "sub")
            return checked

    assert read_confined(ProjectFiles(project), "sub/data.txt", 100) == ("sub/data.txt", b"inside")
    with pytest.raises(PathRefused) as refused:
        read_confined(Racing(project), "sub/data.txt", 100)
    assert "SECRET" not in str(refused.value)
