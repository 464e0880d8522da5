"""``rlm sandbox …``: build the Docker sandbox image, remove stale containers (imported only when run).

Both reach the engine of the ``[sandbox.docker]`` section the ``rlm`` command runs with (``--config`` included).
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from rlm_host import CommandServices

from rlm_sandbox_docker import DEFAULT_IMAGE
from rlm_sandbox_docker.settings import DockerSettings

app = typer.Typer(help="Docker sandbox: build its image, remove stale containers.", rich_markup_mode=None,
                  no_args_is_help=True)


@app.callback()
def main() -> None:
    """Docker sandbox: build its image, remove stale containers."""


def _settings(ctx: typer.Context) -> DockerSettings:
    found = CommandServices.of(ctx).component("sandbox", "docker")
    return found if isinstance(found, DockerSettings) else DockerSettings()


@app.command("build-image")
def build_image(
    ctx: typer.Context,
    tag: Optional[str] = typer.Option(None, "--tag", help=f"Image name to create (default: {DEFAULT_IMAGE}; with "
                                      "--with: rlm-sandbox:py-<hash of the packages>, which sessions given those "
                                      "packages use)."),
    with_: list[str] = typer.Option([], "--with", help="Python distribution (pip requirement, repeatable) to add "
                                    "to the base image: builds a derived image, e.g. --with dspy --with pytest."),
    base: str = typer.Option(DEFAULT_IMAGE, "--base", help="With --with: the image to add the packages to "
                             "(built first if missing)."),
    suite: str = typer.Option("bookworm", "--suite", help="Debian suite to bootstrap."),
    mirror: str = typer.Option("http://deb.debian.org/debian", "--mirror", help="Debian package mirror."),
    include: list[str] = typer.Option([], "--include", help="Extra Debian package (repeatable), e.g. python3-numpy."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image exists (with --with: the derived "
                               "image; the base is built only when missing)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Build the sandbox image locally (debootstrap + import; no registry needed). Needs root and an engine.

    With --with: an image that is the base plus those Python packages (pip wheels for the image's Python,
    installed on the host and added to the base's filesystem; no container with network is run).
    """
    from rlm_sandbox_docker.image import build_derived_image
    from rlm_sandbox_docker.image import build_image as build

    log = (lambda message: typer.echo(message, err=True)) if as_json else typer.echo
    base_url = _settings(ctx).base_url
    if with_:
        result = build_derived_image(with_, tag, base=base, force=force, base_url=base_url, log=log, suite=suite,
                                     mirror=mirror, include=tuple(include))
    else:
        result = build(tag or DEFAULT_IMAGE, suite=suite, mirror=mirror, include=tuple(include), force=force,
                       base_url=base_url, log=log)
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
