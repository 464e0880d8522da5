"""``BaseLM``: the client interface of the authors' package (``rlm.clients.base_lm``). A client answers a prompt
(a string, or a list of ``{"role", "content"}`` messages) and keeps its usage.

Any object with this interface can stand behind an ``RLM``: return it from ``rlm_compat_rlms.core.rlm.get_client``
(the seam the authors' tests patch) and every model call of the run goes through it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

from rlm_compat_rlms.core.types import ModelUsageSummary, UsageSummary

#: Seconds one model request may take unless ``backend_kwargs["timeout"]`` says otherwise (rlms' default).
DEFAULT_TIMEOUT: float = 300.0


class BaseLM(ABC):
    """A model client: ``completion`` / ``acompletion``, and its usage (all calls, and the last one)."""

    def __init__(self, model_name: Optional[str], timeout: float = DEFAULT_TIMEOUT,
                 sampling_args: Optional[dict[str, Any]] = None, **kwargs: Any):
        self.model_name = model_name
        self.timeout = timeout
        self.sampling_args: dict[str, Any] = dict(sampling_args or {})
        self.kwargs = kwargs

    @abstractmethod
    def completion(self, prompt: Any) -> str:
        """The model's answer to ``prompt``."""

    @abstractmethod
    async def acompletion(self, prompt: Any) -> str:
        """``completion`` for asyncio."""

    @abstractmethod
    def get_usage_summary(self) -> UsageSummary:
        """Calls, tokens and cost of every completion so far."""

    @abstractmethod
    def get_last_usage(self) -> ModelUsageSummary:
        """Calls, tokens and cost of the last completion."""


__all__ = ["BaseLM", "DEFAULT_TIMEOUT"]
