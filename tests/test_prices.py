"""Prices: genai-prices' (tiers, official endpoints only), free local providers, config overrides (longest
prefix at a name boundary) and their validation, and cost counted per role by the engine and shown live."""

from __future__ import annotations

import io
import threading

import pytest
from rich.console import Console

from rlm_host.cli.live import LiveView, final_cost
from rlm_host.config import load_settings
from rlm_host.engine.budget import Budget
from rlm_host.engine.model_client import ModelClient
from rlm_host.engine.runner import RLMRunner
from rlm_host.errors import ConfigError
from rlm_host.events import RunEvent
from rlm_host.models.prices import FREE, Price, PriceTable, default_table, matches
from rlm_host.models.protocol import Completion
from rlm_host.plugins.host import PluginHost
from rlm_host.results import Usage


@pytest.fixture(autouse=True, scope="module")
def _providers_registered():
    """Prices come from what each provider's record says (price ids, local, aliases): the installed plugins'
    providers are registered first, as every run does when it resolves its models."""
    from rlm_host.plugins.host import PluginHost

    PluginHost(environ={}).providers()


@pytest.mark.parametrize(
    "model, price",
    [
        ("openai:gpt-4o-mini", Price(0.15, 0.60)),
        ("openai:gpt-4o-mini-2024-07-18", Price(0.15, 0.60)),  # longest prefix wins over gpt-4o
        ("openai:gpt-4o", Price(2.50, 10.00)),
        ("openai:gpt-4o-2024-08-06", Price(2.50, 10.00)),
        ("openai:gpt-4.1-nano", Price(0.10, 0.40)),
        ("openai:o4-mini", Price(1.10, 4.40)),
        ("openai:o3", Price(2.00, 8.00)),
        ("openai:o3-pro", Price(20.00, 80.00)),
        ("openai:gpt-5.4-mini", Price(0.75, 4.50)),  # its own price, not gpt-5's
        ("openai:GPT-4o", Price(2.50, 10.00)),
        ("anthropic:claude-sonnet-4-5-20250929", Price(3.00, 15.00)),
        ("anthropic:claude-opus-4-1", Price(15.00, 75.00)),
        ("anthropic:claude-opus-4-5", Price(5.00, 25.00)),
        ("claude:claude-haiku-4-5", Price(1.00, 5.00)),  # the provider's alias
        ("gemini:gemini-2.5-flash", Price(0.30, 2.50)),
        ("gemini:models/gemini-2.5-flash-lite", Price(0.10, 0.40)),
        ("gemini:gemini-2.0-flash-001", Price(0.10, 0.40)),
        ("scripted:replies.json", FREE),
        ("replay:run_1", FREE),
        ("ollama:llama3.2", FREE),
        ("vllm:Qwen/Qwen2.5-7B-Instruct", FREE),
        ("groq:llama-3.3-70b-versatile", Price(0.59, 0.79)),
        ("mistral:mistral-large-latest", Price(2.00, 6.00)),
        ("cerebras:llama-3.3-70b", Price(0.85, 1.20)),
        ("openrouter:openai/gpt-4o-mini", Price(0.15, 0.60)),
        ("anthropic:claude-mythos-5", Price(10.00, 50.00)),  # not in genai-prices: our UNLISTED entry
        ("anthropic:claude-mythos-5-2", Price(8.00, 40.00)),  # in genai-prices: its own price, not Mythos 5's
        ("deepinfra:meta-llama/Llama-3.3-70B-Instruct", None),  # genai-prices has no DeepInfra
        ("openai:my-finetune", None),
        ("nocolon", None),
    ],
)
def test_builtin_lookup(model, price):
    assert default_table().lookup(model) == price


def test_deepseek_is_priced_at_its_time_of_day_rate():
    assert default_table().lookup("deepseek:deepseek-chat") in (Price(0.27, 1.10), Price(0.135, 0.55))


def test_tiered_prices_charge_a_long_prompt_its_tier_rate():
    """Claude Sonnet 4.5 costs $3 per million input tokens up to 200k, then $6 for the whole prompt (and $22.50
    instead of $15 per million output tokens): a flat table said $0.915 for 300k + 1k."""
    table = default_table()
    assert table.cost("anthropic:claude-sonnet-4-5", 300_000, 1_000) == pytest.approx(1.8225)
    assert table.cost("anthropic:claude-sonnet-4-5-20250929", 100_000, 1_000) == pytest.approx(0.315)
    assert table.lookup("anthropic:claude-sonnet-4-5") == Price(3.00, 15.00)  # its first tier's rates


def test_prefixes_match_at_name_boundaries():
    assert matches("gpt-4o", "gpt-4o") and matches("gpt-4o", "gpt-4o-2024-08-06")
    assert not matches("gpt-4", "gpt-4o") and not matches("gpt-5", "gpt-5.4") and not matches("o1", "o10")
    assert matches("gpt-5.", "gpt-5.4") and matches("", "anything")  # a separator at the end, or the wildcard


def test_builtin_prices_apply_to_the_official_endpoint_only():
    table = default_table()
    assert table.lookup("openai:gpt-4o", base_url="https://api.openai.com/v1") == Price(2.50, 10.00)
    assert table.lookup("openai:gpt-4o", base_url="http://127.0.0.1:8000/v1") is None
    assert table.lookup("groq:llama-3.3-70b-versatile", base_url="https://api.groq.com/openai/v1") is not None
    assert table.lookup("groq:llama-3.3-70b-versatile", base_url="http://127.0.0.1:8000/v1") is None
    assert table.cost("openai:gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert table.cost("openai:gpt-4o-mini", 2000, 500) == pytest.approx((2000 * 0.15 + 500 * 0.60) / 1e6)


def test_overrides_join_the_table():
    table = PriceTable({
        "openai:gpt-4o-mini": {"input": 1.0, "output": 2.0},  # replaces the built-in entry
        "openai:my-finetune": {"input": 3.0, "output": 6.0},  # adds one, for any endpoint
        "vllm:*": {"input": 0.5, "output": 0.5},  # a local server that does cost something
        "claude:claude-new": {"input": 7.0, "output": 7.0},  # keyed by alias
    })
    assert table.lookup("openai:gpt-4o-mini-2024-07-18") == Price(1.0, 2.0)
    assert table.lookup("openai:gpt-4o") == Price(2.50, 10.00)
    assert table.lookup("openai:my-finetune-v2", base_url="http://proxy.local/v1") == Price(3.0, 6.0)
    assert table.lookup("vllm:anything") == Price(0.5, 0.5)
    assert table.lookup("anthropic:claude-new-1") == Price(7.0, 7.0)
    with pytest.raises(ValueError, match="not provider:model-prefix"):
        PriceTable({"gpt-4o": {"input": 1, "output": 1}})


def write_project(tmp_path, text: str):
    """Settings with ``text`` as a trusted project file (an untrusted one's prices wait for trust)."""
    (tmp_path / "rlm.toml").write_text(text)
    return load_settings(environ={"HOME": str(tmp_path), "RLM_TRUST_CONFIG": "1"}, cwd=tmp_path)


def test_prices_from_the_config_file(tmp_path):
    loaded = write_project(tmp_path, '[[prices]]\nmodel = "openai:gpt-4.1"\ninput = 9.0\noutput = 18.0\n')
    table = PriceTable.from_settings(loaded.settings)
    assert table.lookup("openai:gpt-4.1-2025-04-14") == Price(9.0, 18.0)  # dots in names are fine
    assert table.lookup("openai:gpt-4.1-mini") == Price(0.40, 1.60)  # a longer built-in prefix still wins


@pytest.mark.parametrize(
    "toml, message",
    [
        ('[[prices]]\nmodel = "gpt-4o"\ninput = 1\noutput = 1\n',
         "prices.0.model: Value error, 'gpt-4o' is not provider:model-prefix"),
        ('[[prices]]\nmodel = "openai:x"\ninput = -1\noutput = 1\n',
         "prices.0.input: Input should be greater than or equal to 0"),
        ('[[prices]]\nmodel = "openai:x"\ninput = 1\n', "prices.0.output: Field required"),
        ('[[prices]]\nmodel = "openai:x"\ninput = 1\noutput = 1\ncached = 1\n', "prices.0.cached: unknown key"),
    ],
)
def test_bad_prices_are_config_errors_naming_the_file_and_key(tmp_path, toml, message):
    with pytest.raises(ConfigError) as info:
        write_project(tmp_path, toml)
    assert f"project file {tmp_path / 'rlm.toml'}" in info.value.message and message in info.value.message


class Priced:
    """A connector that reports tokens but no cost, like the openai connector."""

    context_window = None

    def __init__(self, name: str, replies: list[str], cost: float | None = None) -> None:
        self.name, self.replies, self.cost = name, list(replies), cost

    def complete(self, messages, *, timeout=None, **_):
        return Completion(text=self.replies.pop(0), input_tokens=1000, output_tokens=100, cost=self.cost)


def test_model_client_prices_completions_without_a_cost():
    usage, budget = Usage(), Budget(timeout=30, max_llm_calls=5)
    client = ModelClient(Priced("openai:gpt-4o", ["a"]), "root", usage, budget, threading.Lock())
    completion = client.complete([{"role": "user", "content": "q"}])
    assert completion.cost == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6) == usage.cost == budget.cost
    own = ModelClient(Priced("openai:gpt-4o", ["a"], cost=0.5), "root", Usage(), budget)
    assert own.complete([{"role": "user", "content": "q"}]).cost == 0.5  # the provider's own cost wins
    unknown = ModelClient(Priced("openai:mystery", ["a"]), "root", Usage(), budget)
    assert unknown.complete([{"role": "user", "content": "q"}]).cost is None


def test_run_result_and_usage_per_role_carry_the_cost(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host = PluginHost(environ={"RLM_PLUGINS": ""})
    (tmp_path / "rlm.toml").write_text('[[prices]]\nmodel = "test:sub"\ninput = 1.0\noutput = 10.0\n')
    loaded = load_settings(environ={"HOME": str(tmp_path), "RLM_TRUST_CONFIG": "1"}, cwd=tmp_path, host=host)
    runner = RLMRunner(loaded=loaded, host=host, home=tmp_path / ".rlm")
    root = Priced("openai:gpt-4o-mini", ["```repl\nx = llm_query('hi')\n```", "FINAL_VAR(x)"])
    sub = Priced("test:sub", ["hello"])
    result = runner.run_task("q", context="c", sandbox="process", connectors={"root": root, "sub": sub})
    assert result.final_response == "hello"
    root_cost = 2 * (1000 * 0.15 + 100 * 0.60) / 1e6
    sub_cost = (1000 * 1.0 + 100 * 10.0) / 1e6
    assert result.usage.root.cost == pytest.approx(root_cost)
    assert result.usage.sub.cost == pytest.approx(sub_cost)
    assert result.cost == pytest.approx(root_cost + sub_cost)


def final_line(data: dict) -> str:
    view = LiveView()
    view.console = Console(file=io.StringIO(), emoji=False, highlight=False, width=300)
    view(RunEvent(type="final", run_id="r", root_run_id="r", data=data))
    return view.console.file.getvalue()


def test_the_live_view_shows_the_cost_when_known():
    role = {"calls": 1, "input_tokens": 10, "output_tokens": 5, "cost": None}
    data = {"completed": True, "termination_reason": "final", "steps": 1, "total_reward": 1.0, "duration_s": 0.5,
            "usage": {"root": dict(role), "sub": dict(role)}, "cost": None}
    assert "$" not in final_line(data)
    data["cost"] = 0.01234
    assert "tokens root 15 sub 15 · $0.0123 · 0.5s" in final_line(data)
    assert final_cost({"usage": {"root": {"cost": 0.5}, "sub": {"cost": None}}}) == 0.5
