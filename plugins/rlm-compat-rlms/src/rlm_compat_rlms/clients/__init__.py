"""The authors' ``rlm.clients``: ``get_client(backend, backend_kwargs)`` and the client interface ``BaseLM``.

``get_client`` returns a ``HostClient`` (rlm's providers behind the authors' client interface). ``RLM`` asks for
its clients through ``rlm_compat_rlms.core.rlm.get_client`` at every completion, so replacing that function (as
the authors' tests patch it) puts any ``BaseLM``-like client behind every model call of a run."""

from __future__ import annotations

from typing import Any, Optional

from rlm_compat_rlms.clients.base_lm import BaseLM


def get_client(backend: str, backend_kwargs: Optional[dict[str, Any]]) -> BaseLM:
    """The client of ``backend`` with ``backend_kwargs`` (``model_name``, ``api_key``, ``base_url``…); a
    ValueError names the backends, a TypeError what the kwargs hold that cannot be used."""
    from rlm_compat_rlms.clients.host_client import HostClient

    return HostClient(backend, backend_kwargs)


__all__ = ["BaseLM", "get_client"]
