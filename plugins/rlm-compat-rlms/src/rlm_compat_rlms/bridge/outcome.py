"""How a run ends for the caller, as in rlms: an answer is an ``RLMChatCompletion``; a limit is the exception of
``rlm_compat_rlms.utils.exceptions`` carrying the partial answer (the root model's last non-empty reply).

rlm ends a run on a limit with a termination reason; here each reason becomes rlms' exception: ``timeout`` →
``TimeoutExceededError``; ``budget`` → ``TokenLimitExceededError`` when the tokens reached ``max_tokens``, else
``BudgetExceededError``; ``cancelled`` → ``CancellationError``; ``max_errors`` → ``ErrorThresholdExceededError``.
Turns used up give the answer one more call made (rlms' default answer). Any other error is ``RunFailedError``."""

from __future__ import annotations

from typing import Any, Optional

from rlm_compat_rlms.core.types import ModelUsageSummary, RLMChatCompletion, UsageSummary, added
from rlm_compat_rlms.utils.exceptions import (
    BudgetExceededError,
    CancellationError,
    ErrorThresholdExceededError,
    RunFailedError,
    TimeoutExceededError,
    TokenLimitExceededError,
)


def usage_summary(result: Any, root_model: str, sub_model: str) -> UsageSummary:
    """The run's usage per model name (the sub-calls and child runs count under the sub-model)."""
    summaries: dict[str, ModelUsageSummary] = {}
    for name, part in ((root_model, result.usage.root), (sub_model, result.usage.sub)):
        if part.calls:
            usage = ModelUsageSummary(part.calls, part.input_tokens, part.output_tokens, part.cost)
            summaries[name] = added(summaries[name], usage) if name in summaries else usage
    return UsageSummary(summaries)


def outcome(result: Any, *, prompt: Any, root_model: str, usage: UsageSummary, seconds: float,
            partial_answer: Optional[str], error_streak: Any, limits: Any,
            metadata: Optional[dict[str, Any]]) -> RLMChatCompletion:
    """The completion of a finished run, or the exception its ending calls for (``limits``: the run's settings)."""
    reason = result.termination_reason
    if result.final_response is not None and reason in ("final", "max_steps", "max_llm_calls"):
        return RLMChatCompletion(root_model=root_model, prompt=prompt, response=result.final_response,
                                 usage_summary=usage, execution_time=seconds, metadata=metadata,
                                 run=result)
    detail = result.error or reason
    if reason == "timeout":
        raise TimeoutExceededError(result.duration_s, limits.timeout, partial_answer,
                                   f"Timeout exceeded: {detail}")
    if reason == "budget":
        tokens = usage.total_input_tokens + usage.total_output_tokens
        if limits.max_tokens is not None and tokens >= limits.max_tokens:
            raise TokenLimitExceededError(tokens, limits.max_tokens, partial_answer, f"Token limit exceeded: {detail}")
        raise BudgetExceededError(result.cost or 0.0, limits.max_cost or 0.0, f"Budget exceeded: {detail}")
    if reason == "cancelled":
        raise CancellationError(partial_answer, f"Execution cancelled: {detail}")
    if reason == "error" and error_streak is not None:
        raise ErrorThresholdExceededError(error_streak.count, error_streak.threshold, error_streak.last_error,
                                          partial_answer, f"Error threshold exceeded: {detail}")
    raise RunFailedError(f"the run ended without an answer ({reason}): {detail} (trajectory: "
                         f"{result.trajectory_path})", result, partial_answer)


__all__ = ["outcome", "usage_summary"]
