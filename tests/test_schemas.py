"""The public JSON of a run (docs/schemas.md): the run JSON and the trajectory events carry a ``schema_version``
and name usage, providers and operations as the OpenTelemetry GenAI conventions do; a trajectory written by the
schema 1 host (tests/data/trajectory_schema1.jsonl: a run with an llm_query and an rlm_query child run, in the
process sandbox) still lists, shows and replays, also through the ``replay:`` provider."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import REPO
from rlm_host.event_types import LIVE_EVENT_TYPES
from rlm_host.events import operation_of
from rlm_host.models.openai_provider import OpenAIConnector
from rlm_host.models.protocol import ModelOptions, provider_of
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.results import SCHEMA_VERSION

OLD_TRAJECTORY = REPO / "tests" / "data" / "trajectory_schema1.jsonl"
OLD_RUN_ID = "run_20261124_205844_745410_158d"
RUNS = "rlm-runs"  # the distribution of rlm runs, rlm replay and the replay provider
#: The context and scripts the old trajectory was recorded with.
CONTEXT = "lorem ipsum " * 20 + "The magic number is 4217." + " dolor sit amet" * 20
ROOT = [
    "```repl\nidx = context.find('magic number')\nsnippet = context[idx:idx+40]\n"
    "child = rlm_query('Repeat this: ' + snippet)\nanswer = llm_query('Extract the number: ' + snippet)\n"
    "print(child, answer)\n```",
    "FINAL(child says 4217)",  # the child run's only step
    "FINAL_VAR(answer)",
]
SUB = {"responses": [], "rules": [{"match": "^Extract", "text": "4217"}]}
TOKENS = {"input_tokens", "output_tokens"}


def token_names(usage: dict) -> set[str]:
    """The token count names of a usage object (its other fields — calls, cost… — aside)."""
    return {key for key in usage if key.endswith("_tokens")}


@pytest.fixture
def work(rlm_isolated) -> Path:
    (rlm_isolated.work / "ctx.txt").write_text(CONTEXT)
    (rlm_isolated.work / "root.json").write_text(json.dumps({"responses": ROOT}))
    (rlm_isolated.work / "sub.json").write_text(json.dumps(SUB))
    return rlm_isolated.work


def run_json(rlm_cli, model: str, sub_model: str) -> dict:
    """``rlm run`` with rlm-runs loaded (its ``replay`` provider)."""
    result = rlm_cli("run", "What is the magic number?", "--context", "ctx.txt", "--model", model,
                     "--sub-model", sub_model, "--sandbox", "process", "--json", plugins=RUNS)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_the_run_json_and_its_events_use_the_opentelemetry_names(rlm_cli, work):
    run = run_json(rlm_cli, "scripted:root.json", "scripted:sub.json")
    assert run["schema_version"] == SCHEMA_VERSION == 2
    assert token_names(run["usage"]["root"]) == token_names(run["usage"]["sub"]) == TOKENS
    text = (work / run["trajectory_path"]).read_text()
    assert "prompt_tokens" not in text and "completion_tokens" not in text
    events = [json.loads(line) for line in text.splitlines()]
    start = events[0]
    assert (start["type"], start["operation"]) == ("run_start", "invoke_agent")
    assert start["data"]["schema_version"] == SCHEMA_VERSION
    assert (start["data"]["provider"], start["data"]["sub_provider"]) == ("scripted", "scripted")
    root = [e for e in events if e["run_id"] == run["run_id"] and e["type"] not in LIVE_EVENT_TYPES]  # their own test
    assert [(e["type"], e["operation"]) for e in root] == [
        ("run_start", "invoke_agent"),
        ("sub_call", "invoke_agent"),  # rlm_query: the child run
        ("sub_call", "chat"),  # llm_query
        ("step", "execute_tool"),  # its code ran in the sandbox
        ("step", "chat"),  # FINAL_VAR(answer): a reply alone
        ("final", "invoke_agent"),
    ]
    llm_query = next(e["data"] for e in root if e["type"] == "sub_call" and e["data"]["kind"] == "llm_query")
    assert llm_query["provider"] == "scripted" and set(llm_query["usage"]) == TOKENS
    assert all(token_names(e["data"]["usage"]["root"]) == TOKENS for e in events if e["type"] == "step")
    assert events[-1]["data"] == run


@pytest.mark.parametrize(
    "type_, data, operation",
    [
        ("run_start", {}, "invoke_agent"),
        ("final", {"completed": True}, "invoke_agent"),
        ("sub_call", {"kind": "llm_query"}, "chat"),
        ("sub_call", {"kind": "rlm_query", "child_run_id": "run_c"}, "invoke_agent"),
        ("step", {"code": "print(1)"}, "execute_tool"),
        ("step", {"code": None, "reply": "FINAL(1)"}, "chat"),
        ("compaction", {"summary": "…"}, "chat"),
        ("model_retry", {"attempt": 1}, None),
        ("error", {"message": "boom"}, None),
    ],
)
def test_each_event_type_names_its_operation(type_, data, operation):
    assert operation_of(type_, data) == operation


def test_the_built_in_connectors_name_their_provider():
    assert provider_of(OpenAIConnector("gpt-4o-mini", ModelOptions(api_key="k"))) == "openai"
    assert provider_of(ScriptedConnector.from_responses([], name="scripted:x.json")) == "scripted"


@pytest.fixture
def old_run(rlm_isolated) -> Path:
    """The schema 1 trajectory saved in the run home, as the old host left it."""
    runs = rlm_isolated.runs / "runs"
    runs.mkdir(parents=True)
    return Path(shutil.copy(OLD_TRAJECTORY, runs / f"{OLD_RUN_ID}.jsonl"))


def test_a_schema_1_trajectory_lists_and_shows_with_todays_names(rlm_cli, old_run):
    listed = json.loads(rlm_cli("runs", "list", "--json", plugins=RUNS).out)
    assert [(r["run_id"], r["tokens"], r["steps"]) for r in listed] == [(OLD_RUN_ID, 1711, 2)]
    shown = rlm_cli("runs", "show", OLD_RUN_ID[:-3], "--json", plugins=RUNS)
    assert shown.code == 0, shown.err
    payload = json.loads(shown.out)
    root = payload["result"]["usage"]["root"]
    assert (token_names(root), root["input_tokens"], root["output_tokens"]) == (TOKENS, 1135, 52)
    llm_query = next(e for e in payload["events"] if e["type"] == "sub_call" and e["data"]["kind"] == "llm_query")
    assert (llm_query["operation"], llm_query["data"]["usage"]) == ("chat", {"input_tokens": 15, "output_tokens": 1})
    assert "prompt_tokens" not in shown.out
    text = rlm_cli("runs", "show", OLD_RUN_ID, plugins=RUNS).out
    assert "586 tokens (538 in / 48 out)" in text
    assert "↳ llm_query scripted:sub.json · 16 tokens (15 in / 1 out)" in text


def test_a_schema_1_trajectory_replays(rlm_cli, old_run):
    result = rlm_cli("replay", str(old_run), "--no-interactive", plugins=RUNS)
    assert result.code == 0, result.err
    assert "tokens: 1,711" in result.out and "child run run_20261124_205844_803962_bce9 (depth 1)" in result.out
    assert "FINAL_VAR(answer)" in result.out and "601 tokens (597 in / 4 out)" in result.out


def test_the_replay_provider_plays_a_schema_1_trajectory_with_its_token_counts(rlm_cli, work, old_run):
    run = run_json(rlm_cli, f"replay:{OLD_RUN_ID}", f"replay:{OLD_RUN_ID}")
    assert run["completed"] and run["final_response"] == "4217" and run["steps"] == 2
    assert run["usage"]["root"]["input_tokens"] == 1135 and run["usage"]["root"]["output_tokens"] == 52
    assert run["usage"]["sub"]["input_tokens"] == 518 and run["usage"]["sub"]["output_tokens"] == 6


def test_the_schema_reference_documents_the_current_version_and_the_readme_links_it():
    reference = (REPO / "docs" / "schemas.md").read_text()
    assert f"`schema_version` {SCHEMA_VERSION}" in reference
    assert "(docs/schemas.md)" in (REPO / "README.md").read_text()
