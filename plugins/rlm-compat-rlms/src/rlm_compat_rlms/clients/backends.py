"""The authors' backends as rlm model connectors: which rlm provider serves each one, what its ``backend_kwargs``
may hold, and the connection each gets.

- ``openai``, ``anthropic``, ``gemini``, ``openrouter``, ``vllm``: rlm's providers of those names (``vllm`` and
  ``openrouter`` from rlm-provider-compatible), with their retries, prices and settings (``[provider.NAME]``);
  ``litellm`` (not an rlms backend; earlier versions of this layer took it): rlm's ``openai`` provider, a
  ``provider/model`` name taken as it is.
- ``vercel`` (Vercel AI Gateway), ``azure_openai`` (Azure OpenAI's OpenAI-compatible ``/openai/v1`` endpoint) and
  ``portkey`` (Portkey's gateway): OpenAI-compatible services, served by rlm's ``openai`` connector with the
  service's URL, key variable and authentication header (Portkey's key in ``x-portkey-api-key``, never forwarded
  as a bearer token; Azure's in ``api-key`` and as the bearer token its v1 endpoint takes).

A key goes only to its own backend's connector: ``api_key`` in ``backend_kwargs`` (else the backend's usual
variable), never into the environment. ``sampling_args`` may set ``temperature``, ``top_p``, ``seed`` and
``max_tokens``; rlm's connectors send nothing else, so any other key is refused by name rather than dropped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # the connector classes load with the first model call, not with ``import rlm``
    from rlm_host.sdk.models import ModelConnector, ModelOptions


@dataclass(frozen=True)
class Backend:
    """One backend: the rlm provider behind it, or (``service``) an OpenAI-compatible service this layer connects."""

    name: str
    provider: str = "openai"
    service: bool = False
    base_url: str = ""  # a service's default URL
    key_env: str = ""  # the variable holding a service's key when ``api_key`` is not given
    extra_kwargs: tuple[str, ...] = ()  # backend_kwargs this backend takes besides the common ones


BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend("openai", "openai"),
        Backend("anthropic", "anthropic"),
        Backend("gemini", "gemini"),
        Backend("openrouter", "openrouter"),
        Backend("vllm", "vllm"),
        Backend("litellm", "openai"),
        Backend("vercel", service=True, base_url="https://ai-gateway.vercel.sh/v1", key_env="AI_GATEWAY_API_KEY"),
        Backend("portkey", service=True, base_url="https://api.portkey.ai/v1", key_env="PORTKEY_API_KEY"),
        Backend("azure_openai", service=True, key_env="AZURE_OPENAI_API_KEY",
                extra_kwargs=("azure_endpoint", "api_version", "azure_deployment")),
    )
}
#: What every backend's kwargs may hold.
COMMON_KWARGS = ("model_name", "api_key", "base_url", "timeout", "max_retries", "sampling_args")
#: The sampling arguments rlm's connectors send.
SAMPLING_ARGS = ("temperature", "top_p", "seed", "max_tokens")


def backend_named(name: Any) -> Backend:
    """The backend called ``name``; a ValueError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"Unknown backend: {name!r}. Supported backends: {', '.join(BACKENDS)}")
    return BACKENDS[name]


def check_kwargs(backend: Backend, kwargs: dict[str, Any], where: str = "backend_kwargs") -> None:
    """A TypeError naming what ``kwargs`` hold that ``backend`` cannot use (and ``check_named``)."""
    if not isinstance(kwargs, dict):
        raise TypeError(f"{where} must be a dict, not {type(kwargs).__name__}")
    allowed = COMMON_KWARGS + backend.extra_kwargs
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise TypeError(f"{where} for backend {backend.name!r}: {', '.join(unknown)} not supported by rlm_compat_rlms "
                        f"(supported: {', '.join(allowed)})")
    sampling = kwargs.get("sampling_args") or {}
    if not isinstance(sampling, dict):
        raise TypeError(f"{where}['sampling_args'] must be a dict")
    unsent = sorted(set(sampling) - set(SAMPLING_ARGS))
    if unsent:
        raise TypeError(f"{where}['sampling_args']: {', '.join(unsent)} not supported by rlm_compat_rlms (rlm's "
                        f"connectors send {', '.join(SAMPLING_ARGS)})")
    check_named(kwargs, where)


def check_named(kwargs: dict[str, Any], where: str = "backend_kwargs") -> None:
    """A TypeError for a key or URL given with no model named: it would go to whichever model rlm is
    configured with, which may be another service's."""
    named = kwargs.get("model_name") or kwargs.get("azure_deployment")
    secrets = sorted(k for k in ("api_key", "base_url") if kwargs.get(k) is not None)
    if secrets and not named:
        raise TypeError(f"{where} has {' and '.join(secrets)} but no model_name")


def options_of(kwargs: dict[str, Any]) -> "ModelOptions":
    """The connection options of a backend's kwargs: its key and URL, timeout, retries and sampling."""
    from rlm_host.sdk.models import ModelOptions

    sampling = dict(kwargs.get("sampling_args") or {})
    given = {"api_key": kwargs.get("api_key"), "base_url": kwargs.get("base_url"), "timeout": kwargs.get("timeout"),
             "max_retries": kwargs.get("max_retries"), **sampling}
    return ModelOptions(**{name: value for name, value in given.items() if value is not None})


def model_string(backend: Backend, kwargs: dict[str, Any]) -> str:
    """rlm's ``provider:model`` for a provider backend (``auto``, the configured model, when none is named)."""
    name = kwargs.get("model_name")
    if not name:
        return "auto"
    if backend.name == "litellm" and "/" in name:
        return name  # litellm's provider/model: rlm's model strings take that spelling
    return f"{backend.provider}:{name}"


def service_connector(backend: Backend, kwargs: dict[str, Any], environ: Optional[dict[str, str]] = None) -> Any:
    """The connector of an OpenAI-compatible service backend (vercel, portkey, azure_openai)."""
    from rlm_host import ModelError

    env = os.environ if environ is None else environ
    key = kwargs.get("api_key") or env.get(backend.key_env)
    if not key:
        raise ModelError(f"no API key for {backend.name}: pass backend_kwargs['api_key'] or set {backend.key_env}")
    model = kwargs.get("model_name")
    base_url = kwargs.get("base_url") or backend.base_url
    if backend.name == "azure_openai":
        model = kwargs.get("azure_deployment") or env.get("AZURE_OPENAI_DEPLOYMENT") or model
        endpoint = kwargs.get("azure_endpoint") or env.get("AZURE_OPENAI_ENDPOINT") or kwargs.get("base_url")
        if not endpoint:
            raise ModelError("azure_openai needs its endpoint: backend_kwargs['azure_endpoint'] or "
                             "AZURE_OPENAI_ENDPOINT (https://RESOURCE.openai.azure.com)")
        endpoint = endpoint.rstrip("/")
        base_url = endpoint if endpoint.endswith("/openai/v1") else f"{endpoint}/openai/v1"
    if not model:
        raise ModelError(f"{backend.name}: name the model (backend_kwargs['model_name'])")
    options = options_of({**kwargs, "api_key": key, "base_url": base_url})
    return _service_class()(backend.name, model, options)


_SERVICE_CLASS: Any = None


def _service_class() -> Any:
    """``ServiceConnector``, defined on first use (its base class imports httpx-side code)."""
    global _SERVICE_CLASS
    if _SERVICE_CLASS is not None:
        return _SERVICE_CLASS
    from rlm_host import ModelError
    from rlm_host.sdk.models import OpenAIConnector

    class ServiceConnector(OpenAIConnector):
        """rlm's openai connector for one service: named after it, with the service's authentication header, and
        the key scrubbed from any error a server's reply could have put it in."""

        def __init__(self, service: str, model: str, options: "ModelOptions") -> None:
            super().__init__(model, options, {"base_url": options.base_url})
            self.service = service
            self.name = f"{service}:{model}"
            self.provider = service

        def client_arguments(self) -> dict[str, Any]:
            return {**super().client_arguments(), "service": self.service}

        def build_client(self, arguments: dict[str, Any]) -> Any:
            client = super().build_client({k: v for k, v in arguments.items() if k != "service"})
            if self.service == "portkey":  # Portkey's own key header; a bearer token would go on to the provider
                del client.headers["Authorization"]
                client.headers["x-portkey-api-key"] = arguments["api_key"]
            elif self.service == "azure_openai":
                client.headers["api-key"] = arguments["api_key"]
            return client

        def complete(self, messages: list, **kwargs: Any) -> Any:
            try:
                return super().complete(messages, **kwargs)
            except ModelError as exc:
                key = self.options.api_key or ""
                if key and key in str(exc):
                    raise ModelError(str(exc).replace(key, "[key]"), hint=exc.hint.replace(key, "[key]")) from None
                raise

    _SERVICE_CLASS = ServiceConnector
    return ServiceConnector


def provider_connector(backend: Backend, kwargs: dict[str, Any], host: Any, settings: Any,
                       home: Any) -> "ModelConnector":
    """The connector of a provider backend, built by rlm's provider plugin as a run builds one."""
    from rlm_host.sdk.models import resolve_connector

    return resolve_connector(model_string(backend, kwargs), host=host, settings=settings, options=options_of(kwargs),
                             home=home)


__all__ = ["BACKENDS", "Backend", "backend_named", "check_kwargs", "check_named", "options_of", "model_string",
           "service_connector", "provider_connector"]
