"""``RLM``: the authors' class (``rlm.core.rlm.RLM``, rlms 0.1.3) — every argument of its constructor, ``completion``,
``close`` and ``with RLM(...) as rlm`` — running on rlm's engine.

Each ``completion(prompt, root_prompt)`` is an rlm run of the ``rlms`` environment (the authors' loop: ``answer``
dict, ``context_N`` / ``history_N``, their ``rlm_query``) in an rlm sandbox, recorded in ``.rlm/runs`` and sent to
the configured sinks, under rlm's budget. Its models are the clients ``get_client`` — looked up here, at each
completion, as rlms does — returns for ``backend`` and ``other_backends[0]``: rlm's providers by default, any
``BaseLM``-like client when that function is replaced. The README of rlm-compat-rlms has a table of every
argument and what it does here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Optional

from rlm_compat_rlms.clients import get_client
from rlm_compat_rlms.clients.backends import backend_named, check_named
from rlm_compat_rlms.core.types import ModelUsageSummary, RLMChatCompletion, RLMMetadata, UsageSummary
from rlm_compat_rlms.logger import RLMLogger, VerbosePrinter

#: Words that mark a setting as a secret: such keys are left out of the logged configuration.
SECRET_WORDS = ("key", "secret", "token", "password")


class RLM:
    """A Recursive Language Model with the authors' constructor; see the module docstring."""

    def __init__(
        self,
        backend: str = "openai",
        backend_kwargs: Optional[dict[str, Any]] = None,
        environment: str = "local",
        environment_kwargs: Optional[dict[str, Any]] = None,
        depth: int = 0,
        max_depth: int = 1,
        max_iterations: int = 30,
        max_budget: Optional[float] = None,
        max_timeout: Optional[float] = None,
        max_tokens: Optional[int] = None,
        max_errors: Optional[int] = None,
        custom_system_prompt: Optional[str] = None,
        other_backends: Optional[list[str]] = None,
        other_backend_kwargs: Optional[list[dict[str, Any]]] = None,
        logger: Optional[RLMLogger] = None,
        verbose: bool = False,
        persistent: bool = False,
        custom_tools: Optional[dict[str, Any]] = None,
        custom_sub_tools: Optional[dict[str, Any]] = None,
        compaction: bool = False,
        compaction_threshold_pct: float = 0.85,
        max_concurrent_subcalls: int = 4,
        on_subcall_start: Optional[Callable[[int, str, str], None]] = None,
        on_subcall_complete: Optional[Callable[[int, str, float, Optional[str]], None]] = None,
        on_iteration_start: Optional[Callable[[int, int], None]] = None,
        on_iteration_complete: Optional[Callable[[int, int, float], None]] = None,
        sampling_args: Optional[dict[str, Any]] = None,
        sub_sampling_args: Optional[dict[str, Any]] = None,
        orchestrator: bool = True,
        user_prologue: Optional[str] = None,
    ) -> None:
        backend_kwargs = dict(backend_kwargs or {})
        if sampling_args is not None:  # as rlms plumbs them: into the backend's kwargs, before any client exists
            backend_kwargs["sampling_args"] = {**(backend_kwargs.get("sampling_args") or {}), **sampling_args}
        if other_backends is not None and len(other_backends) != 1:
            raise ValueError("other_backends takes exactly one backend: the model of the sub-calls (as in rlms)")
        if sub_sampling_args is not None:
            if other_backends is None:
                other_backends, other_backend_kwargs = [backend], [dict(backend_kwargs)]
            kwargs = dict((other_backend_kwargs or [{}])[0] or {})
            kwargs["sampling_args"] = {**(kwargs.get("sampling_args") or {}), **sub_sampling_args}
            other_backend_kwargs = [kwargs]
        backend_named(backend)
        check_named(backend_kwargs, "backend_kwargs")
        if other_backends is not None:
            backend_named(other_backends[0])
            other_backend_kwargs = [dict((other_backend_kwargs or [{}])[0] or {})]
            check_named(other_backend_kwargs[0], "other_backend_kwargs[0]")

        self.backend = backend
        self.backend_kwargs = backend_kwargs
        self.environment_type = environment
        self.environment_kwargs = dict(environment_kwargs or {})
        self.other_backends = other_backends
        self.other_backend_kwargs = other_backend_kwargs
        self.custom_tools = custom_tools
        self.custom_sub_tools = custom_sub_tools if custom_sub_tools is not None else custom_tools
        self.depth, self.max_depth, self.max_iterations = depth, max_depth, max_iterations
        self.max_budget, self.max_timeout = max_budget, max_timeout
        self.max_tokens, self.max_errors = max_tokens, max_errors
        self.system_prompt = custom_system_prompt
        self.compaction, self.compaction_threshold_pct = compaction, compaction_threshold_pct
        self.max_concurrent_subcalls = max_concurrent_subcalls
        self.orchestrator, self.user_prologue = orchestrator, user_prologue
        self.logger = logger
        self.verbose = VerbosePrinter(enabled=verbose)
        self.on_subcall_start, self.on_subcall_complete = on_subcall_start, on_subcall_complete
        self.on_iteration_start, self.on_iteration_complete = on_iteration_start, on_iteration_complete
        self.persistent = persistent
        self._persistent_env: Any = None
        self._noticed = False
        self._plan, self._loaded, self._host = self._rlm_settings()
        self._home = Path(self._loaded.home).expanduser().resolve()  # runs are stored here, whatever the cwd later

        if logger is not None or verbose:
            metadata = RLMMetadata(root_model=self.backend_kwargs.get("model_name") or "unknown", max_depth=max_depth,
                                   max_iterations=max_iterations, backend=backend,
                                   backend_kwargs=_without_secrets(self.backend_kwargs), environment_type=environment,
                                   environment_kwargs=_without_secrets(self.environment_kwargs),
                                   other_backends=other_backends)
            if logger is not None:
                logger.log_metadata(metadata)
            self.verbose.print_metadata(metadata)

    # ------------------------------------------------------------------ the authors' interface

    def completion(self, prompt: Any, root_prompt: Optional[str] = None) -> RLMChatCompletion:
        """Answer ``root_prompt`` (the question; None: the request in ``prompt``) over ``prompt`` (the context: a
        string, a list or a dict). Raises rlms' exceptions when a limit stops the run."""
        from rlm_compat_rlms.bridge.completion import run_completion
        from rlm_compat_rlms.bridge.persistence import PersistentREPL

        _check_prompt(prompt)
        if self.depth >= self.max_depth:
            return self._plain_completion(prompt)
        if self.logger is not None:
            self.logger.clear_iterations()
        root_client = get_client(self.backend, dict(self.backend_kwargs))
        sub_client = root_client
        if self.other_backends:
            sub_client = get_client(self.other_backends[0], dict(self._sub_kwargs))
        if self.persistent and self._persistent_env is None:
            self._persistent_env = PersistentREPL()
        return run_completion(self, prompt, root_prompt, root_client, sub_client)

    def close(self) -> None:
        """Forget what a persistent RLM kept (contexts, conversations, variables)."""
        if self._persistent_env is not None:
            self._persistent_env.cleanup()
            self._persistent_env = None

    def __enter__(self) -> "RLM":
        return self

    def __exit__(self, *exc_info: Any) -> Literal[False]:
        self.close()
        return False

    # ------------------------------------------------------------------ on rlm

    @property
    def _sub_kwargs(self) -> dict[str, Any]:
        """The sub-calls' backend kwargs (``__init__`` sets them with ``other_backends``)."""
        return (self.other_backend_kwargs or [{}])[0]

    @property
    def _root_model(self) -> str:
        return str(self.backend_kwargs.get("model_name") or "unknown")

    def _label(self, role: int) -> str:
        """``backend:model`` of the root (0) or sub (1) client, naming a client that has no name of its own."""
        if role and self.other_backends:
            return f"{self.other_backends[0]}:{self._sub_kwargs.get('model_name') or 'unknown'}"
        return f"{self.backend}:{self._root_model}"

    def _rlm_settings(self) -> tuple[Any, Any, Any]:
        """This RLM's plan, rlm's settings with it applied (bad values fail here, named), and the plugin host."""
        from rlm_host import ConfigError
        from rlm_host.sdk.embedding import RLMRunner, load_settings

        from rlm_compat_rlms.bridge.options import plan_front

        base = RLMRunner()
        plan = plan_front(environment=self.environment_type, environment_kwargs=self.environment_kwargs,
                          persistent=self.persistent, depth=self.depth, max_depth=self.max_depth,
                          max_iterations=self.max_iterations, max_budget=self.max_budget, max_timeout=self.max_timeout,
                          max_tokens=self.max_tokens, max_errors=self.max_errors,
                          custom_system_prompt=self.system_prompt, compaction=self.compaction,
                          compaction_threshold_pct=self.compaction_threshold_pct,
                          max_concurrent_subcalls=self.max_concurrent_subcalls, orchestrator=self.orchestrator,
                          user_prologue=self.user_prologue, custom_tools=self.custom_tools,
                          custom_sub_tools=self.custom_sub_tools,
                          configured=lambda name: base.loaded.source_of(f"run.{name}") != "default")
        host = base.host
        if "rlms" not in [spec.name for spec in host.environments()]:
            raise ConfigError("the rlms environment is not registered: rlm-compat-rlms is installed but not loaded",
                              hint="RLM_PLUGINS must name rlm-compat-rlms when it is set")
        host.sandboxes().get(plan.sandbox)  # a sandbox no plugin provides: named now, with the installed ones
        loaded = load_settings(overrides=plan.overrides, host=host).with_run(plan.run_options, plan.labels)
        return plan, loaded, host

    def _plain_completion(self, prompt: Any) -> RLMChatCompletion:
        """At ``depth >= max_depth`` the RLM is a plain model call (as in rlms; rlms returns the bare text, this
        layer the same ``RLMChatCompletion`` as every completion). Not a run: nothing is recorded."""
        import time

        from rlm_compat_rlms.clients.host_client import HostClient

        client = get_client(self.backend, dict(self.backend_kwargs))
        if isinstance(client, HostClient):
            client.connector(self._host, self._loaded, self._home)
        started = time.perf_counter()
        response = client.completion(prompt)
        last = client.get_last_usage()
        usage = UsageSummary({self._root_model: last} if isinstance(last, ModelUsageSummary) else {})
        return RLMChatCompletion(root_model=self._root_model, prompt=prompt, response=response, usage_summary=usage,
                                 execution_time=time.perf_counter() - started)


def _check_prompt(prompt: Any) -> None:
    """rlms takes a string, a list or a dict as the prompt (its context); so does this layer."""
    if not isinstance(prompt, (str, list, dict)):
        raise ValueError(f"Invalid prompt type: {type(prompt)} (give a str, a list or a dict)")


def _without_secrets(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` as a log may show them: no entry whose name marks a secret, no password in a URL."""
    return {k: _without_password(v) for k, v in kwargs.items() if not any(word in k.lower() for word in SECRET_WORDS)}


def _without_password(value: Any) -> Any:
    """A URL's ``user:password@`` taken out (any other value as it is)."""
    if isinstance(value, str) and "://" in value and "@" in value.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = value.split("://", 1)
        return f"{scheme}://{rest.split('@', 1)[1]}"
    return value


__all__ = ["RLM", "get_client"]
