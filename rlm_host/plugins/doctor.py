"""What ``rlm plugins doctor`` checks, and which failures matter here.

Every registered component and doctor check gets a row. A row is *required* when this setup uses it: the
configured environment, framework, sandbox (for ``auto``: the security boundaries, when none is ready), sinks
(``[run] sinks`` and ``--sink``), the providers of the configured models, the host's own checks, a plugin's check
for a required component — and every broken plugin. Only a required row that is not ready makes the doctor fail;
anything else not ready (Docker on a machine without it) is optional.
"""

from __future__ import annotations

import contextlib
import importlib.util
from typing import Any

HOST = "rlm-host"


def row(kind: str, name: str, plugin: str, ok: bool, detail: str, hint: str, required: bool = True) -> dict[str, Any]:
    return {"kind": kind, "name": name, "plugin": plugin, "ok": ok, "detail": detail, "hint": hint,
            "required": required}


def check_rows(host: Any, loaded: Any, extra_sinks: list[str]) -> list[dict[str, Any]]:
    """A row per broken plugin, component and doctor check, each marked ``required`` or not."""
    rows = [row("plugin", d.name, d.name, False, "; ".join(d.errors), fix_hint(d)) for d in host.broken()]
    for kind, registry in {**host.component_registries(), "check": host.doctor_checks()}.items():
        for record, owner in registry.items():
            state = _readiness(kind, record, loaded, extra_sinks)
            detail = f"mode {record.mode}: {state.detail}" if kind == "framework" else state.detail
            rows.append(row(kind, record.name, owner, state.ok, detail, state.hint, required=False))
    used, extra = _used(host, loaded, extra_sinks, rows)
    owners = {r["plugin"] for r in rows if r["kind"] != "check" and r["name"] in used.get(r["kind"], set())}
    for r in rows:
        if r["kind"] == "check":
            section_kind, _, name = (host.doctor_checks().get(r["name"]).section or "").partition(".")
            r["required"] = (r["plugin"] == HOST or (name in used.get(section_kind, set()) if section_kind
                                                     else r["plugin"] in owners))
        elif r["kind"] != "plugin":
            r["required"] = r["name"] in used.get(r["kind"], set())
    return extra + rows


def _used(host: Any, loaded: Any, extra_sinks: list[str],
          rows: list[dict[str, Any]]) -> tuple[dict[str, set[str]], list[dict[str, Any]]]:
    """The components this setup uses, by kind (primary names), and rows for configured names that resolve to
    nothing (a model naming no provider, no security boundary for ``--sandbox auto``)."""
    from rlm_host.config.schema import RunSettings
    from rlm_host.engine.plan import run_sinks
    from rlm_host.errors import RlmError
    from rlm_host.models.resolve import auto_model, split_model_string

    run = loaded.settings.run if loaded is not None else RunSettings()
    used: dict[str, set[str]] = {}
    extra: list[dict[str, Any]] = []

    def use(kind: str, name: str) -> None:
        with contextlib.suppress(RlmError):  # not installed, or a clash (both plugins are already reported broken)
            used.setdefault(kind, set()).add(host.registry(kind).get(name).name)

    use("environment", run.environment)
    if run.framework != "native":
        use("framework", run.framework)
    for name in [*(run.sinks if run.sinks is not None else run_sinks(host, None)), *extra_sinks]:
        use("sink", name)
    for setting, model in (("run.model", run.model), ("run.sub_model", run.sub_model)):
        if not model:
            continue
        try:
            model = auto_model(host)[0] if model == "auto" else model
            use("provider", split_model_string(model, host)[0])
        except RlmError as exc:
            extra.append(row("config", setting, HOST, False, exc.message, exc.hint or "", required=model != "auto"))
    if run.sandbox != "auto":
        use("sandbox", run.sandbox)
    else:
        boundaries = [spec.name for spec in host.sandboxes() if spec.security_boundary]
        ready = {r["name"] for r in rows if r["kind"] == "sandbox" and r["ok"]}
        if not boundaries:
            extra.append(row("config", "run.sandbox", HOST, False, "auto: no sandbox that is a security boundary is "
                             "installed", "pip install rlm-sandbox-monty, or pass --sandbox process (NOT a security "
                             "boundary)"))
        elif not ready & set(boundaries):
            for name in boundaries:
                use("sandbox", name)
    return used, extra


def _readiness(kind: str, record: Any, loaded: Any, extra_sinks: list[str]) -> Any:
    """A component's readiness; a sink no run feeds (not in ``[run] sinks``, nor on by default when that is not
    set) is only checked for being installable, since its endpoint and credentials matter only once it is
    configured."""
    from rlm_host.components import Readiness, normalize_name

    if kind == "sink" and loaded is not None:
        configured = loaded.settings.run.sinks
        enabled = {normalize_name(n) for n in [*(configured or []), *extra_sinks]}
        if not (configured is None and record.default) and not enabled & {normalize_name(n) for n in record.names}:
            installed = record.installed()
            return installed if not installed.ok else Readiness(True, "installed, not enabled (add it to [run] sinks "
                                                                f"or pass --sink {record.name} to check its backend)")
    return record.readiness(_settings_for(kind, record, loaded))


def _settings_for(kind: str, record: Any, loaded: Any) -> Any:
    """What a readiness check receives: its component's validated section; for a doctor check, the section
    its record names, else the whole loaded settings (None when the configuration did not load)."""
    if loaded is None:
        return None
    if kind != "check":
        return loaded.component(kind, record.name)
    if record.section:
        section_kind, _, name = record.section.partition(".")
        return loaded.component(section_kind, name)
    return loaded


def fix_hint(dist: Any) -> str:
    """What to do about a broken plugin: for a local hook module, edit it or stop loading it; else upgrade it."""
    renames = [e for e in dist.errors if "did you mean" in e]
    rename = ""
    if renames:
        wrong, _, right = renames[0].partition("unknown hook ")[2].partition(" (did you mean ")
        rename = f"rename {wrong} to {right.rstrip('?)')}"
    if dist.name.startswith("local:"):
        module = dist.name.partition(":")[2]
        where = f"in {_module_file(module) or f'the module {module}'}"
        first = f"{rename} {where}" if rename else f"fix {where.partition(' ')[2]}"
        return f"{first}, or drop {module} from RLM_PLUGIN_MODULES"
    upgrade = f"reinstall or upgrade it (pip install -U {dist.name})"
    return (f"{upgrade} — its author must {rename}" if rename else upgrade) + ", or skip it with RLM_PLUGINS"


def _module_file(module: str) -> str:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    return spec.origin if spec is not None and spec.origin not in (None, "built-in", "frozen") else ""
