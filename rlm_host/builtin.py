"""The host's own components, registered through the same hooks as any external plugin."""

from __future__ import annotations

from rlm_host.components import (
    BenchmarkPackSpec,
    DoctorCheck,
    EnvironmentSpec,
    ProviderSpec,
    SandboxSpec,
    SinkSpec,
)
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_environments() -> list[EnvironmentSpec]:
    return [
        EnvironmentSpec(
            "pure_rlm",
            "Paper-faithful RLM: context as a REPL variable, llm_query from code, FINAL to finish",
            "rlm_host.environments.pure_rlm.environment:PureRLMEnvironment",
            aliases=("pure-rlm",),
            settings="rlm_host.environments.pure_rlm.environment:PureRLMSettings",
        ),
        EnvironmentSpec(
            "generic",
            "JSON actions run_python / final / delegate with the seeds' reward formula",
            "rlm_host.environments.generic:GenericEnvironment",
            aliases=("rlm",),
            settings="rlm_host.environments.generic:GenericSettings",
        ),
    ]


@hookimpl
def rlm_register_sandboxes() -> list[SandboxSpec]:
    return [
        SandboxSpec(
            "process",
            "A separate Python worker process: crash isolation only, NOT a security boundary (opt-in)",
            "rlm_host.sandbox.process:create",
            settings="rlm_host.sandbox.process:ProcessSettings",
            security_boundary=False,
            isolation="subprocess",
        )
    ]


@hookimpl
def rlm_register_providers() -> list[ProviderSpec]:
    from rlm_host.llm.compatible import provider_specs as compatible_provider_specs

    return [
        ProviderSpec(
            "openai",
            "OpenAI, or any OpenAI-compatible server through OPENAI_BASE_URL / --base-url",
            "rlm_host.llm.openai_provider:create",
            requires=("openai",),
            install_hint="pip install openai",
            settings="rlm_host.llm.openai_provider:ProviderSettings",
            key_env=("OPENAI_API_KEY",),
        ),
        ProviderSpec(
            "scripted",
            "Deterministic replies from a script file (scripted:PATH), for dry runs and tests",
            "rlm_host.llm.scripted:create",
        ),
        ProviderSpec(
            "replay",
            "Answers with the model replies recorded in a saved run (replay:RUN_ID, a prefix, latest or a .jsonl path)",
            "rlm_host.llm.replay_provider:create",
            settings="rlm_host.llm.replay_provider:ReplaySettings",
        ),
        *compatible_provider_specs(),
    ]


@hookimpl
def rlm_register_sinks() -> list[SinkSpec]:
    return [
        SinkSpec(
            "local",
            "Local JSONL files: runs.jsonl and one steps file per run",
            "rlm_host.observability.local_jsonl:create",
            settings="rlm_host.observability.local_jsonl:LocalSinkSettings",
        )
    ]


@hookimpl
def rlm_doctor_checks() -> list[DoctorCheck]:
    return [
        DoctorCheck("python", "Python version supported by rlm-host", "rlm_host.checks:python_version"),
        DoctorCheck("config", "configuration files parse and validate", "rlm_host.checks:config_valid"),
        DoctorCheck("home", "run directory (.rlm or $RLM_HOME) is writable", "rlm_host.checks:home_writable"),
    ]


@hookimpl
def rlm_register_benchmark_packs() -> list[BenchmarkPackSpec]:
    from rlm_host.bench.packs import builtin_pack_specs  # imports only rlm_host.components

    return builtin_pack_specs()
