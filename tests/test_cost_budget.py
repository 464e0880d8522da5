"""A cost budget holds for every provider: hosted models are priced by genai-prices (a real run against a loopback
server standing in for Groq stops at ``--max-cost``); a model nobody prices is named at run start, or refused with
``--strict``; and its calls count as of unknown cost, never as free."""

from __future__ import annotations

import io
import re

import pytest
from genai_prices.data_snapshot import get_snapshot
from rich.console import Console

from rlm_host.cli.live import LiveView
from rlm_host.cli.main import main
from rlm_host.config.schema import RunSettings
from rlm_host.engine.budget import Budget
from rlm_host.engine.plan import cost_notices
from rlm_host.errors import ConfigError
from rlm_host.events import RunEvent
from rlm_host.models.prices import PriceTable
from rlm_host.models.protocol import Completion
from rlm_host.testing import isolated_runner
from rlm_host.testing.openai_server import OpenAIServer, answer


@pytest.fixture(autouse=True, scope="module")
def _providers_registered():
    """Prices come from what each provider's record says (price ids, local, aliases): the installed plugins'
    providers are registered first, as every run does when it resolves its models."""
    from rlm_host.plugins.host import PluginHost

    PluginHost(environ={}).providers()


CODE = "```repl\nx = 1\n```"


class Unpriced:
    """A connector of a model no price table knows, reporting tokens but no cost."""

    context_window = 32_768

    def __init__(self, name: str, replies: list[str]) -> None:
        self.name, self.replies, self.calls = name, list(replies), 0

    def complete(self, messages, *, timeout=None, **_):
        self.calls += 1
        return Completion(text=self.replies.pop(0), input_tokens=1000, output_tokens=100)


def test_max_cost_stops_a_run_of_a_hosted_openai_compatible_model(tmp_path, monkeypatch):
    """Groq's models had no price, so a run of one went on past --max-cost."""
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    runner = isolated_runner(tmp_path, sandbox="process", plugins="rlm-provider-compatible")
    with OpenAIServer() as server:
        groq = get_snapshot().find_provider(None, "groq", None)
        monkeypatch.setattr(groq, "api_pattern", re.escape(server.url))  # the server stands in for api.groq.com
        server.push(*[answer(CODE, prompt_tokens=1_000_000, completion_tokens=1_000) for _ in range(4)])
        result = runner.run_task("q", model="groq:llama-3.3-70b-versatile", base_url=server.url, max_cost=0.5,
                                 max_steps=3)
    assert (result.termination_reason, len(server.requests)) == ("budget", 1), result.error
    assert "cost budget of $0.5 reached ($0.5908 spent)" in result.error
    assert result.cost == pytest.approx(0.59 + 0.00079) and result.cost_complete


def test_a_model_nobody_prices_is_named_at_run_start_and_its_calls_are_not_free(tmp_path):
    runner = isolated_runner(tmp_path, sandbox="process")
    events: list[RunEvent] = []
    root = Unpriced("deepinfra:some-model", [CODE, "FINAL(1)"])
    result = runner.run_task("q", connectors={"root": root}, max_cost=1.0, on_event=events.append)
    notices = next(e for e in events if e.type == "run_start").data["notices"]
    priced = [notice for notice in notices if "price" in notice]  # the process sandbox also says it is no boundary
    assert len(priced) == 1 and priced[0].startswith("no price is known for deepinfra:some-model: --max-cost $1")
    assert result.completed and result.cost is None and not result.cost_complete
    assert (result.usage.root.calls, result.usage.root.unpriced_calls) == (2, 2)


def test_strict_refuses_a_run_whose_cost_limit_cannot_be_enforced(tmp_path):
    runner = isolated_runner(tmp_path, sandbox="process")
    root = Unpriced("deepinfra:some-model", ["FINAL(1)"])
    with pytest.raises(ConfigError, match=r"--max-cost \$1 cannot be enforced: no price is known for deepinfra"):
        runner.run_task("q", connectors={"root": root}, max_cost=1.0, strict=True)
    assert root.calls == 0
    assert runner.run_task("q", connectors={"root": root}, strict=True).completed  # no cost limit: nothing to refuse


def test_rlm_run_strict_exits_2_before_any_call(isolated_env, monkeypatch, capsys):
    monkeypatch.setenv("RLM_PLUGINS", "rlm-provider-compatible")
    monkeypatch.setenv("DEEPINFRA_API_KEY", "di-test")
    code = main(["run", "q", "--model", "deepinfra:meta-llama/Llama-3.3-70B-Instruct", "--max-cost", "0.1",
                 "--strict", "--sandbox", "process", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "no price is known for deepinfra:meta-llama/Llama-3.3-70B-Instruct" in err
    assert "[[prices]]" in err


class SelfPriced(Unpriced):
    reports_cost = True  # like the llamacpp connector: every completion carries its own cost


@pytest.mark.parametrize("model, prices", [
    (Unpriced("groq:llama-3.3-70b-versatile", []), PriceTable()),  # genai-prices
    (Unpriced("ollama:llama3.2", []), PriceTable()),  # a local server: free
    (SelfPriced("llamacpp:smollm2", []), PriceTable()),  # prices its own calls
    (Unpriced("deepinfra:some-model", []), PriceTable({"deepinfra:*": {"input": 0.1, "output": 0.1}})),
])
def test_no_notice_for_a_model_that_can_be_priced(model, prices):
    assert cost_notices(RunSettings(max_cost=1.0), [model], prices) == []
    assert cost_notices(RunSettings(max_cost=1.0), [model, Unpriced("test:x", [])], prices)  # another that cannot


def test_the_budget_counts_unknown_costs_as_unknown_not_free():
    budget = Budget(timeout=30, max_llm_calls=5, max_cost=0.01)
    budget.charge(100, None)
    assert (budget.cost, budget.unpriced_calls, budget.stop_reason()) == (0.0, 1, None)
    budget.charge(100, 0.02)
    assert "cost budget of $0.01 reached ($0.0200 spent and 1 call(s) of unknown cost)" in str(budget.stop_reason())


def live_view() -> LiveView:
    view = LiveView()
    view.console = Console(file=io.StringIO(), emoji=False, highlight=False, width=300)
    return view


def test_the_live_view_warns_once_per_run_tree():
    view = live_view()
    data = {"environment": "pure_rlm", "model": "deepinfra:x", "sandbox": "process", "context": {"type": "none"},
            "notices": ["no price is known for deepinfra:x: …"]}
    view(RunEvent(type="run_start", run_id="r", root_run_id="r", data=data))
    view(RunEvent(type="run_start", run_id="c", root_run_id="r", parent_run_id="r", depth=1, data=data))
    assert view.console.file.getvalue().count("no price is known") == 1


def test_the_live_view_says_when_some_calls_have_no_price():
    view = live_view()
    usage = {"root": {"calls": 2, "input_tokens": 10, "output_tokens": 5, "cost": 0.5, "unpriced_calls": 0},
             "sub": {"calls": 3, "input_tokens": 10, "output_tokens": 5, "cost": None, "unpriced_calls": 3}}
    data = {"completed": True, "termination_reason": "final", "steps": 1, "total_reward": 1.0, "duration_s": 0.5,
            "usage": usage, "cost": 0.5, "cost_complete": False}
    view(RunEvent(type="final", run_id="r", root_run_id="r", data=data))
    assert "· $0.5000 + 3 call(s) of unknown cost · 0.5s" in view.console.file.getvalue()
