"""Arize Phoenix as a real backend: ``rlm run --sink otel`` sends a run tree to a ``phoenix serve`` of this test
session (``phoenix_server.py``; Phoenix lives in ``.venv-phoenix``, made by ``bash scripts/install-phoenix.sh``),
and what a person opening Phoenix sees is read back through its REST and GraphQL APIs: the span kinds Phoenix
gives (AGENT / LLM / TOOL), the nesting, the run's question and answer on the agent span, each model call's
messages, reply and token counts on its LLM span, each code step's code and output on its TOOL span, and a failed
model call as an ERROR span."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from phoenix_server import START_TIMEOUT, phoenix, rest_spans, trace_view, wait_for_trace  # noqa: F401  (fixture)
from rlm_host import RunEvent
from rlm_host.sdk.observability import trace_id_for

pytestmark = pytest.mark.slow

PLUGIN = "rlm-sink-otel"
CONTEXT = "Recursive language models keep the context in a sandbox and explore it with code."
TASK = "What is this text about?"
CLASSIFY = "Classify this text in one word: "
CHILD_TASK = "Summarise the context in five words"
ROOT = [  # the root run's turns, with the child run's (rlm_query) in between
    f"```repl\nwords = context.split()\nkind = llm_query({CLASSIFY!r} + context)\n"
    f"summary = rlm_query({CHILD_TASK!r}, context)\nprint(len(words), kind, summary)\n```",
    "```repl\nprint(context[:24])\n```",  # the child run
    "FINAL('sandboxed recursive language models')",  # the child run
    "FINAL_VAR('summary')",
]
SUB_RULES = [{"match": "Classify", "text": "technical"}]


def _events(path: str) -> list[RunEvent]:
    return [RunEvent.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _run(rlm_cli, rlm_script, monkeypatch, server, project: str, root: list, sub_rules: list, *args: str,
         grpc: bool = False):
    """``rlm run --sink otel`` into ``server``'s ``project`` (over OTLP/HTTP, or OTLP/gRPC): (exit code, RunResult
    JSON, events, model names)."""
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")
    if grpc:
        monkeypatch.setenv("RLM_SINK__OTEL__EXPORTER", "otlp-grpc")
        monkeypatch.setenv("RLM_SINK__OTEL__ENDPOINT", f"127.0.0.1:{server.grpc_port}")  # loopback: no TLS
    else:
        monkeypatch.setenv("RLM_SINK__OTEL__ENDPOINT", server.traces_url)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("RLM_SINK__OTEL__METRICS", "false")  # Phoenix takes no OTLP metrics (405 on /v1/metrics)
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    model, sub_model = rlm_script(root), rlm_script([], rules=sub_rules)
    Path("context.txt").write_text(CONTEXT)
    result = rlm_cli("run", TASK, "--context", "context.txt", "--model", model, "--sub-model", sub_model,
                     "--sandbox", "process", "--sink", "otel", "--json", "-q", *args, plugins=PLUGIN)
    assert result.out, result.err
    run = json.loads(result.out)
    assert "otel sink" not in result.err, result.err  # delivered: no export warning
    # Phoenix shows a model by the name the spans give it, without the ``provider:`` prefix
    names = {"root": model.split(":", 1)[1], "sub": sub_model.split(":", 1)[1]}
    return result.code, run, _events(run["trajectory_path"]), names


def _messages(attributes: dict, direction: str) -> list[tuple[str, str]]:
    """The (role, content) pairs Phoenix lists as a span's input or output messages (``llm.<direction>_messages``)."""
    found = []
    index = 0
    while f"llm.{direction}_messages.{index}.message.role" in attributes:
        prefix = f"llm.{direction}_messages.{index}.message."
        found.append((attributes[prefix + "role"], attributes.get(prefix + "content", "")))
        index += 1
    return found


def _genai(value: str) -> list[tuple[str, str]]:
    """(role, text) pairs of a GenAI message JSON string (``gen_ai.input.messages`` / ``output.messages``)."""
    return [(m["role"], "".join(p.get("content", "") for p in m["parts"] if p.get("type") == "text"))
            for m in json.loads(value)]


def _by_run(spans: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for span in spans:
        out.setdefault(span["attributes"]["rlm.run_id"], []).append(span)
    return out


def _code(reply: str) -> str:
    """The code of a reply holding one ```repl block."""
    return reply.removeprefix("```repl\n").removesuffix("```")


def _start(span: dict) -> str:
    return span["start_time"]


def test_phoenix_comes_up(phoenix):
    """The server of this session answered /healthz (its start time and memory go to the report: -s shows them)."""
    assert phoenix.started_in < START_TIMEOUT
    assert 0 < phoenix.rss_mb < 2000
    print(f"\nphoenix serve answered /healthz after {phoenix.started_in:.1f} s at {phoenix.rss_mb:.0f} MB RSS")


def test_a_run_tree_in_phoenix(rlm_cli, rlm_script, monkeypatch, phoenix):
    """A root run with a code step, an llm_query and a child run (rlm_query): every span is in Phoenix, nested
    and classified as the UI shows them, with the run's question and answer, the model calls' messages, replies
    and tokens, and the code steps' code and output."""
    project = "rlm-tree"
    code, run, events, models = _run(rlm_cli, rlm_script, monkeypatch, phoenix, project, ROOT, SUB_RULES,
                                     "--max-depth", "1")
    assert code == 0 and run["completed"] and run["final_response"] == "sandboxed recursive language models"
    trace_id = trace_id_for(run["run_id"])
    starts = [e for e in events if e.type == "run_start"]
    child_id = next(e.run_id for e in starts if e.parent_run_id == run["run_id"])
    calls = [e for e in events if e.type == "model_call_end"]
    codes = [e for e in events if e.type == "code_start"]
    # one AGENT span per run, one LLM span per model call, one TOOL span per code step: nothing more
    spans = wait_for_trace(phoenix, project, trace_id, len(starts) + len(calls) + len(codes))
    assert len(spans) == len(starts) + len(calls) + len(codes) == 9
    assert {s["context"]["trace_id"] for s in spans} == {trace_id}
    by_id = {s["context"]["span_id"]: s for s in spans}
    kinds = Counter(s["span_kind"] for s in spans)
    assert kinds == {"AGENT": 2, "LLM": 5, "TOOL": 2}
    for span in spans:
        prefix = {"AGENT": "invoke_agent ", "LLM": "chat ", "TOOL": "execute_tool "}[span["span_kind"]]
        assert span["name"].startswith(prefix), (span["name"], span["span_kind"])
        assert span["status_code"] in ("OK", "UNSET") and not span["status_message"]
        assert span["parent_id"] is None or span["parent_id"] in by_id
    view = trace_view(phoenix, project, trace_id)
    assert view["numSpans"] == 9 and view["errorCount"] == 0
    assert view["spanCountsByKind"] == {"agent": 2, "llm": 5, "tool": 2}
    assert view["session"]["sessionId"] == run["run_id"]  # the trace is listed under the root run's session
    ui = view["spans"]

    # the agent spans: the question and the answer, nested root → execute_tool → child
    runs = _by_run(spans)
    agents = {run_id: next(s for s in mine if s["span_kind"] == "AGENT") for run_id, mine in runs.items()}
    root, child = agents[run["run_id"]], agents[child_id]
    assert view["rootSpan"]["spanId"] == root["context"]["span_id"] and root["parent_id"] is None
    assert root["name"] == "invoke_agent pure_rlm" and root["status_code"] == "OK"
    assert by_id[child["parent_id"]]["span_kind"] == "TOOL"
    assert by_id[by_id[child["parent_id"]]["parent_id"]] is root
    for agent, task, answer in ((root, TASK, run["final_response"]),
                                (child, CHILD_TASK, "sandboxed recursive language models")):
        shown = ui[agent["context"]["span_id"]]
        assert shown["spanKind"] == "agent"
        assert shown["input"] == {"value": task, "mimeType": "text"}
        assert shown["output"] == {"value": answer, "mimeType": "text"}
        assert agent["attributes"]["input.value"] == task and agent["attributes"]["input.mime_type"] == "text/plain"
        assert agent["attributes"]["output.value"] == answer
        assert agent["attributes"]["output.mime_type"] == "text/plain"
        assert agent["attributes"]["llm.model_name"] == models["root"]  # the root model, no "scripted:" prefix

    # the LLM spans: the root turns under their run's agent, the llm_query under the step's TOOL span
    llms = [s for s in spans if s["span_kind"] == "LLM"]
    turns = sorted((s for s in llms if s["attributes"]["rlm.role"] == "root"), key=_start)
    subs = [s for s in llms if s["attributes"]["rlm.role"] == "sub"]
    assert len(turns) == 4 and len(subs) == 1
    for span in turns:
        assert by_id[span["parent_id"]] is agents[span["attributes"]["rlm.run_id"]]
    sub = subs[0]
    step = by_id[sub["parent_id"]]
    assert step["span_kind"] == "TOOL" and step["parent_id"] == root["context"]["span_id"]
    # each model call's messages, reply and tokens as the UI shows them
    replies = set(ROOT)
    for span in llms:
        attributes, shown = span["attributes"], ui[span["context"]["span_id"]]
        role = attributes["rlm.role"]
        assert attributes["llm.model_name"] == attributes["gen_ai.request.model"] == models[role]
        assert span["name"] == f"chat {models[role]}"
        messages = _messages(attributes, "input")
        assert messages == _genai(attributes["gen_ai.input.messages"])  # Phoenix's list = what we sent
        assert shown["input"]["mimeType"] == "json" and _genai(shown["input"]["value"]) == messages
        output = _messages(attributes, "output")
        assert len(output) == 1 and output[0][0] == "assistant"
        assert output == _genai(attributes["gen_ai.output.messages"])
        assert shown["output"] == {"value": output[0][1], "mimeType": "text"}
        if role == "root":
            assert messages[0][0] == "system" and messages[1][0] == "user" and output[0][1] in replies
        else:
            assert messages == [("user", CLASSIFY + CONTEXT)] and output == [("assistant", "technical")]
        prompt, completion = attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]
        assert prompt > 0 and completion > 0
        assert (attributes["llm.token_count.prompt"], attributes["llm.token_count.completion"]) == (prompt, completion)
        assert (shown["tokenCountPrompt"], shown["tokenCountCompletion"]) == (prompt, completion)
        assert shown["tokenCountTotal"] == prompt + completion
    # every model call of the trajectory is one LLM span with its token counts
    tokens = Counter((s["attributes"]["gen_ai.usage.input_tokens"], s["attributes"]["gen_ai.usage.output_tokens"])
                     for s in llms)
    assert tokens == Counter((e.data["input_tokens"], e.data["output_tokens"]) for e in calls)
    # a root turn after a code step shows the step's output as the last message before the reply
    first, second = (s for s in turns if s["attributes"]["rlm.run_id"] == run["run_id"])
    assert _messages(first["attributes"], "output") == [("assistant", ROOT[0])]
    later = _messages(second["attributes"], "input")
    assert later[-2] == ("assistant", ROOT[0]) and later[-1][0] == "user"
    assert f"{len(CONTEXT.split())} technical sandboxed recursive language models" in later[-1][1]
    assert _messages(second["attributes"], "output") == [("assistant", ROOT[3])]
    # the whole trace's tokens, on the root span (Phoenix adds them up) = the run's usage
    usage = run["usage"]
    total = sum(u["input_tokens"] + u["output_tokens"] for u in usage.values() if isinstance(u, dict))
    assert ui[root["context"]["span_id"]]["cumulativeTokenCountTotal"] == total == sum(
        ui[s["context"]["span_id"]]["tokenCountTotal"] for s in llms)

    # the TOOL spans: each code step's code and output
    tools = {s["attributes"]["rlm.run_id"]: s for s in spans if s["span_kind"] == "TOOL"}
    expected = {run["run_id"]: (ROOT[0], f"{len(CONTEXT.split())} technical sandboxed recursive language models\n"),
                child_id: (ROOT[1], CONTEXT[:24] + "\n")}
    for run_id, (reply, output) in expected.items():
        span = tools[run_id]
        code = _code(reply)
        attributes, shown = span["attributes"], ui[span["context"]["span_id"]]
        assert span["name"] == "execute_tool repl" and span["parent_id"] == agents[run_id]["context"]["span_id"]
        assert shown["spanKind"] == "tool"
        assert shown["input"] == {"value": code, "mimeType": "text"}
        assert shown["output"] == {"value": output, "mimeType": "text"}
        assert json.loads(attributes["gen_ai.tool.call.arguments"]) == {"code": code}
        assert attributes["gen_ai.tool.call.result"] == output
        assert attributes["tool.name"] == "repl" and attributes["tool.parameters.code"] == code  # Phoenix's view
    assert [e.data["code"] for e in codes] == [_code(ROOT[0]), _code(ROOT[1])]  # what the trajectory recorded


def test_a_failed_sub_call_is_an_error_span_in_a_finished_run(rlm_cli, rlm_script, monkeypatch, phoenix):
    """An llm_query whose model fails: its LLM span is ERROR (the error's class and message), the code step
    that caught it shows what it printed, and the run itself finishes OK."""
    project = "rlm-failed-sub"
    root = ["```repl\ntry:\n    kind = llm_query('Classify: ' + context)\nexcept Exception as exc:\n"
            "    kind = 'unknown'\n    print('the sub-model failed:', exc)\n```", "FINAL_VAR('kind')"]
    code, run, events, models = _run(rlm_cli, rlm_script, monkeypatch, phoenix, project, root,
                                     [{"match": "Classify", "error": "rate limited, try later"}])
    assert code == 0 and run["final_response"] == "unknown", run
    trace_id = trace_id_for(run["run_id"])
    spans = wait_for_trace(phoenix, project, trace_id, 5)  # agent, 2 turns, 1 step, 1 failed sub-call
    assert len(spans) == 5
    by_id = {s["context"]["span_id"]: s for s in spans}
    failed = [s for s in spans if s["status_code"] == "ERROR"]
    assert len(failed) == 1
    span = failed[0]
    assert span["span_kind"] == "LLM" and span["name"] == f"chat {models['sub']}"
    assert span["status_message"] == "ModelError: rate limited, try later"
    assert span["attributes"]["error.type"] == "ModelError"
    assert by_id[span["parent_id"]]["span_kind"] == "TOOL"
    assert _messages(span["attributes"], "input") == [("user", "Classify: " + CONTEXT)]  # what was asked
    assert _messages(span["attributes"], "output") == []  # no reply
    view = trace_view(phoenix, project, trace_id)
    assert view["errorCount"] == 1
    shown = view["spans"][span["context"]["span_id"]]
    assert shown["statusCode"] == "ERROR" and shown["statusMessage"] == "ModelError: rate limited, try later"
    assert shown["output"] is None
    tool = view["spans"][span["parent_id"]]
    assert tool["statusCode"] != "ERROR"  # the code caught it
    assert "the sub-model failed: " in tool["output"]["value"] and "rate limited, try later" in tool["output"]["value"]
    agent = next(s for s in spans if s["span_kind"] == "AGENT")
    assert agent["status_code"] == "OK" and agent["attributes"]["output.value"] == "unknown"


def test_a_failed_root_call_fails_the_run_in_phoenix(rlm_cli, rlm_script, monkeypatch, phoenix):
    """The root model fails on the second turn: the run ends in error, and Phoenix shows the failed LLM span and
    the agent span in ERROR, with the message, and the turn before as it was."""
    project = "rlm-failed-root"
    root = ["```repl\nprint(len(context))\n```", {"error": "the provider is down"}]
    code, run, events, models = _run(rlm_cli, rlm_script, monkeypatch, phoenix, project, root, [])
    assert code != 0 and not run["completed"] and run["error"] == "the provider is down", run
    trace_id = trace_id_for(run["run_id"])
    spans = wait_for_trace(phoenix, project, trace_id, 4)  # agent, a turn, a step, the failed turn
    assert len(spans) == 4
    kinds = {s["span_kind"]: s for s in spans if s["span_kind"] != "LLM"}
    agent, tool = kinds["AGENT"], kinds["TOOL"]
    turns = sorted((s for s in spans if s["span_kind"] == "LLM"), key=_start)
    assert [s["status_code"] for s in turns] == ["OK", "ERROR"]
    failed = turns[1]
    assert failed["name"] == f"chat {models['root']}" and failed["parent_id"] == agent["context"]["span_id"]
    assert failed["status_message"] == "ModelError: the provider is down"
    assert failed["attributes"]["error.type"] == "ModelError"
    assert _messages(failed["attributes"], "input")[-1][0] == "user"  # the prompt that failed is there
    assert f"{len(CONTEXT)}" in _messages(failed["attributes"], "input")[-1][1]
    assert agent["status_code"] == "ERROR" and "the provider is down" in agent["status_message"]
    assert agent["attributes"]["input.value"] == TASK and "output.value" not in agent["attributes"]
    assert "exception" in [e["name"] for e in agent["events"]]
    assert tool["attributes"]["output.value"] == f"{len(CONTEXT)}\n"
    view = trace_view(phoenix, project, trace_id)
    assert view["errorCount"] == 2  # the failed call and the run
    assert view["spans"][failed["context"]["span_id"]]["statusCode"] == "ERROR"
    assert view["spans"][agent["context"]["span_id"]]["statusCode"] == "ERROR"


def test_the_same_tree_over_otlp_grpc(rlm_cli, rlm_script, monkeypatch, phoenix):
    """Phoenix's OTLP/gRPC port takes the ``otlp-grpc`` exporter's spans: the same tree, kinds and contents."""
    project = "rlm-grpc"
    code, run, events, models = _run(rlm_cli, rlm_script, monkeypatch, phoenix, project, ROOT, SUB_RULES,
                                     "--max-depth", "1", grpc=True)
    assert code == 0 and run["final_response"] == "sandboxed recursive language models"
    trace_id = trace_id_for(run["run_id"])
    spans = wait_for_trace(phoenix, project, trace_id, 9)
    assert Counter(s["span_kind"] for s in spans) == {"AGENT": 2, "LLM": 5, "TOOL": 2}
    root = next(s for s in spans if s["parent_id"] is None)
    assert root["attributes"]["input.value"] == TASK and root["attributes"]["output.value"] == run["final_response"]
    sub = next(s for s in spans if s["span_kind"] == "LLM" and s["attributes"]["rlm.role"] == "sub")
    assert _messages(sub["attributes"], "output") == [("assistant", "technical")]


def test_spans_of_other_projects_stay_apart(phoenix):
    """The project comes from ``openinference.project.name``: each test's runs landed in its own project only
    (runs after the tests above; nothing reached Phoenix's default project)."""
    assert rest_spans(phoenix, "default") == []
