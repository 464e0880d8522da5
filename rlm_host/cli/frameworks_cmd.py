"""``rlm frameworks list``: the frameworks ``rlm run --framework NAME`` can use, with their mode and
readiness (``native`` is the built-in loop, always there)."""

from __future__ import annotations

from typing import Any

from rlm_host.cli.app import AS_JSON, command_settings, echo, echo_json, group

app = group("Frameworks: run a task through DSPy, Pydantic AI… as an rlm run.")


@app.command("list")
def list_frameworks(as_json: bool = AS_JSON) -> None:
    """Every framework: name, aliases, mode (native_rlm or agent), readiness, the plugin that registers it."""
    from rlm_host.plugins import get_host

    loaded = command_settings()
    rows: list[dict[str, Any]] = [{"name": "native", "aliases": [], "mode": "native_rlm", "ready": True,
                                   "plugin": "rlm-host", "detail": "the built-in loop (--env chooses the environment)",
                                   "hint": "", "description": "rlm's own RLM loop"}]
    for spec, owner in get_host().frameworks().items():
        ready = spec.readiness(loaded.component("framework", spec.name))
        rows.append({"name": spec.name, "aliases": list(spec.aliases), "mode": spec.mode, "ready": ready.ok,
                     "plugin": owner, "detail": ready.detail, "hint": ready.hint, "description": spec.description})
    if as_json:
        return echo_json(rows)
    for row in rows:
        aliases = f" (alias {', '.join(row['aliases'])})" if row["aliases"] else ""
        echo(f"{row['name']:<14} {row['mode']:<11} {'ready' if row['ready'] else 'NOT READY':<10} "
             f"{row['description']}{aliases}  ({row['plugin']})")
        if not row["ready"]:
            echo(f"{'':<14} {row['detail']}" + (f"; hint: {row['hint']}" if row["hint"] else ""))
