"""Project configuration is untrusted until the user says otherwise, as direnv and mise treat theirs.

An ``rlm.toml`` or ``[tool.rlm]`` table found in the working directory may come from a cloned repository. Until ``rlm
config trust`` records its content hash in the user's config folder (``trusted.json``), the keys that could move a
secret, weaken isolation or read a file outside the project are ignored, with one warning naming them: provider and sink
endpoints, headers, keys and key variables; a sandbox that is not a security boundary and any sandbox setting but a
number; ``allow_any_workdir``; paths (``@FILE`` instructions, folders, model files) that leave the project; prices (they
decide when ``max_cost`` stops a run); tools (functions of the user's Python the model's code may call: host code).
Limits may only tighten: a ceiling above what the user's own file (else the default) sets, ``strict = false`` over the
user's ``true``, or an approval mode looser than the user's is ignored too. ``--trust-config`` or ``RLM_TRUST_CONFIG=1``
trust it for one command (CI). The user's own file, ``--config FILE``, ``RLM_*`` variables and flags are always trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, TypeGuard

from rlm_host.config.paths import user_config_dir
from rlm_host.context import write_atomic

if TYPE_CHECKING:
    from rlm_host.plugins.host import PluginHost

TRUST_ENV = "RLM_TRUST_CONFIG"
TRUST_FILE = "trusted.json"
#: Words of a field name (split at ``_`` and ``-``, any plugin's section) that carry an endpoint or a credential.
SECRET_WORDS = frozenset({"url", "uri", "endpoint", "host", "address", "headers", "header", "key", "token", "secret",
                          "password", "passwd", "auth", "credentials", "cookie", "organization", "account"})
#: Words of a field name that hold a file or folder: allowed when inside the project.
PATH_WORDS = frozenset({"path", "dir", "directory", "folder", "root", "home", "file", "workdir"})
#: Words of a number's name that make it a ceiling (time, memory, size, count, money): an untrusted file may lower
#: it, never raise it above its default (a cloned project must not buy itself an hour of CPU or $1,000 of calls).
LIMIT_WORDS = frozenset({"max", "timeout", "seconds", "memory", "mb", "gb", "cpu", "cpus", "limit", "size", "chars",
                         "bytes", "parts", "pages", "calls", "tokens", "cost", "steps", "depth", "retries",
                         "concurrency", "threads", "workers"})
#: Words of a field name that name a program the host runs.
PROGRAM_WORDS = frozenset({"python", "binary", "command", "executable", "program", "interpreter", "args"})


@dataclass(frozen=True)
class Ignored:
    """A project setting left out because the file is not trusted: its key and why it matters."""

    key: str
    reason: str


def trust_store(env: Mapping[str, str]) -> Path:
    """``<user config folder>/rlm/trusted.json``: project files the user trusted, with their content hashes."""
    return user_config_dir(env) / TRUST_FILE


def content_hash(table: Mapping[str, Any]) -> str:
    """The hash trust is bound to: the settings the file holds (comments and other pyproject tables aside)."""
    canonical = json.dumps(table, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _records(env: Mapping[str, str]) -> dict[str, str]:
    try:
        data = json.loads(trust_store(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def is_trusted(path: Path, table: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Whether the user trusts this file as it is now (a changed file needs trust again)."""
    return _records(env).get(str(path.resolve())) == content_hash(table)


def record_trust(path: Path, table: Optional[Mapping[str, Any]], env: Mapping[str, str]) -> Path:
    """Trust ``path`` with ``table`` as its content (None: forget it); written atomically, readable by the user
    only. Returns the store's path."""
    store = trust_store(env)
    records = _records(env)
    key = str(path.resolve())
    if table is None:
        records.pop(key, None)
    else:
        records[key] = content_hash(table)
    store.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(store, json.dumps({"files": records}, indent=2, sort_keys=True))
    return store


def screen(entries: list[tuple[str, Any, str]], project: Path, host: Optional["PluginHost"] = None,
           baseline: Optional[Mapping[str, Any]] = None) -> tuple[list[tuple[str, Any, str]],
                                                                  list[Ignored]]:
    """Split an untrusted file's ``(key, value, label)`` entries into those kept and those ignored; ``baseline``
    maps dotted keys to the values trusted layers below it set (the user's file), which it may only tighten."""
    reasons = [risk_of(key, value, project.resolve(), host, baseline) for key, value, _ in entries]
    return ([entry for entry, why in zip(entries, reasons) if not why],
            [Ignored(entry[0], why) for entry, why in zip(entries, reasons) if why])


#: ``[run] approve`` modes from the strictest to the loosest.
APPROVAL_ORDER = ("read-only", "ask", "auto")


def risk_of(key: str, value: Any, project: Path, host: Optional["PluginHost"] = None,
            baseline: Optional[Mapping[str, Any]] = None) -> str:
    """Why ``key = value`` from an untrusted project file must not apply ("" when it may); ``baseline``: the values
    of trusted layers below it (see ``screen``)."""
    parts = key.split(".")
    section, words = parts[0], _words(parts[-1])
    below = baseline or {}
    if section == "prices":
        return "sets model prices (they decide when max_cost stops a run)"
    if key == "run.strict":  # validation reads "no", "off", 0 as false too: only a true value keeps it on
        return "turns off the strict cost check your own settings turn on" if below.get(key) and not _on(value) else ""
    if key.startswith("run.mcp_servers"):  # a server is a program the host starts, or an endpoint with headers
        return "" if key.endswith(".disabled") and value is True else \
            "starts an MCP server (a program the host runs, or a server your data goes to)"
    if key in ("run.tools", "run.sub_tools"):
        return "runs functions of your Python on the host (a tool is host code)" if value else ""
    if key == "run.base_url":
        return "sends your API key to another server"
    if key == "run.sandbox":
        return "runs model code without a security boundary" if sandbox_refusal(str(value), host) else ""
    if key == "run.allow_any_workdir":
        return "lets the model edit a home or system folder" if _on(value) else ""
    if key == "run.approve":
        if value == "auto":
            return "lets actions go ahead without asking you"
        floor = below.get(key)
        looser = value in APPROVAL_ORDER and floor in APPROVAL_ORDER and \
            APPROVAL_ORDER.index(value) > APPROVAL_ORDER.index(floor)
        return f"loosens your own approve = {floor!r}" if looser else ""
    if key.startswith("run.approval_rules"):  # the table, or one of its entries flattened
        rules = value if isinstance(value, dict) else {key: value}
        return "lets actions go ahead without asking you" if "allow" in rules.values() else ""
    if key in ("run.workdir", "paths.home", "run.output_type") or (section == "run" and words & PATH_WORDS):
        return _outside(value, project)
    if key == "run.instructions":
        return _outside(value[1:], project) if isinstance(value, str) and value.startswith("@") else ""
    if key in ("run.model", "run.sub_model", "run.allowed_sub_models"):
        names = value if isinstance(value, list) else [value]
        found = next((str(n) for n in names if reads_model_file(str(n), host, project)), None)
        return "" if found is None else f"reads a file outside the project ({found})"
    if section == "run" and (raised := _raises_limit(key, value, host, below)):
        return raised
    if section in ("run", "logging", "rewards"):
        return ""
    # a component's section: [<kind>.<name>] with its own fields (nested tables flattened after the field)
    words = _words(parts[2]) if len(parts) > 2 else words
    # a nested table's keys count too: [environment.harness.mcp_servers.NAME] command, args, env, url, headers
    deeper = set().union(*(_words(part) for part in parts[3:])) if len(parts) > 3 else set()
    if (raised := _raises_limit(key, value, host, below)) or _is_number(value):  # a number names no secret or file;
        return raised  # "9999" is a number to validation too
    if key.endswith(".build_missing"):  # [sandbox.docker]: "never" only tightens
        return "" if value == "never" else "builds a sandbox image when a run needs it (minutes of downloads)"
    if section == "environment" and len(parts) > 2 and parts[2] == "sandbox_packages":
        return "names packages a sandbox image is built with (downloaded from the package index)"
    if section == "sandbox":
        return "changes how the sandbox isolates model code"
    if parts[-1].startswith("trust") and value:  # trust_annotations: believe a server's claims about its tools
        return "trusts what a server says of its own tools (read-only tools then run unasked)"
    if parts[-1] == "capture_content" and value is not False:  # may override the user's opt-out
        return "sends your prompts, code and answers to the sink"
    if (words | deeper) & PROGRAM_WORDS:
        return "names a program the host runs"
    if deeper & {"env", "cwd"}:
        return "sets the environment or folder of a program the host runs"
    if (words | deeper) & SECRET_WORDS:
        return "sets an endpoint or credential (where your data and keys go)"
    if words & PATH_WORDS or isinstance(value, str) and value.startswith(("/", "~", "..")):
        return _outside(value, project)
    return ""


def holds_credential(key: str) -> bool:
    """Whether a setting's value is itself a credential (a key, token, password or header), not an address."""
    parts = key.split(".")
    words = _words(parts[2] if len(parts) > 2 and parts[0] not in ("run", "paths") else parts[-1])
    return bool(words & (SECRET_WORDS - {"url", "uri", "endpoint", "host", "address", "organization", "account"}))


def _on(value: Any) -> bool:
    """Whether validation may read an on/off value as on (True, 1, "true", "yes", "on", "t", "y"): "false" is off."""
    return _number(value) == 1 or str(value).strip().lower() in ("true", "yes", "on", "t", "y")


def _words(field: str) -> set[str]:
    return set(field.lower().replace("-", "_").split("_"))


def _raises_limit(key: str, value: Any, host: Optional["PluginHost"], below: Mapping[str, Any]) -> str:
    """Why ``key = value`` raises a ceiling (its name says time, memory, size, count or money): above what a trusted
    layer below set (the user's own file), else above its default (a default of none, as ``max_cost``'s, means no
    limit: any value only tightens it). "" when it does not."""
    number = _number(value)
    if number is None:
        return ""
    parts = key.split(".")
    field = parts[-1] if parts[0] == "run" else (parts[2] if len(parts) > 2 else parts[-1])
    if not _words(field) & LIMIT_WORDS or field.startswith("min"):
        return ""
    found, default = _default_of(parts, field, host)
    if not found:
        return ""  # a key nobody declares: validation names it
    floor = _number(below.get(key))
    if floor is not None:
        return f"raises your own limit ({below.get(key)}) to {value}" if number > floor else ""
    return "raises a limit above its default" if _is_number(default) and number > default else ""


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> Optional[float]:
    """The number validation makes of ``value`` (a number, or a string such as ``"999"``: pydantic reads both; NaN
    counts as infinite), None for anything else."""
    if _is_number(value):
        return value
    try:
        number = float(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return number if number is None or number == number else float("inf")


def _default_of(parts: list[str], field: str, host: Optional["PluginHost"]) -> tuple[bool, Any]:
    """(declared, default) of a ``[run]`` key or a component's field."""
    from rlm_host.config.schema import RunSettings

    model: Any = RunSettings if parts[0] == "run" else None
    if model is None and host is not None and len(parts) > 2:
        with contextlib.suppress(Exception):  # an unknown section: refused by validation with its own message
            model = host.component_registries()[parts[0]].get(parts[1]).settings_model()
    info = getattr(model, "model_fields", {}).get(field)
    return (False, None) if info is None else (True, info.get_default(call_default_factory=True))


def _outside(value: Any, project: Path) -> str:
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        return ""
    path = Path(os.path.expanduser(str(value)))
    resolved = (path if path.is_absolute() else project / path).resolve()
    return "" if resolved == project or resolved.is_relative_to(project) else f"points outside the project ({value})"


def reads_model_file(model: str, host: Optional["PluginHost"], project: Optional[Path] = None) -> bool:
    """Whether ``model`` names a file its provider reads (a script, a saved run, a weights path) outside ``project``
    (None: anywhere): how untrusted project files and stored chat sessions judge a model string. An unknown
    provider's string is judged by its spelling alone."""
    provider, name = model_parts(model)
    looks_like_path = any(mark in name for mark in ("/", "\\", "~")) or name.startswith(".") or ".gguf" in name.lower()
    if not looks_like_path:
        return False
    reads_files = True
    with contextlib.suppress(Exception):  # a broken registry: judge by spelling
        registry = host.providers() if host is not None else None
        reads_files = registry is None or provider not in registry or bool(registry.get(provider).model_files)
    return reads_files and (project is None or bool(_outside(name, project)))


def model_parts(model: str) -> tuple[str, str]:
    """``(provider, name)`` of a model string in either spelling the host accepts, ``provider:name`` or
    ``provider/name`` (see ``rlm_host.models.resolve.split_model_string``); ``("", "")`` when it names no provider.
    Screening reads both, so a path cannot slip through in the spelling a check did not expect."""
    provider, colon, name = model.partition(":")
    if colon and provider and name:
        return provider, name
    head, slash, rest = model.partition("/")
    return (head, rest) if slash and head and rest else ("", "")


def sandbox_refusal(name: str, host: Optional["PluginHost"]) -> str:
    """Why a file may not choose sandbox ``name``: "not installed" or "not a security boundary" ("" for a boundary,
    and for ``auto``, the best installed one); without a host, only ``process`` is known not to be one."""
    if name == "auto":
        return ""
    if host is None:
        return "not a security boundary" if name == "process" else ""
    try:
        spec = host.sandboxes().get(name)
    except Exception:  # noqa: BLE001 - an unknown name: refused later with its own error; here, not trusted
        return "not installed"
    return "" if spec.security_boundary else "not a security boundary"


def warning_text(path: Path, ignored: list[Ignored]) -> str:
    """The one warning an untrusted file with risky keys gets."""
    keys = "; ".join(f"{item.key} ({item.reason})" for item in ignored)
    return (f"warning: {path} is not trusted, so these settings were ignored: {keys}. "
            f"If you trust this project, run `rlm config trust {path}` (or pass --trust-config).")
