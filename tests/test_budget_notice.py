"""``--max-cost`` is never passed without a word: when the last call crossed the budget the run says so (stderr and
an ``over_budget`` note in the RunResult and the final event), and ``--quiet`` does not hide that a model cannot be
priced."""

import json
from pathlib import Path

from rlm_host.testing.openai_server import OpenAIServer, answer

CODE = "```repl\nx = 1\n```"
PRICES = '[[prices]]\nmodel = "openai:house-model"\ninput = 6.0\noutput = 0.0\n'  # $0.006 per 1,000-token call


def user_prices(isolated_env: dict) -> None:
    """The prices in the user's own config file (a project's wait for ``rlm config trust``)."""
    config = Path(isolated_env["HOME"]) / ".config" / "rlm" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(PRICES)


def final_event(work: Path) -> dict:
    trajectory = next((work / ".rlm" / "runs").glob("*.jsonl"))
    return [json.loads(line) for line in trajectory.read_text().splitlines()][-1]


def test_the_call_that_crosses_the_budget_is_named_with_the_overrun(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    user_prices(isolated_env)
    with OpenAIServer() as server:
        server.push(answer(CODE, prompt_tokens=1000, completion_tokens=10),
                    answer("FINAL(7)", prompt_tokens=1000, completion_tokens=10))
        result = rlm("run", "q", "--model", "openai:house-model", "--base-url", server.url, "--max-cost", "0.01",
                     "--sandbox", "process", "-q", plugins=[])
    assert result.returncode == 0 and result.stdout.startswith("7"), result.stderr
    assert ("! the model call(s) of step 2 crossed --max-cost $0.01: $0.0120 spent, $0.0020 over"
            in result.stderr), result.stderr
    final = final_event(work)
    assert final["type"] == "final" and final["data"]["termination_reason"] == "final"
    note = final["data"]["over_budget"]
    assert (note["limit"], note["spent"], note["over"], note["step"]) == (0.01, 0.012, 0.002, 2)


def test_within_the_budget_nothing_is_said(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    user_prices(isolated_env)
    with OpenAIServer() as server:
        server.push(answer("FINAL(7)", prompt_tokens=1000, completion_tokens=10))
        result = rlm("run", "q", "--model", "openai:house-model", "--base-url", server.url, "--max-cost", "0.01",
                     "--sandbox", "process", "-q", plugins=[])
    assert result.returncode == 0 and "max-cost" not in result.stderr
    assert final_event(work)["data"]["over_budget"] is None


def test_quiet_still_warns_that_a_model_cannot_be_priced(rlm, isolated_env):
    with OpenAIServer() as server:
        server.push(answer("FINAL(7)"))
        result = rlm("run", "q", "--model", "deepinfra:some-model", "--base-url", server.url, "--max-cost", "0.5",
                     "--sandbox", "process", "-q", plugins=["rlm-provider-compatible"],
                     env={"DEEPINFRA_API_KEY": "di-test"})
    assert result.returncode == 0 and result.stdout.startswith("7"), result.stderr
    assert result.stderr.count("no price is known for deepinfra:some-model") == 1, result.stderr
    assert "! no price is known" in result.stderr
