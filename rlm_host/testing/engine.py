"""Drive real runs of the engine with scripted models, in tests of the host and of plugins.

    from rlm_host.testing.engine import FIND_NEEDLE, haystack, isolated_runner, run_scripted

    @pytest.fixture
    def runner(tmp_path, monkeypatch):
        monkeypatch.chdir(tmp_path)
        return isolated_runner(tmp_path, plugins="rlm-sandbox-mine", sandbox="mine")

    def test_finds_the_needle(runner):
        result, events, root = run_scripted(runner, "What is the magic number?", [FIND_NEEDLE, "FINAL_VAR(answer)"],
                                            sub_rules=[{"match": "Extract", "text": "4217"}],
                                            context=haystack(200_000))
        assert result.final_response == "4217"

Replies and rules are those of the ``scripted`` provider (``rlm_host.models.scripted``): a reply is a string or a
dict (``text``, ``delay``, ``error``, ``input_tokens``…); a rule answers every prompt matching ``match``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from rlm_host.config import load_settings
from rlm_host.engine.runner import RLMRunner
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.plugins.host import PluginHost

HAYSTACK_NEEDLE = "The magic number is 4217."

#: A root reply that finds the needle of ``haystack()`` and asks a sub-model to extract the number.
FIND_NEEDLE = (
    "```repl\nidx = context.find('magic number')\nanswer = llm_query('Extract the number: ' + context[idx:idx+40])\n"
    "print(answer)\n```"
)


def haystack(chars: int) -> str:
    """``chars`` characters of filler with ``HAYSTACK_NEEDLE`` in the middle."""
    filler = "lorem ipsum dolor sit amet "
    body = (filler * (chars // len(filler) + 1))[:chars]
    middle = chars // 2
    return body[:middle] + HAYSTACK_NEEDLE + body[middle:]


def isolated_runner(
    tmp_path: Path,
    *,
    plugins: str = "",
    sandbox: str | None = None,
    environ: Mapping[str, str] | None = None,
    host: PluginHost | None = None,
) -> RLMRunner:
    """An ``RLMRunner`` that sees nothing of the user's machine: HOME, the working directory for ``rlm.toml`` and
    the run store (``<tmp_path>/.rlm``) are all ``tmp_path``.

    ``plugins`` is RLM_PLUGINS (which installed distributions to load: "" for the built-ins only, or names
    separated by commas); ``sandbox`` the runs' default sandbox (``run.sandbox``; "auto" when None);
    ``environ`` adds variables to the settings' environment (``RLM_…`` overrides); ``host`` reuses a plugin
    host instead of making one. Change into ``tmp_path`` as well (``monkeypatch.chdir``) to keep relative
    paths of a run there.
    """
    host = host or PluginHost(environ={"RLM_PLUGINS": plugins})
    env = {"HOME": str(tmp_path), **({"RLM_RUN__SANDBOX": sandbox} if sandbox else {}), **(environ or {})}
    loaded = load_settings(environ=env, cwd=tmp_path, host=host)
    return RLMRunner(loaded=loaded, host=host, home=tmp_path / ".rlm")


def run_scripted(
    runner: RLMRunner,
    task: str,
    root_replies: Iterable[Any],
    *,
    sub: Iterable[Any] = (),
    sub_rules: Iterable[Mapping[str, Any]] = (),
    context: Any = None,
    **options: Any,
) -> tuple[Any, list, ScriptedConnector]:
    """Run ``task`` with a scripted root model (``root_replies``, in order) and a scripted sub-model (``sub`` in
    order, then ``sub_rules``); ``options`` go to ``run_task`` (``sandbox=``, ``max_steps=``…).

    Returns (the RunResult, every event in order, the root connector: its ``calls`` are the prompts it got).
    """
    events: list = []
    root_model = ScriptedConnector.from_responses(list(root_replies), name="scripted:root")
    sub_model = ScriptedConnector.from_responses(list(sub), rules=list(sub_rules), name="scripted:sub")
    result = runner.run_task(
        task, context=context, connectors={"root": root_model, "sub": sub_model}, on_event=events.append, **options
    )
    from rlm_host.observability.delivery import wait_for_sinks

    wait_for_sinks()  # the run returns while its sinks deliver: a test reads what they wrote
    return result, events, root_model


def assert_context_stays_out_of_the_prompt(runner: RLMRunner, sizes: Iterable[int] = (1_000, 10_000_000),
                                           **options: Any) -> None:
    """Find the needle of haystacks of each size (``options`` go to ``run_task``): every run answers, the context
    never enters a root prompt, and the first root prompt does not grow with the context (the model sees only
    its metadata)."""
    first_prompt = {}
    for chars in sizes:
        result, _, root = run_scripted(runner, "What is the magic number?", [FIND_NEEDLE, "FINAL(4217)"],
                                       sub_rules=[{"match": ".", "text": "4217"}], context=haystack(chars),
                                       **options)
        assert result.final_response == "4217", result.error
        prompts = ["".join(m["content"] for m in call) for call in root.calls]
        assert all(HAYSTACK_NEEDLE not in prompt for prompt in prompts)
        first_prompt[chars] = len(prompts[0])
    assert max(first_prompt.values()) - min(first_prompt.values()) < 40, first_prompt


def trajectory(result: Any) -> list[dict]:
    """The events a run wrote to its trajectory file, as dicts."""
    return [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]


__all__ = [
    "FIND_NEEDLE", "HAYSTACK_NEEDLE", "assert_context_stays_out_of_the_prompt", "haystack", "isolated_runner",
    "run_scripted", "trajectory",
]
