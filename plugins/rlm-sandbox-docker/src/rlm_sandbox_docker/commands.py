"""``rlm sandbox …``: build the Docker sandbox image, remove stale containers (imported only when run).

Both reach the engine of the ``[sandbox.docker]`` section the ``rlm`` command runs with (``--config`` included).
"""

from __future__ import annotations

import json

import typer

from rlm_host import command_settings

from rlm_sandbox_docker import DEFAULT_IMAGE
from rlm_sandbox_docker.settings import DockerSettings

app = typer.Typer(help="Docker sandbox: build its image, remove stale containers.", rich_markup_mode=None,
                  no_args_is_help=True)


@app.callback()
def main() -> None:
    """Docker sandbox: build its image, remove stale containers."""


def _settings(ctx: typer.Context) -> DockerSettings:
    return command_settings(ctx).component("sandbox", "docker") or DockerSettings()


@app.command("build-image")
def build_image(
    ctx: typer.Context,
    tag: str = typer.Option(DEFAULT_IMAGE, "--tag", help="Image name to create."),
    suite: str = typer.Option("bookworm", "--suite", help="Debian suite to bootstrap."),
    mirror: str = typer.Option("http://deb.debian.org/debian", "--mirror", help="Debian package mirror."),
    include: list[str] = typer.Option([], "--include", help="Extra Debian package (repeatable), e.g. python3-numpy."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image exists."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Build the sandbox image locally (debootstrap + import; no registry needed). Needs root and an engine."""
    from rlm_sandbox_docker.image import build_image as build

    log = (lambda message: typer.echo(message, err=True)) if as_json else typer.echo
    result = build(tag, suite=suite, mirror=mirror, include=tuple(include), force=force,
                   base_url=_settings(ctx).base_url, log=log)
    if as_json:
        typer.echo(json.dumps(result))


@app.command("cleanup")
def cleanup(
    ctx: typer.Context,
    everything: bool = typer.Option(False, "--all", help="Also remove containers of rlm processes still running."),
) -> None:
    """Remove sandbox containers left behind by rlm processes that were killed."""
    from rlm_sandbox_docker.engine import connect, remove_stale

    removed = remove_stale(connect(_settings(ctx).base_url, cached=False), everything=everything)
    typer.echo(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
