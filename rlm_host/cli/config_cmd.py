"""``rlm config show``: the effective settings and where each value came from."""

from __future__ import annotations

import json

import typer

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)


@app.callback()
def config() -> None:
    """Inspect the settings rlm reads from flags, environment variables and config files."""


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    all_: bool = typer.Option(False, "--all", help="Also every installed component's default settings."),
) -> None:
    """Every setting with its value and source (flag, environment variable, file or default)."""
    loaded = ctx.find_root().obj.settings()
    rows = loaded.rows(all_components=all_)
    if as_json:
        payload = {
            "files": [str(p) for p in loaded.files],
            "settings": {key: {"value": value, "source": source} for key, value, source in rows},
        }
        typer.echo(json.dumps(payload, indent=2, default=str))
        return
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        typer.echo(f"{key:<{width}}  = {json.dumps(value, default=str):<24}  # {source}")
