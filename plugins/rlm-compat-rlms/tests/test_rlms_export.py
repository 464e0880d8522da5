"""``rlm runs export --format rlms``: a saved run tree as the log of the authors' rlms package, which their web
visualiser opens (the ``rlms`` exporter this plugin registers).

The expected structure is encoded from the official source, github.com/alexzhang13/rlm at commit 72d6940 (rlms
0.1.3): ``rlm/logger/rlm_logger.py`` (the metadata line and the iteration lines), ``rlm/core/types.py``
(``RLMMetadata``, ``RLMIteration``, ``CodeBlock``, ``REPLResult``, ``RLMChatCompletion``, ``UsageSummary``) and
``visualizer/src/lib/parse-logs.ts`` / ``types.ts`` (what the visualiser reads). ``tests/data/rlms_reference.jsonl``
is a log written by rlms 0.1.3's own ``RLMLogger`` (an llm_query, a child RLM through rlm_query, an error, a final
answer; driven by a fake OpenAI-compatible server, long strings clipped): the export must have its shape.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from rlm_compat_rlms.log_format import to_rlms_log
from rlm_host.sdk.embedding import RunStore
from rlm_host.testing import isolated_runner, run_scripted

PLUGIN = "rlm-compat-rlms"
EXPORT = f"{PLUGIN},rlm-runs"  # `rlm runs export` is rlm-runs'

REFERENCE = Path(__file__).parent / "data" / "rlms_reference.jsonl"

ROOT = ["Look first.\n```repl\nparts = llm_query('one?')\nnote = rlm_query('Summarise', context)\n"
        "print(parts, note)\n```", "```repl\nprint('x')\nprint(1/0)\n```", "```repl\nFINAL('42')\n```"]
CHILD = ["```repl\nprint(context[:5])\n```", "FINAL('a summary')"]

# rlm/logger/rlm_logger.py: log_metadata writes {"type": "metadata", "timestamp", **RLMMetadata.to_dict()}
METADATA = {"type", "timestamp", "root_model", "max_depth", "max_iterations", "backend", "backend_kwargs",
            "environment_type", "environment_kwargs", "other_backends"}
# rlm_logger.py: log writes {"type": "iteration", "iteration", "timestamp", **RLMIteration.to_dict()}
ITERATION = {"type", "iteration", "timestamp", "prompt", "response", "code_blocks", "final_answer", "iteration_time"}
BLOCK = {"code", "result"}  # types.py CodeBlock.to_dict
RESULT = {"stdout", "stderr", "locals", "execution_time", "rlm_calls", "final_answer"}  # REPLResult.to_dict
CALL = {"root_model", "prompt", "response", "usage_summary", "execution_time"}  # RLMChatCompletion.to_dict
CALL_OPTIONAL = {"metadata", "error"}  # metadata: a child RLM's get_trajectory(); error: a failed call
CALL_VISUALISER = {"prompt_tokens", "completion_tokens"}  # visualizer/src/lib/types.ts RLMChatCompletion
MODEL_USAGE = {"total_calls", "total_input_tokens", "total_output_tokens"}  # ModelUsageSummary (+ total_cost)


@pytest.fixture
def recorded(rlm_isolated):
    runner = isolated_runner(rlm_isolated.work, sandbox="process", environ={"RLM_RUN__SINKS": "[]"})
    result, _, _ = run_scripted(runner, "What is the answer?", ROOT[:1] + CHILD + ROOT[1:], context="some words",
                                sub_rules=[{"match": "one", "text": "yes"}], max_depth=1)
    assert result.completed and result.final_response == "42", result.error
    return result


def _exported(result) -> list[dict]:
    return to_rlms_log(RunStore(Path(result.trajectory_path).parent.parent).load(Path(result.trajectory_path)))


def _check_metadata(meta: dict, keys: set[str]) -> None:
    assert set(meta) == keys
    assert isinstance(meta["root_model"], str) and isinstance(meta["backend_kwargs"], dict)
    assert isinstance(meta["environment_kwargs"], dict) and isinstance(meta["max_iterations"], int)
    assert meta["other_backends"] is None or all(isinstance(b, str) for b in meta["other_backends"])


def _check_iteration(entry: dict, number: int) -> None:
    """One iteration line as RLMLogger writes it and parse-logs.ts / the components read it."""
    assert set(entry) == ITERATION and entry["type"] == "iteration" and entry["iteration"] == number
    datetime.fromisoformat(entry["timestamp"])  # ExecutionPanel: new Date(iteration.timestamp)
    # IterationTimeline: iteration.prompt.map(m => m.content), iteration.response.slice(...)
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in entry["prompt"])
    assert isinstance(entry["response"], str)
    assert entry["final_answer"] is None or isinstance(entry["final_answer"], str)
    assert entry["iteration_time"] is None or isinstance(entry["iteration_time"], float)
    for block in entry["code_blocks"]:
        assert set(block) == BLOCK and isinstance(block["code"], str) and set(block["result"]) == RESULT
        result = block["result"]
        assert isinstance(result["stdout"], str) and isinstance(result["stderr"], str)
        assert isinstance(result["locals"], dict) and isinstance(result["execution_time"], float)
        for call in result["rlm_calls"]:
            assert CALL <= set(call) <= CALL | CALL_OPTIONAL | CALL_VISUALISER
            assert isinstance(call["response"], str) and isinstance(call["execution_time"], float)
            assert isinstance(call["prompt_tokens"], int) and isinstance(call["completion_tokens"], int)
            usage = call["usage_summary"]
            assert set(usage) <= {"model_usage_summaries", "total_cost"}
            assert all(MODEL_USAGE <= set(u) <= MODEL_USAGE | {"total_cost"}
                       for u in usage["model_usage_summaries"].values())
            if "metadata" in call:  # a child run: RLMLogger.get_trajectory() of the child RLM
                assert set(call["metadata"]) == {"run_metadata", "iterations"}
                _check_metadata(call["metadata"]["run_metadata"], METADATA - {"type", "timestamp"})
                for n, child in enumerate(call["metadata"]["iterations"], 1):
                    _check_iteration(child, n)


def _visualiser_summary(lines: list[dict]) -> dict:
    """What parse-logs.ts parseJSONL + computeMetadata make of a log."""
    config = next((line for line in lines if line.get("type") == "metadata"), {})
    iterations = [line for line in lines if line.get("type") != "metadata"]
    blocks = [b for it in iterations for b in it["code_blocks"]]
    answers = [it["final_answer"] for it in iterations if it["final_answer"]]
    return {"model": config.get("root_model"), "iterations": len(iterations), "code_blocks": len(blocks),
            "sub_calls": sum(len(b["result"]["rlm_calls"]) for b in blocks),
            "has_errors": any(b["result"]["stderr"] for b in blocks),
            "final": answers[-1] if answers else None}


def test_the_export_has_the_structure_rlms_writes(recorded):
    lines = _exported(recorded)
    meta, iterations = lines[0], lines[1:]
    assert meta["type"] == "metadata"
    _check_metadata(meta, METADATA)
    assert meta["root_model"] == "scripted:root" and meta["backend"] == "scripted"
    assert meta["max_iterations"] == 8 and meta["max_depth"] == 2  # our max_depth 1: one level of child runs
    assert meta["environment_type"] == "process" and meta["environment_kwargs"]["environment"] == "pure_rlm"
    for n, entry in enumerate(iterations, 1):
        _check_iteration(entry, n)
    assert [it["final_answer"] for it in iterations] == [None, None, "42"]

    first = iterations[0]
    assert first["prompt"] == [{"role": "user", "content": "What is the answer?"}]
    assert first["response"] == ROOT[0] and len(first["code_blocks"]) == 1
    block = first["code_blocks"][0]["result"]
    assert block["stdout"] == "yes a summary\n" and block["stderr"] == ""
    plain, child = block["rlm_calls"]
    assert plain["root_model"] == "scripted:sub" and plain["prompt"] == "one?" and plain["response"] == "yes"
    assert "metadata" not in plain and set(plain["usage_summary"]["model_usage_summaries"]) == {"scripted:sub"}
    # the child run: its trajectory nested as rlms nests a child RLM's (rlm.py _subcall: logger=RLMLogger())
    assert child["prompt"] == "Summarise" and child["response"] == "a summary" and child["execution_time"] > 0
    nested = child["metadata"]["iterations"]
    assert [it["response"] for it in nested] == CHILD and nested[-1]["final_answer"] == "a summary"
    assert nested[0]["code_blocks"][0]["result"]["stdout"] == "some \n"
    assert child["prompt_tokens"] > 0
    assert child["usage_summary"]["model_usage_summaries"]["scripted:root"]["total_calls"] == 2

    second, third = iterations[1], iterations[2]
    assert "ZeroDivisionError" in second["code_blocks"][0]["result"]["stderr"]
    assert second["code_blocks"][0]["result"]["stdout"] == "x\n"
    # the prompt is rebuilt: task, then each earlier reply and its REPL output
    assert [m["role"] for m in third["prompt"]] == ["user", "assistant", "user", "assistant", "user"]
    assert third["prompt"][2]["content"] == "REPL output:\nyes a summary\n"
    assert third["code_blocks"][0]["result"]["final_answer"] == "42"
    assert _visualiser_summary(lines) == {"model": "scripted:root", "iterations": 3, "code_blocks": 3,
                                          "sub_calls": 2, "has_errors": True, "final": "42"}


def _paths(value, path: str = "", out: dict | None = None) -> dict[str, set[str]]:
    """Every key path of a JSON value with the types seen there; the keys of free-form maps are ``*``."""
    out = {} if out is None else out
    kind = "null" if value is None else "number" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else type(value).__name__
    out.setdefault(path, set()).add(kind)
    if isinstance(value, dict):
        free = path.rsplit(".", 1)[-1] in ("locals", "model_usage_summaries", "backend_kwargs", "environment_kwargs")
        for key, item in value.items():
            _paths(item, f"{path}.{'*' if free else key}", out)
    elif isinstance(value, list):
        for item in value:
            _paths(item, f"{path}[]", out)
    return out


def _shape(lines: list[dict]) -> dict[str, dict[str, set[str]]]:
    shapes: dict[str, dict[str, set[str]]] = {}
    for line in lines:
        _paths(line, "", shapes.setdefault(line["type"], {}))
    return shapes


def test_the_export_has_the_shape_of_a_log_rlms_wrote(recorded):
    reference = _shape([json.loads(line) for line in REFERENCE.read_text().splitlines()])
    ours = _shape(_exported(recorded))
    assert set(ours) == set(reference) == {"metadata", "iteration"}
    extras = ("prompt_tokens", "completion_tokens", "total_cost")  # the visualiser's fields; a known cost
    for kind, theirs in reference.items():
        mine = ours[kind]
        # free-form maps whose content differs (REPL locals we do not record, backend settings) are not compared
        skip = lambda p: any(f".{k}.*" in p for k in ("locals", "backend_kwargs", "environment_kwargs"))  # noqa: E731
        missing = {p for p in theirs if not skip(p)} - set(mine)
        assert not missing, f"{kind}: rlms writes {sorted(missing)}, the export does not"
        nulls = [p for p, kinds in theirs.items() if kinds == {"null"}]  # only None in the reference: any type
        added = {p for p in mine if p not in theirs and not skip(p) and not p.endswith(extras)
                 and not any(p.startswith(n) for n in nulls)}
        assert not added, f"{kind}: the export writes {sorted(added)}, rlms does not"
        for path, kinds in theirs.items():
            if path in mine and kinds != {"null"}:
                assert mine[path] - {"null"} <= kinds, (kind, path, mine[path], kinds)


def test_a_run_that_used_up_its_steps_ends_with_rlms_closing_iteration(rlm_isolated):
    runner = isolated_runner(rlm_isolated.work, sandbox="process", environ={"RLM_RUN__SINKS": "[]"})
    result, _, _ = run_scripted(runner, "q?", ["```repl\nprint(1)\n```", "```repl\nprint(2)\n```", "best guess"],
                                context="c", max_steps=2)
    # the two steps used up, one more call synthesises the answer from the third reply: a run without it is the bug
    assert result.termination_reason == "max_steps" and result.final_response == "best guess", result.error
    lines = _exported(result)
    last = lines[-1]
    _check_iteration(last, len(lines) - 1)
    assert last["code_blocks"] == [] and last["final_answer"] == last["response"] == result.final_response
    assert last["iteration_time"] is None  # rlm.py _default_answer logs RLMIteration without iteration_time


# ------------------------------------------------------------------------------------------------- the CLI


def test_export_to_stdout_and_to_a_file(recorded, rlm_cli, rlm_isolated):
    run_id = recorded.run_id
    shown = rlm_cli("runs", "export", run_id[:-2], "--format", "rlms", plugins=EXPORT)
    assert shown.code == 0, shown.err
    lines = [json.loads(line) for line in shown.out.splitlines()]
    assert lines == json.loads(json.dumps(_exported(recorded)))
    target = rlm_isolated.work / "out" / "run.jsonl"
    written = rlm_cli("runs", "export", "latest", "-f", "rlms", "--output", str(target), plugins=EXPORT)
    assert written.code == 0 and written.out == "" and str(target) in written.err and "(rlms," in written.err
    assert target.read_text() == shown.out
    dash = rlm_cli("runs", "export", recorded.trajectory_path, "-f", "rlms", "-o", "-", plugins=EXPORT)
    assert dash.code == 0 and dash.out == shown.out


def test_without_the_plugin_the_format_is_unknown(recorded, rlm_cli):
    bad = rlm_cli("runs", "export", recorded.run_id, "--format", "rlms", plugins="rlm-runs")
    assert bad.code == 2 and bad.out == ""
    assert "unknown exporter 'rlms'" in bad.err and "json" in bad.err
