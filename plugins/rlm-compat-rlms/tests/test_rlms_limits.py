"""Limits end a completion as in the authors' package: with their exception, carrying the partial answer (the
root model's last non-empty reply) — enforced by rlm's budget underneath. And the limits rlms does not have (a
run's wall clock, a code block's, a count of sub-calls) are not imposed, unless the user configured them for rlm."""

from __future__ import annotations

import threading

import pytest

from rlm_compat_rlms import (
    RLM,
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    TimeoutExceededError,
    TokenLimitExceededError,
)
from rlm_compat_rlms.utils.exceptions import RunFailedError
from rlm_host.sdk.embedding import ActiveRuns
from rlm_host.testing import openai_answer as answer

SLOW = "Waiting.\n```repl\nimport time\ntime.sleep(5)\n```"
FAILING = "Trying.\n```repl\nprint(undefined_name)\n```"


def make(server, kwargs_for, **options):
    return RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process", **options)


def test_max_timeout_raises_with_the_partial_answer(server, kwargs_for):
    server.push(answer(SLOW))
    with pytest.raises(TimeoutExceededError) as raised:
        make(server, kwargs_for, max_timeout=1.0).completion("ctx", "q")
    error = raised.value
    assert error.timeout == 1.0 and 1.0 <= error.elapsed < 5 and error.partial_answer == SLOW


def test_max_tokens_raises_with_the_count(server, kwargs_for):
    server.push(answer(FAILING), answer(FAILING), answer(FAILING))  # 11 + 7 tokens a call
    with pytest.raises(TokenLimitExceededError) as raised:
        make(server, kwargs_for, max_tokens=30).completion("ctx", "q")
    assert (raised.value.tokens_used, raised.value.token_limit, raised.value.partial_answer) == (36, 30, FAILING)


def test_max_budget_raises_with_what_was_spent(server, kwargs_for, rlm_isolated, monkeypatch):
    (rlm_isolated.work / "rlm.toml").write_text('[[prices]]\nmodel = "openai:root-model"\ninput = 1000.0\n'
                                                'output = 1000.0\n')  # $0.018 a call
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")
    server.push(answer(FAILING), answer(FAILING), answer(FAILING))
    with pytest.raises(BudgetExceededError) as raised:
        make(server, kwargs_for, max_budget=0.03).completion("ctx", "q")
    assert raised.value.budget == 0.03 and raised.value.spent == pytest.approx(0.036)


def test_max_errors_raises_after_that_many_failing_iterations_in_a_row(server, kwargs_for):
    server.push(answer(FAILING), answer("```repl\nprint('fine')\n```"), answer(FAILING), answer(FAILING))
    with pytest.raises(ErrorThresholdExceededError) as raised:
        make(server, kwargs_for, max_errors=2).completion("ctx", "q")
    error = raised.value
    assert (error.error_count, error.threshold) == (2, 2) and "undefined_name" in error.last_error
    assert error.partial_answer == FAILING and len(server.requests) == 4  # the success in between reset the count


def test_a_cancelled_run_raises_cancellation_with_the_partial_answer(server, kwargs_for, rlm_isolated):
    server.push(answer(SLOW))

    def cancel_soon(depth: int, iteration: int) -> None:  # once the slow code runs, as `rlm runs cancel` would
        threading.Timer(0.5, lambda: ActiveRuns().cancel_all()).start()

    with pytest.raises(CancellationError) as raised:
        make(server, kwargs_for, on_iteration_start=cancel_soon).completion("ctx", "q")
    assert raised.value.partial_answer == SLOW


def test_no_wall_clock_step_or_sub_call_limit_unless_given(servers, kwargs_for, trajectory_of):
    root, sub = servers
    batch = ("```repl\nreplies = llm_query_batched(['item ' + str(i) for i in range(60)])\n"
             "answer['content'] = str(len(replies))\nanswer['ready'] = True\n```")
    root.push(answer(batch))
    sub.push(*[answer("ok") for _ in range(60)])
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(root), other_backends=["openai"],
              other_backend_kwargs=[kwargs_for(sub, "sub-model")], environment="process")
    completion = rlm.completion("ctx", "Ask about 60 items.")
    assert completion.response == "60" and len(sub.requests) == 60  # rlm's default cap is 50 sub-calls
    assert completion.usage_summary.model_usage_summaries["sub-model"].total_calls == 60
    settings = trajectory_of(completion.run)[0]["data"]["settings"]
    assert settings["timeout"] >= 365 * 24 * 3600 and settings["exec_timeout"] >= 365 * 24 * 3600
    assert settings["max_llm_calls"] >= 10**9


def test_a_limit_the_user_configured_for_rlm_still_applies(server, kwargs_for, monkeypatch, trajectory_of):
    monkeypatch.setenv("RLM_RUN__MAX_LLM_CALLS", "3")
    server.push(answer(SUBMIT := "```repl\nanswer['content'] = 'x'\nanswer['ready'] = True\n```"))
    completion = make(server, kwargs_for).completion("ctx", "q")
    settings = trajectory_of(completion.run)[0]["data"]["settings"]
    assert settings["max_llm_calls"] == 3 and completion.response == "x"
    assert trajectory_of(completion.run)[0]["data"]["settings_sources"]["max_llm_calls"] == "env RLM_RUN__MAX_LLM_CALLS"


def test_an_error_that_is_no_limit_is_run_failed_with_the_trajectory(server, kwargs_for):
    server.push()  # nothing queued: the server answers 418, a model error
    with pytest.raises(RunFailedError, match="418") as raised:
        make(server, kwargs_for).completion("ctx", "q")
    assert raised.value.run.termination_reason == "error" and raised.value.run.trajectory_path
