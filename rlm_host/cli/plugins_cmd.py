"""``rlm plugins list`` and ``rlm plugins doctor``."""

from __future__ import annotations

import importlib.util
import json
from typing import Any, List, Optional

import typer

from rlm_host.plugins import get_host

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)


@app.callback()
def plugins() -> None:
    """Installed plugin distributions, their components and their readiness."""


@app.command("list")
def list_plugins(
    all_: bool = typer.Option(False, "--all", help="Include the components built into rlm-host."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array."),
) -> None:
    """Each plugin distribution: version, status and what it provides per kind."""
    host = get_host().collect_all()
    dists = [d for d in host.distributions if all_ or not d.builtin]
    if as_json:
        typer.echo(json.dumps([d.as_dict() for d in dists], indent=2))
        return
    if not dists:
        typer.echo("no plugin distributions installed (rlm plugins list --all shows the built-ins)")
        return
    for dist in dists:
        label = f"{dist.name} {dist.version}" + (" (built-in)" if dist.builtin else "")
        timing = f"  loaded in {dist.load_ms:.0f} ms" if dist.load_ms >= 20 else ""
        typer.echo(f"{label}  [{dist.status}]{timing}")
        for kind, names in sorted(dist.provides.items()):
            typer.echo(f"    {kind + ':':<13}{', '.join(sorted(names))}")
        for error in dist.errors:
            typer.echo(f"    error:       {error}")


@app.command("doctor")
def doctor(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    sink: Optional[List[str]] = typer.Option(None, "--sink", help="Check this sink's backend as if it were in "
                                             "[run] sinks (repeat, or a,b)."),
) -> None:
    """Check every registered component and plugin; exit 1 if anything installed is not ready.

    Sinks named in ``[run] sinks`` (or ``--sink``) have their endpoint and credentials checked; the names of
    missing variables are shown, never a value."""
    from rlm_host.errors import RlmError

    host = get_host().collect_all()
    rows: list[dict[str, Any]] = []
    extra_sinks = [name.strip() for value in sink or [] for name in value.split(",") if name.strip()]
    try:
        loaded = ctx.find_root().obj.settings()
    except RlmError as exc:  # every check still runs, with default settings
        loaded = None
        rows.append(_row("config", "settings", "rlm-host", False, exc.message, exc.hint or "fix the file or variable"))
    for dist in host.distributions:
        if dist.status == "broken":
            rows.append(_row("plugin", dist.name, dist.name, False, "; ".join(dist.errors), _fix_hint(dist.name)))
    for kind, registry in {**host.component_registries(), "check": host.doctor_checks()}.items():
        for record, owner in registry.items():
            state = _readiness(kind, record, loaded, extra_sinks)
            detail = f"mode {record.mode}: {state.detail}" if kind == "framework" else state.detail
            rows.append(_row(kind, record.name, owner, state.ok, detail, state.hint))
    from rlm_host.redact import redact_data

    rows = redact_data(rows)  # a sink endpoint or hint may hold a token or a URL's password
    failed = [r for r in rows if not r["ok"]]
    if as_json:
        typer.echo(json.dumps({"ok": not failed, "checks": rows}, indent=2))
    else:
        for row in rows:
            mark = "ok  " if row["ok"] else "FAIL"
            typer.echo(f"{mark} {row['kind']:<12} {row['name']:<20} {row['detail']}  ({row['plugin']})")
            if not row["ok"] and row["hint"]:
                typer.echo(f"     hint: {row['hint']}")
        typer.echo(f"\n{len(rows) - len(failed)} ready, {len(failed)} not ready")
    if failed:
        raise typer.Exit(1)


def _readiness(kind: str, record: Any, loaded: Any, extra_sinks: list[str]) -> Any:
    """A component's readiness; a sink no run feeds (not in ``[run] sinks``) is only checked for being
    installable, since its endpoint and credentials matter only once it is configured."""
    from rlm_host.components import Readiness, normalize_name

    if kind == "sink" and loaded is not None:
        enabled = {normalize_name(n) for n in [*loaded.settings.run.sinks, *extra_sinks]}
        if not enabled & {normalize_name(n) for n in record.names}:
            missing = [m for m in record.requires if importlib.util.find_spec(m) is None]
            if missing:
                return Readiness(False, "missing module(s): " + ", ".join(missing), record.install_hint)
            return Readiness(True, "installed, not enabled (add it to [run] sinks or pass --sink "
                             f"{record.name} to check its backend)")  # fmt: skip
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


def _row(kind: str, name: str, plugin: str, ok: bool, detail: str, hint: str) -> dict[str, Any]:
    return {"kind": kind, "name": name, "plugin": plugin, "ok": ok, "detail": detail, "hint": hint}


def _fix_hint(dist_name: str) -> str:
    return f"reinstall or upgrade it (pip install -U {dist_name}), or skip it with RLM_PLUGINS"
