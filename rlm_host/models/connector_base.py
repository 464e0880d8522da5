"""What the provider connectors share: settings validation, retries, timeout and connection failures.

:class:`RetryingConnector` is the base of the connectors that call a remote API through a client library
(``openai`` through httpx, ``anthropic`` and ``gemini`` through their SDKs): it resolves the timeout, the retry
policy and the base URL, holds the lazily built client (one per process for equal construction arguments), and
runs :meth:`RetryingConnector.complete` — the request built by the subclass, sent with
:func:`rlm_host.models.retry.call_with_retries`, then turned into a Completion by the subclass. The functions below
are the helpers every connector needs (in-process ones like ``llamacpp`` too).

Nothing here imports an SDK: importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rlm_host.config.schema import problems
from rlm_host.errors import ConfigError
from rlm_host.models import catalog, loopback
from rlm_host.models.protocol import Completion, Message, ModelOptions, Purpose, ReplyFormat
from rlm_host.models.retry import (Failure, RetryCallback, RetryPolicy, call_with_retries, is_retryable_status,
                                   retry_after_from_headers, status_text)
from rlm_host.threads import run_in_thread

_Settings = TypeVar("_Settings", bound=BaseModel)

#: SDK clients shared by every connector of the process with the same construction arguments: building one
#: (an HTTP client, its TLS context, its connection pool) costs ~10 ms of CPU, which a benchmark running
#: hundreds of short runs would otherwise pay per run; sharing also keeps connections alive between runs. One
#: thread builds each (``_build_locks``): 16 runs starting at once would otherwise build 16 clients, one kept.
_shared_clients: dict[tuple[Any, ...], Any] = {}
_shared_lock = threading.Lock()
_build_locks: dict[tuple[Any, ...], threading.Lock] = {}


class MalformedBody(Exception):
    """The server answered 2xx with a body the SDK could not parse (retried like a transient error)."""


class StatusError(Exception):
    """A non-2xx answer: ``status_code``, the parsed ``body`` (JSON, else its text), the ``response`` (for
    ``Retry-After``), and its error's ``code`` and ``detail`` (``{"error": {"code", "message"}}``, or text)."""

    def __init__(self, response: Any) -> None:
        self.response, self.status_code = response, response.status_code
        try:
            self.body: Any = json.loads(response.content)
        except ValueError:
            self.body = response.text
        error = self.body.get("error", self.body) if isinstance(self.body, dict) else self.body
        self.code = str(error.get("code") or "") if isinstance(error, dict) else ""
        self.detail = str(error.get("message") or "") if isinstance(error, dict) else str(error or "")
        super().__init__(f"HTTP {self.status_code}")


def json_body(response: Any) -> Any:
    """The JSON body of an HTTP answer (httpx's): StatusError for a non-2xx answer, the JSONDecodeError of a JSON
    body cut short (retried as malformed JSON), MalformedBody for a body that is not JSON at all."""
    if response.status_code >= 400:
        raise StatusError(response)
    try:
        return json.loads(response.content)
    except ValueError:
        if "json" in response.headers.get("content-type", ""):
            raise
        raise MalformedBody(f"response body is not JSON: {response.text[:80]!r}") from None


def validate_settings(cls: type[_Settings], settings: _Settings | Mapping[str, Any] | None, section: str) -> _Settings:
    """``settings`` as a ``cls`` (defaults when None); ConfigError naming ``[provider.SECTION]`` when invalid."""
    if isinstance(settings, cls):
        return settings
    try:
        return cls.model_validate(dict(settings or {}))
    except ValidationError as exc:
        raise ConfigError(f"[provider.{section}]: {problems(exc)}") from None


def context_window_of(name: str, windows: Mapping[str, int]) -> int | None:
    """The context window of the longest key of ``windows`` that ``name`` starts with, else None."""
    best = max((p for p in windows if name.startswith(p)), key=len, default=None)
    return windows[best] if best else None


def token_count(value: Any) -> int:
    """A token count, 0 when absent or not a number."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def connection_detail(exc: BaseException) -> tuple[bool, str]:
    """(broken mid-response?, 'connection refused' / 'unknown host' / the innermost cause's message)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 20:
        chain.append(current)
        current = current.__cause__ or current.__context__
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return False, "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return False, "unknown host"
    innermost = chain[-1]
    broken = any(type(e).__name__ in ("RemoteProtocolError", "ReadError") for e in chain)
    return broken, str(innermost) or type(innermost).__name__


def reject_raw_text(response: Any) -> Any:
    """``response``, unless the SDK handed back raw text it could not parse as JSON (then MalformedBody)."""
    if isinstance(response, (str, bytes)):
        raise MalformedBody(f"response body is not JSON: {str(response)[:80]!r}")
    return response


def retry_after_of(exc: Any) -> float | None:
    """The ``Retry-After`` delay of an SDK status error's HTTP response, if any."""
    return retry_after_from_headers(getattr(getattr(exc, "response", None), "headers", None))


class RetryingConnector:
    """Base of the SDK connectors: subclasses implement ``client_arguments``, ``build_client``, ``request``,
    ``send`` and ``_completion`` (``classify`` too, unless they call httpx through :func:`json_body`; ``constrain``
    when they declare ``reply_formats``), and call :meth:`_configure` from their ``__init__``, which sets ``model``,
    ``name``, ``options``, ``settings``, ``context_window``, ``on_retry``, ``timeout``, ``retry_policy`` and
    ``base_url`` (``_custom_base_url`` when one was given).

    ``retry_policy`` replaces the policy built from options and settings (tests use short waits);
    ``on_retry`` is called as ``on_retry(attempt, wait_seconds, reason)`` before each retry.
    """

    #: The ReplyFormat kinds this connector enforces (through :meth:`constrain`); none unless a subclass says so.
    reply_formats: frozenset[str] = frozenset()
    #: For the default :meth:`classify`: the variable named when the key is refused, what to check when the server
    #: cannot be reached, and what a 404 may mean (``{model}``: the model name).
    key_env: str = ""
    connect_hint: str = "check that the server is running and --base-url is right"
    missing_model_hint: str = "is '{model}' a model this server serves?"

    def _configure(self, provider: str, model: str, options: ModelOptions | None,
                   settings: BaseModel | Mapping[str, Any] | None, *, settings_type: type[BaseModel],
                   context_window: int | None, retry_policy: RetryPolicy | None, on_retry: RetryCallback | None,
                   base_url_env: str, default_base_url: str,
                   environ: Mapping[str, str] | None) -> Mapping[str, str]:
        """Set what every SDK connector has and return the environment to read (``os.environ`` when None).

        ``settings`` are validated as ``settings_type`` (``[provider.PROVIDER]``); timeout and max_retries come
        from ``options`` when set explicitly there, else the settings, else the options' defaults; the base URL
        from the options, the settings, ``$BASE_URL_ENV``, else ``default_base_url``; the context window from
        the settings, else genai-prices (:mod:`rlm_host.models.catalog`), else ``context_window`` (the connector's
        own table, for the models genai-prices lacks)."""
        options = options or ModelOptions()
        # Any: each provider's own settings model; every one declares the fields read here
        validated: Any = validate_settings(settings_type, settings, provider)
        env = os.environ if environ is None else environ
        self.model = model
        self.name = f"{provider}:{model}"
        self.options = options
        self.settings = validated
        self.context_window = validated.context_window or catalog.context_window(provider, model) or context_window
        self.on_retry = on_retry

        explicit = options.model_fields_set
        self.timeout = options.timeout if "timeout" in explicit or validated.timeout is None else validated.timeout
        max_retries = options.max_retries if "max_retries" in explicit or validated.max_retries is None \
            else validated.max_retries
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries, max_delay=validated.max_retry_wait)

        self._custom_base_url = options.base_url or validated.base_url or env.get(base_url_env) or None
        self.base_url = (self._custom_base_url or default_base_url).rstrip("/")
        self.max_concurrency: int | None = getattr(validated, "max_concurrency", None)
        self._client: Any = None
        self._lock = threading.Lock()
        return env

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, base_url={self.base_url!r})"

    # -- to implement --------------------------------------------------------------------------------------------

    def client_arguments(self) -> dict[str, Any]:
        """What the SDK client is built from (key, base URL, timeout…): connectors with equal arguments share one
        client, so these must be everything that makes two clients differ."""
        raise NotImplementedError

    def build_client(self, arguments: dict[str, Any]) -> Any:
        """A new SDK client from ``arguments`` (this is where the SDK is imported)."""
        raise NotImplementedError

    def request(self, messages: list[Message], timeout: float) -> dict[str, Any]:
        """The keyword arguments of one SDK call for ``messages``."""
        raise NotImplementedError

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        """One attempt: the SDK call with ``request``."""
        raise NotImplementedError

    def constrain(self, request: dict[str, Any], reply_format: ReplyFormat) -> None:
        """Add ``reply_format`` to ``request`` (called only when ``reply_formats`` holds one of its kinds)."""
        raise NotImplementedError

    def _completion(self, response: Any, seconds: float, attempts: int) -> Completion:
        raise NotImplementedError

    def classify(self, exc: BaseException, timeout: float) -> Failure | None:
        """Map an exception to a retry verdict with a readable message; None for unknown exceptions. This one reads
        those of an ``httpx`` client's call through :func:`json_body` (a connector over an SDK has its own): a
        StatusError goes to :meth:`status_failure`, a connection error gets ``connect_hint``."""
        import httpx

        if isinstance(exc, StatusError):
            return self.status_failure(exc)
        if isinstance(exc, httpx.TimeoutException):
            return self.timeout_failure(timeout)
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
            return Failure(False, f"invalid base URL {self.base_url}: {exc}",
                           hint="e.g. --base-url http://127.0.0.1:8000/v1")
        if isinstance(exc, httpx.TransportError):
            return self.connection_failure(exc, self.connect_hint)
        if isinstance(exc, json.JSONDecodeError):
            return self.malformed_json_failure()
        if isinstance(exc, MalformedBody):
            return self.malformed_failure(exc)
        if isinstance(exc, httpx.HTTPError):
            return Failure(False, f"{type(exc).__name__}: {exc}")
        return None

    def status_failure(self, exc: StatusError) -> Failure:
        """A non-2xx answer's verdict: 401 a refused key (``key_env``), 408, 409, 429 and 5xx retried, any other
        final (``missing_model_hint``, formatted with the model, for a 404)."""
        status, said = exc.status_code, f"the server said: {exc.detail[:200]}" if exc.detail else ""
        if status == 401:
            return self.invalid_key_failure(status, self.key_env, said)
        if is_retryable_status(status):
            return Failure(True, status_text(status), retry_after=retry_after_of(exc))
        return self.final_status_failure(status_text(status), status, exc.detail,
                                         self.missing_model_hint.format(model=self.model))

    # -- shared --------------------------------------------------------------------------------------------------

    def client(self) -> Any:
        """The SDK client, built on first use and shared with every connector of this class whose
        :meth:`client_arguments` are equal (thread-safe: SDK clients are)."""
        with self._lock:
            if self._client is None:
                key, arguments = self._client_key()
                with _shared_lock:
                    building = _build_locks.setdefault(key, threading.Lock())
                with building:  # the first thread builds the client for this key; the others wait for it
                    if key not in _shared_clients:
                        _shared_clients[key] = self.build_client(arguments)
                self._client = _shared_clients[key]
            return self._client

    def _client_key(self) -> tuple[tuple[str, str, str], dict[str, Any]]:
        """The shared-client key of this connector's arguments, and the arguments."""
        arguments = self.client_arguments()
        return (type(self).__module__, type(self).__qualname__, repr(sorted(arguments.items()))), arguments

    def warm_up(self) -> None:
        """Import the client library and build its client in a background thread, so the first call does not wait
        for it (an SDK's import can take most of a second): started at run start, it overlaps with the context
        loading. A client already built for the same arguments (the runs before this one) is taken at once."""
        with self._lock:
            if self._client is None:
                self._client = _shared_clients.get(self._client_key()[0])
            if self._client is not None:
                return

        def build() -> None:
            with contextlib.suppress(Exception):  # the first real call reports what is wrong
                self.client()

        run_in_thread(build, f"warm-up {self.name}")

    def close(self) -> None:
        """Let go of the SDK client (a later call takes the shared one again); the client itself stays open for the
        other connectors sharing it, and closes with the process."""
        with self._lock:
            self._client = None

    def complete(self, messages: list[Message], *, timeout: float | None = None, on_retry: RetryCallback | None = None,
                 purpose: Purpose = "turn", reply_format: ReplyFormat | None = None) -> Completion:
        """Answer ``messages``; retries transient failures and raises one ModelError when they persist.

        A ``reply_format`` is added to the request by :meth:`constrain` when the connector supports one of its
        kinds (``reply_formats``), and ignored otherwise; the completion's ``raw["reply_format"]`` names it then.
        """
        limit = timeout if timeout is not None else self.timeout
        request = self.request(messages, limit)
        enforced = reply_format if reply_format is not None and reply_format.kinds & self.reply_formats else None
        if enforced is not None:
            self.constrain(request, enforced)
        client = self.client()
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return self.send(client, request)

        started = time.monotonic()
        response = call_with_retries(attempt, lambda exc: self.classify(exc, limit), policy=self.retry_policy,
                                     what=self.name, on_retry=on_retry or self.on_retry)
        completion = self._completion(response, time.monotonic() - started, attempts)
        if enforced is not None:
            completion.raw["reply_format"] = enforced.name
        return completion

    def timeout_failure(self, timeout: float) -> Failure:
        return Failure(True, f"no answer from {self.base_url} within {timeout:g} s (timeout)")

    def connection_failure(self, exc: BaseException, hint: str) -> Failure:
        """A connection error: broken mid-response, or the server cannot be reached (with ``hint``); a refused
        connection to this machine is not retried (no server runs there, and waiting will not start one)."""
        broken, detail = connection_detail(exc)
        if broken:
            return Failure(True, f"connection to {self.base_url} broken mid-response: {detail}")
        if detail == "connection refused" and loopback.is_loopback(self.base_url):  # nothing listens: fail fast
            start = loopback.start_hint(self.base_url, self.name)  # in the message too: a run's error keeps no hint
            return Failure(False, f"nothing listens at {self.base_url} (connection refused): {start}", hint=start)
        return Failure(True, f"cannot reach {self.base_url}: {detail}", hint=hint)

    def malformed_json_failure(self) -> Failure:
        return Failure(True, f"malformed JSON in response from {self.base_url} (truncated body?)")

    def malformed_failure(self, exc: BaseException) -> Failure:
        return Failure(True, f"malformed response from {self.base_url}: {exc}")

    def invalid_key_failure(self, status: int, key_help: str, hint: str) -> Failure:
        """401 (or the like): the key was refused; ``key_help`` names the variable to set."""
        where = "" if self._custom_base_url is None else f" for {self.base_url}"
        return Failure(False, f"{status_text(status)}: invalid API key{where} — set {key_help}", hint=hint)

    def final_status_failure(self, status_message: str, status: int, detail: str, hint_404: str) -> Failure:
        """A status that is not retried: its text, the server's message, and ``hint_404`` for a 404."""
        message = status_message + (f": {detail[:300]}" if detail else "")
        return Failure(False, message, hint=hint_404 if status == 404 else "")


__all__ = ["MalformedBody", "RetryingConnector", "StatusError", "connection_detail", "context_window_of", "json_body",
           "reject_raw_text", "retry_after_of", "token_count", "validate_settings"]
