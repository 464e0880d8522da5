"""``paradigm_comparison`` for real: one needle task run as a pure RLM, as CodeAct (generic), through DSPy's own
RLM (rlm-adapter-dspy) and the RLM built of ADK agents (adk-rlm), as a Pydantic AI, a Google ADK and a DeepAgents
agent, and as one direct LLM call, by one scripted model that answers each paradigm in that paradigm's own reply
format, with code that finds the needle in the sandbox. Every paradigm's report row is real: steps, tokens and time
of a run that went through the real framework (DSPy 3.4's RLM loop, ADK's runner, pydantic-ai's agent graph,
LangGraph)."""

from __future__ import annotations

import json
import re

from rlm_host.testing import ScriptedConnector, isolated_runner

NEEDLE = re.escape("magic number for the Saltmarsh survey is ")
FIND = f"import re\nanswer = re.search(r'{NEEDLE}(\\d+)', context).group(1)\n"
DSPY_REPLY = ("[[ ## reasoning ## ]]\nSearch the context.\n\n[[ ## code ## "
              f"]]\n```python\n{FIND}SUBMIT(answer)\n```\n\n"
              "[[ ## completed ## ]]")
RULES = [
    {"match": r"\[\[ ## ", "text": DSPY_REPLY},  # dspy.RLM's ChatAdapter fields
    {"match": "^Context:", "text": "4118146"},  # direct: the whole context is in the prompt
    {"match": "^Task: ", "text": json.dumps({"action": "run_python", "code": FIND + "FINAL(answer)"})},  # CodeAct
    {"match": "^What is the special magic number", "text": json.dumps(
        {"tool": "run_code", "args": {"code": FIND + "FINAL(answer)"}})},  # the agents: the task, then tools
    {"match": "Your query: |^Query: ", "text": f"```repl\n{FIND}FINAL(answer)\n```"},  # pure RLM, adk-rlm
]


def test_paradigm_comparison_runs_every_paradigm_and_reports_them_side_by_side(tmp_path, monkeypatch):
    from rlm_bench.catalog import find_preset
    from rlm_bench.report import markdown
    from rlm_bench.runner import BenchmarkRunner, BenchOptions

    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins="rlm-bench,rlm-adapter-dspy,rlm-adapter-pydantic-ai,rlm-adapter-adk,"
                                                 "rlm-adapter-deepagents,rlm-env-generic")
    model = ScriptedConnector.from_responses([], rules=RULES, name="scripted:paradigms", context_window=65_536)
    preset = find_preset("paradigm_comparison", runner.host, loaded=runner.loaded)
    bench = BenchmarkRunner(runner, connectors={"root": model, "sub": model})
    summary = bench.run(preset, BenchOptions(sandbox="process"))
    by_paradigm = {c.tags["paradigm"]: c for c in summary.cases}
    assert set(by_paradigm) == {"pure_rlm", "codeact", "dspy_rlm", "adk_rlm", "pydantic_ai", "google_adk",
                                "deepagents", "direct"}
    for name, case in by_paradigm.items():
        assert (case.status, case.score, case.error) == ("completed", 1.0, None), (name, case.error,
                                                                                   case.final_response)
        assert case.tokens.total > 0 and case.steps >= 1, name
    assert summary.metrics.accuracy == 1.0
    report = markdown(summary)
    for paradigm in by_paradigm:
        assert paradigm in report
