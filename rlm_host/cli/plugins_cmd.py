"""``rlm plugins list`` and ``rlm plugins doctor``."""

from __future__ import annotations

from typing import Any, List, Optional

import typer

from rlm_host.cli.app import command_settings, echo, echo_json, group
from rlm_host.errors import RlmError
from rlm_host.plugins import get_host

app = group("Installed plugin distributions, their components and their readiness.")


@app.command("list")
def list_plugins(
    all_: bool = typer.Option(False, "--all", help="Include the components built into rlm-host."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array."),
) -> None:
    """Each plugin distribution: version, status and what it provides per kind."""
    dists = [d for d in get_host().collect_all().distributions if all_ or not d.builtin]
    if as_json:
        return echo_json([d.as_dict() for d in dists])
    if not dists:
        return echo("no plugin distributions installed (rlm plugins list --all shows the built-ins)")
    for dist in dists:
        label = f"{dist.name} {dist.version}" + (" (built-in)" if dist.builtin else "")
        echo(f"{label}  [{dist.status}]" + (f"  loaded in {dist.load_ms:.0f} ms" if dist.load_ms >= 20 else ""))
        for kind, names in sorted(dist.provides.items()):
            echo(f"    {kind + ':':<13}{', '.join(sorted(names))}")
        for error in dist.errors:
            echo(f"    error:       {error}")


@app.command("doctor")
def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print every check as JSON."),
    all_: bool = typer.Option(False, "--all", "-a", help="Also list every check, grouped by kind."),
    sink: Optional[List[str]] = typer.Option(None, "--sink", help="Check this sink's backend as if it were in "
                                             "[run] sinks (repeat, or a,b)."),
) -> None:
    """Check every component and plugin: problems first, then one summary line (--all: everything).

    Exit 1 only when something this setup uses is not ready (the configured environment, sandbox, sinks and
    model provider, a --sink, the host's checks) or a plugin is broken; a component nothing uses (Docker on a
    machine without it) is listed as optional. Sinks named in ``[run] sinks`` or ``--sink`` have their endpoint
    and credentials checked; the names of missing variables are shown, never a value."""
    from rlm_host.engine.plan import SINK_PLUGINS
    from rlm_host.plugins.doctor import check_rows, row
    from rlm_host.redact import redact_data

    host = get_host().collect_all()
    extra_sinks = [name.strip() for value in sink or [] for name in value.split(",") if name.strip()]
    asked = {host.sinks().get(name, where_more=SINK_PLUGINS).name for name in extra_sinks}  # unknown: exit 2
    rows: list[dict[str, Any]] = []
    try:
        loaded = command_settings()
    except RlmError as exc:  # every check still runs, with default settings
        loaded = None
        rows.append(row("config", "settings", "rlm-host", False, exc.message, exc.hint or "fix the file or variable"))
    rows = redact_data(rows + check_rows(host, loaded, extra_sinks))  # an endpoint or hint may hold a token
    problems = [r for r in rows if r["required"] and not r["ok"]]
    if as_json:
        echo_json({"ok": not problems, "problems": len(problems), "checks": rows})
    else:
        _print_report(rows, problems, asked, all_)
    if problems:
        raise typer.Exit(1)


def _print_report(rows: list[dict[str, Any]], problems: list[dict[str, Any]], asked: set[str], all_: bool) -> None:
    """Problems, then what is optional and not ready and the sinks asked for, then one summary line; with
    ``all_`` every row after it, grouped by kind. Columns are aligned over the rows printed."""
    optional = [r for r in rows if not r["required"] and not r["ok"]]
    shown = problems + optional + [r for r in rows if r["ok"] and r["kind"] == "sink" and r["name"] in asked]
    widths = (max([12, *(len(r["kind"]) for r in shown)]), max([20, *(len(r["name"]) for r in rows if all_ or
                                                                    r in shown)]))
    for r in shown:
        _print_row(r, widths, r["kind"])
    parts = [f"{len(problems)} problem{'s' if len(problems) != 1 else ''}", f"{sum(r['ok'] for r in rows)} of "
             f"{len(rows)} ready"] + ([f"{len(optional)} optional not ready (nothing configured uses them)"] if optional
                                      else [])
    echo(("\n" if shown else "") + ", ".join(parts) + ("" if all_ else "; --all lists every check"))
    if all_:
        for kind in dict.fromkeys(r["kind"] for r in rows):
            echo(f"\n{kind}:")
            for r in (r for r in rows if r["kind"] == kind):
                _print_row(r, (0, widths[1]), "")


def _print_row(r: dict[str, Any], widths: tuple[int, int], kind: str) -> None:
    mark = "ok" if r["ok"] else "FAIL" if r["required"] else "warn"
    kind_column = f" {kind:<{widths[0]}}" if kind else ""
    echo(f"{mark:<4}{kind_column} {r['name']:<{widths[1]}} {r['detail']}  ({r['plugin']})")
    if not r["ok"] and r["hint"]:
        echo(f"     hint: {r['hint']}")
