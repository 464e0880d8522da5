"""The exceptions a completion raises when it stops on a limit, with the constructor arguments and attributes of
the authors' ``rlm.utils.exceptions`` (rlms 0.1.3), so ``except TimeoutExceededError as e: e.partial_answer``
works unchanged. ``partial_answer`` is the root model's last non-empty reply, as there.

``RunFailedError`` is this layer's own: a run that ended on an error rlms would have let through as the client's
or the environment's exception (a model that cannot be reached, a sandbox that cannot start)."""

from __future__ import annotations

from typing import Any, Optional


class BudgetExceededError(Exception):
    """The run spent more than ``max_budget`` (USD)."""

    def __init__(self, spent: float, budget: float, message: Optional[str] = None):
        self.spent = spent
        self.budget = budget
        super().__init__(message or f"Budget exceeded: spent ${spent:.6f} of ${budget:.6f} budget")


class TimeoutExceededError(Exception):
    """The run took longer than ``max_timeout`` seconds."""

    def __init__(self, elapsed: float, timeout: float, partial_answer: Optional[str] = None,
                 message: Optional[str] = None):
        self.elapsed = elapsed
        self.timeout = timeout
        self.partial_answer = partial_answer
        super().__init__(message or f"Timeout exceeded: {elapsed:.1f}s of {timeout:.1f}s limit")


class TokenLimitExceededError(Exception):
    """The run used more than ``max_tokens`` tokens, input and output of every model together."""

    def __init__(self, tokens_used: int, token_limit: int, partial_answer: Optional[str] = None,
                 message: Optional[str] = None):
        self.tokens_used = tokens_used
        self.token_limit = token_limit
        self.partial_answer = partial_answer
        super().__init__(message or f"Token limit exceeded: {tokens_used:,} of {token_limit:,} tokens")


class ErrorThresholdExceededError(Exception):
    """``max_errors`` iterations in a row had code that failed."""

    def __init__(self, error_count: int, threshold: int, last_error: Optional[str] = None,
                 partial_answer: Optional[str] = None, message: Optional[str] = None):
        self.error_count = error_count
        self.threshold = threshold
        self.last_error = last_error
        self.partial_answer = partial_answer
        super().__init__(message or f"Error threshold exceeded: {error_count} consecutive errors (limit: {threshold})")


class CancellationError(Exception):
    """The run was cancelled (Ctrl-C, ``rlm runs cancel``)."""

    def __init__(self, partial_answer: Optional[str] = None, message: Optional[str] = None):
        self.partial_answer = partial_answer
        super().__init__(message or "Execution cancelled by user")


class RunFailedError(RuntimeError):
    """The run ended on an error (``error``: why); ``run`` is rlm's ``RunResult`` (its trajectory path says more)."""

    def __init__(self, error: str, run: Any = None, partial_answer: Optional[str] = None):
        self.error = error
        self.run = run
        self.partial_answer = partial_answer
        super().__init__(error)


__all__ = ["BudgetExceededError", "TimeoutExceededError", "TokenLimitExceededError", "ErrorThresholdExceededError",
           "CancellationError", "RunFailedError"]
