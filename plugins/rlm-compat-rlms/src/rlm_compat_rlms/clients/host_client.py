"""``HostClient``: the client ``get_client`` returns by default — an authors'-style ``BaseLM`` whose calls go
through an rlm model connector (rlm's providers: retries, prices, redaction, reply formats).

Its connector is built on first use: by ``RLM`` with the run's plugin host and settings (so ``[provider.NAME]`` and
prices apply), or, when code calls the client by itself, with settings loaded as ``rlm`` loads them. A run uses
the connector directly; ``completion`` is for code that calls the client itself, as rlms' clients are called."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional

from rlm_compat_rlms.clients.backends import backend_named, check_kwargs, provider_connector, service_connector
from rlm_compat_rlms.clients.base_lm import DEFAULT_TIMEOUT, BaseLM
from rlm_compat_rlms.core.types import ModelUsageSummary, UsageSummary, added


class HostClient(BaseLM):
    """``backend`` and its ``backend_kwargs`` (checked now: a TypeError names what cannot be used)."""

    def __init__(self, backend: str, backend_kwargs: Optional[dict[str, Any]] = None) -> None:
        self.backend = backend_named(backend)
        kwargs = dict(backend_kwargs or {})
        check_kwargs(self.backend, kwargs, f"backend_kwargs for {backend!r}")
        super().__init__(kwargs.get("model_name"), timeout=kwargs.get("timeout") or DEFAULT_TIMEOUT,
                         sampling_args=kwargs.get("sampling_args"))
        self.backend_kwargs = kwargs
        self._connector: Any = None
        self._lock = threading.Lock()
        self._usage = ModelUsageSummary(0, 0, 0)
        self._last = ModelUsageSummary(0, 0, 0)

    def connector(self, host: Any = None, settings: Any = None, home: Any = None) -> Any:
        """The rlm connector behind this client, built once: with ``host`` / ``settings`` / ``home`` when a run
        gives them, else with the installed plugins and the settings ``rlm`` would load here."""
        with self._lock:
            if self._connector is None:
                if self.backend.service:
                    connector = service_connector(self.backend, self.backend_kwargs)
                else:
                    if host is None:
                        from rlm_host.sdk.embedding import RLMRunner

                        runner = RLMRunner()
                        host, settings, home = runner.host, runner.loaded, runner.home
                    connector = provider_connector(self.backend, self.backend_kwargs, host, settings, home)
                self._connector = RequestTimeout(connector, self.backend_kwargs.get("timeout"))
                self.timeout = self._connector.seconds or self.timeout
                if not self.model_name:  # rlm's configured model: named by what was resolved
                    self.model_name = connector.name.partition(":")[2] or connector.name
            return self._connector

    def completion(self, prompt: Any) -> str:
        """One call with ``prompt`` (a string is one user message); the answer's text."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        answer = self.connector().complete(messages)
        last = ModelUsageSummary(1, answer.input_tokens, answer.output_tokens, answer.cost)
        with self._lock:
            self._last, self._usage = last, added(self._usage, last)
        return answer.text or ""

    async def acompletion(self, prompt: Any) -> str:
        return await asyncio.to_thread(self.completion, prompt)

    def get_usage_summary(self) -> UsageSummary:
        return UsageSummary({str(self.model_name or self.backend.name): self._usage})

    def get_last_usage(self) -> ModelUsageSummary:
        return self._last


class RequestTimeout:
    """A connector whose requests each wait at most its own timeout (``backend_kwargs["timeout"]``, else the
    connector's, from ``[provider.NAME] timeout``): rlm passes the run's remaining time, and a run of this layer may
    have no wall-clock limit, as in rlms. Everything else is the connector's."""

    def __init__(self, connector: Any, seconds: Optional[float]) -> None:
        self._connector = connector
        self.seconds: Optional[float] = seconds or getattr(connector, "timeout", None)

    def complete(self, messages: list, *, timeout: Optional[float] = None, **kwargs: Any) -> Any:
        if self.seconds is not None:
            timeout = self.seconds if timeout is None else min(timeout, self.seconds)
        return self._connector.complete(messages, timeout=timeout, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connector, name)


__all__ = ["HostClient", "RequestTimeout"]
