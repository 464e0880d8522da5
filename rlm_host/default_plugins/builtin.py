"""The host's built-in components, registered like any plugin's, and so refused like them on a clash: the environment
``pure_rlm``, the paper's loop (the default; the others are plugins); the sub-commands of ``rlm``; the sandbox
``process``, the zero-dependency reference runtime (crash isolation, not a boundary); the providers ``openai``
(OpenAI, or any OpenAI-compatible server through its base URL) and ``scripted`` (replies from a script, for dry runs
and tests) — the OpenAI-compatible services by name (ollama, groq…) are the rlm-provider-compatible plugin; the
context loaders ``json``, ``jsonl`` and ``text`` (other formats, PDF, DOCX, HTML…, are plugins registering their own);
the doctor checks of the Python version, the configuration files and the run home. Saved runs (``rlm runs``,
``rlm replay``, the ``replay`` provider, the ``json`` exporter) are the rlm-runs plugin.
"""

from __future__ import annotations

from rlm_host.components import (CommandSpec, ContextLoaderSpec, DoctorCheck, EnvironmentSpec, ProviderSpec,
                                  SandboxSpec)
from rlm_host.hookspecs import hookimpl

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


@hookimpl
def rlm_register_environments() -> list[EnvironmentSpec]:
    return [
        EnvironmentSpec("pure_rlm", "Paper-faithful RLM: context as a REPL variable, llm_query from code, FINAL to "
                        "finish", "rlm_host.environments.pure_rlm.environment:PureRLMEnvironment",
                        aliases=("pure-rlm",),
                        settings="rlm_host.environments.pure_rlm.environment:PureRLMSettings", context_on_disk=True),
    ]


@hookimpl
def rlm_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec("run", "Run a task with an RLM over a context (file, directory or stdin).",
                    "rlm_host.cli.run_cmd:run"),
        CommandSpec("chat", "Talk with an RLM about a context: turns keep variables and history; resumable.",
                    "rlm_host.cli.chat_cmd:chat"),
        CommandSpec("models", "List model providers, their keys and readiness, and what auto picks.",
                    "rlm_host.cli.models_cmd:app"),
        CommandSpec("frameworks", "List frameworks (--framework), their mode and readiness.",
                    "rlm_host.cli.frameworks_cmd:app"),
        CommandSpec("plugins", "List installed plugins and check their readiness.", "rlm_host.cli.plugins_cmd:app"),
        CommandSpec("config", "Show the effective settings and where each came from; trust a project's config.",
                    "rlm_host.cli.config_cmd:app")]


@hookimpl
def rlm_register_sandboxes() -> list[SandboxSpec]:
    # isolation: as ProcessSandbox.info says (SandboxContract checks it; that module is not imported at start);
    # workspace: the working directory only, writes are not confined to it
    return [SandboxSpec("process", "A separate Python worker process: crash isolation only, NOT a security boundary "
                        "(opt-in)", "rlm_host.sandbox.process:create", security_boundary=False, workspace=True,
                        settings="rlm_host.sandbox.process:ProcessSettings", isolation="separate OS process: crash "
                        "isolation only, NOT a security boundary (same user, same filesystem, network not blocked)")]


@hookimpl
def rlm_register_providers() -> list[ProviderSpec]:
    return [
        ProviderSpec("openai", "OpenAI, or any OpenAI-compatible server through OPENAI_BASE_URL / [provider.openai] "
                     "base_url", "rlm_host.models.openai_provider:create", requires=("httpx",),
                     install_hint="pip install httpx", settings="rlm_host.models.openai_provider:ProviderSettings",
                     key_env=("OPENAI_API_KEY",), base_url=OPENAI_DEFAULT_BASE_URL, base_url_env="OPENAI_BASE_URL",
                     example_model="gpt-4o-mini", default_model="gpt-4o-mini", price_id="openai",
                     auto_priority=100),  # a configured OpenAI(-compatible) endpoint wins over other keys
        ProviderSpec("scripted", "Deterministic replies from a script file (scripted:PATH), for dry runs and tests",
                     "rlm_host.models.scripted:create", key_optional=True, example_model="replies.json",
                     model_files=True, local=True)]  # local: free


@hookimpl
def rlm_register_context_loaders() -> list[ContextLoaderSpec]:
    return [
        ContextLoaderSpec("json", "A .json file as the JSON value it holds", "rlm_host.context:JsonLoader",
                          suffixes=(".json",)),
        ContextLoaderSpec("jsonl", "A JSON Lines file as the list of values its lines hold",
                          "rlm_host.context:JsonLinesLoader", suffixes=(".jsonl", ".ndjson")),
        ContextLoaderSpec("text", "Any other text file as its text (UTF-8, undecodable bytes replaced)",
                          "rlm_host.context:TextLoader", priority=-100)]


@hookimpl
def rlm_register_doctor_checks() -> list[DoctorCheck]:
    return [DoctorCheck("python", "Python version supported by rlm-host", "rlm_host.checks:python_version"),
            DoctorCheck("config", "configuration files parse and validate", "rlm_host.checks:config_valid"),
            DoctorCheck("home", "run directory (.rlm or $RLM_HOME) is writable", "rlm_host.checks:home_writable")]
