"""The seam between the authors' clients and rlm's engine: every model call of a run goes to the client
``get_client`` returned for that role.

The default client (``HostClient``) hands over its rlm connector, so a run calls the provider directly. Any
other client — one the caller's ``get_client`` returns, as the authors' tests do with a mock — is wrapped in a
``ClientConnector``: the run's messages go to its ``completion`` and the tokens come from its ``get_last_usage``
(estimated when it reports none). Its failures end the run as model errors, never as an answer."""

from __future__ import annotations

import time
from typing import Any, Optional

from rlm_compat_rlms.clients.host_client import HostClient


def connector_of(client: Any, label: str, host: Any, settings: Any, home: Any) -> Any:
    """The connector a run uses for ``client`` (``label``: ``backend:model``, naming a client that has no name)."""
    if isinstance(client, HostClient):
        return client.connector(host, settings, home)
    if not callable(getattr(client, "completion", None)):
        raise TypeError(f"get_client returned {type(client).__name__}, which has no completion(prompt) method")
    return ClientConnector(client, label)


class ClientConnector:
    """An authors'-style client as an rlm model connector (``complete(messages, ...) -> Completion``)."""

    context_window: Optional[int] = None

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self.provider = name.partition(":")[0] or "rlms"

    def complete(self, messages: list, *, timeout: Optional[float] = None, on_retry: Any = None,
                 purpose: str = "turn", reply_format: Any = None) -> Any:
        from rlm_host import ModelError
        from rlm_host.sdk.models import Completion, estimate_tokens

        started = time.monotonic()
        try:
            text = self.client.completion([dict(message) for message in messages])
        except Exception as exc:  # the client's own failure: the run records it and ends
            raise ModelError(f"{self.name}: the client's completion failed: {type(exc).__name__}: {exc}") from None
        text = text if text is None or isinstance(text, str) else str(text)
        sent = "\n".join(str(message.get("content", "")) for message in messages)
        used_in, used_out = _last_usage(self.client)
        return Completion(text=text, model=self.name, seconds=time.monotonic() - started,
                          input_tokens=used_in if used_in is not None else estimate_tokens(sent),
                          output_tokens=used_out if used_out is not None else estimate_tokens(text or ""))


def _last_usage(client: Any) -> tuple[Optional[int], Optional[int]]:
    """(input, output) tokens of the client's last call, from ``get_last_usage`` (a ``ModelUsageSummary`` or a
    ``UsageSummary``); None where it gives no count."""
    try:
        usage = client.get_last_usage()
    except Exception:
        return None, None
    return _count(getattr(usage, "total_input_tokens", None)), _count(getattr(usage, "total_output_tokens", None))


def _count(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


__all__ = ["ClientConnector", "connector_of"]
