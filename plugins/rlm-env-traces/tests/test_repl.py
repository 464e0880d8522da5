"""The trace_rlm environment: pure_rlm's REPL, with the store's operations as functions the model's code calls."""

import json

from rlm_env_traces.generate import SYSTEMIC_MESSAGE, generate
from rlm_host.testing import EnvironmentContract, isolated_runner, run_scripted

PLUGIN = "rlm-env-traces"


class TestTraceRLM(EnvironmentContract):
    """Without a trace file (the contract's contexts are strings) it is plain pure_rlm, and keeps the protocol."""

    environment = "trace_rlm"
    distribution = PLUGIN
    final_reply = "FINAL(42)"
    final_answer = "42"
    working_reply = "```repl\nx = len(context)\nprint(x)\n```"


def test_its_repl_is_pure_rlm_with_the_configured_pure_rlm_settings(tmp_path):
    """trace_rlm builds pure_rlm through its context (``ctx.build_environment``), so ``[environment.pure_rlm]``
    applies to it: here a 300-character cut of REPL output instead of the default 8,000."""
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process",
                             environ={"RLM_ENVIRONMENT__PURE_RLM__MAX_OUTPUT_CHARS": "300"})
    result, _, root = run_scripted(runner, "Print.", ["```repl\nprint('x' * 5000)\n```", "FINAL(done)"],
                                   environment="trace_rlm")
    assert result.final_response == "done", result.error
    shown = "".join(m["content"] for m in root.calls[1])
    assert "characters cut" in shown and "x" * 400 not in shown


def first_step(run):
    return next(e for e in map(json.loads, open(run["trajectory_path"])) if e["type"] == "step")


def test_the_models_code_queries_the_trace_file(rlm_cli, rlm_script, rlm_isolated):
    path = rlm_isolated.work / "t.jsonl.gz"
    info = generate(path, traces=30, fmt="mixed", malformed=1)
    code = ("errors = query_traces(has_errors=True, agent='researcher', limit=50)\n"
            "ids = [t['trace_id'] for t in errors['traces']]\n"
            "hits = [search_trace(i, 'timeout')['match_count'] for i in ids]\n"
            "print(context['traces'], count_traces(has_errors=True), sum(hits))\n"
            "found = search_trace(ids[0], 'web_search exceeded')['matches'][0]['snippet']\n"
            "export_evidence_corpus('ev', has_errors=True)")
    model = rlm_script([f"```repl\n{code}\n```", "```repl\nFINAL_VAR('found')\n```"])
    result = rlm_cli("run", "Which failures recur?", "--env", "traces-repl", "--context", str(path), "--model", model,
                     "--sandbox", "process", "--json", plugins=PLUGIN)
    run = json.loads(result.out)
    assert run["completed"] and SYSTEMIC_MESSAGE in run["final_response"], result.err
    step = first_step(run)
    assert f"30 {len(info['error_trace_ids'])} 5" in json.dumps(step["data"]), "30 traces, 6 with errors, 5 timeouts"
    assert (rlm_isolated.work / "trace-evidence" / "ev" / "summary.md").is_file()


def test_an_export_outside_the_output_folder_fails_in_the_models_code(rlm_cli, rlm_script, rlm_isolated):
    generate(rlm_isolated.work / "t.jsonl", traces=3)
    model = rlm_script(["```repl\nexport_evidence_corpus('/tmp/x')\n```", "FINAL(done)"])
    result = rlm_cli("run", "Export.", "--env", "trace_rlm", "--context", "t.jsonl", "--model", model,
                     "--sandbox", "process", "--json", plugins=PLUGIN)
    step = first_step(json.loads(result.out))
    assert "outside the allowed folders" in json.dumps(step["data"])
