"""Build the sandbox image locally, with no registry: debootstrap a minimal Debian with python3, then import it.

``rlm sandbox build-image`` runs ``build_image``: ``debootstrap --variant=minbase --include=python3`` into a
temporary directory (only Debian's package mirror is needed), trims caches and documentation, adds the worker
at ``/opt/rlm/worker.py`` and the mount points, packs the tree with ``tar`` and imports it through the engine
API with the image's CMD / USER / WORKDIR / ENV set (what ``docker import --change`` does). Needs root (for
debootstrap) and a reachable engine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlm_host import WORKER_SCRIPT

from rlm_sandbox_docker import DEFAULT_IMAGE
from rlm_sandbox_docker.engine import DockerSandboxError, connect

DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
USER = "65534:65534"
TRIM = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info",
        "usr/share/locale", "var/log")  # fmt: skip
CHANGES = [
    'CMD ["python3", "-I", "-u", "/opt/rlm/worker.py"]',
    f"USER {USER}",
    "WORKDIR /work",
    "ENV LANG=C.UTF-8 PYTHONIOENCODING=utf-8 PYTHONDONTWRITEBYTECODE=1 HOME=/work TMPDIR=/work",
    "LABEL org.rlm.sandbox-image=1",
]


def image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(tag: str = DEFAULT_IMAGE, *, suite: str = DEFAULT_SUITE, mirror: str = DEFAULT_MIRROR,
                include: tuple[str, ...] = (), force: bool = False, base_url: str | None = None,
                log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Build and import the image; returns {"tag", "built", "seconds", "size_mb"} (built False: it existed)."""
    client = connect(base_url, timeout=900, cached=False)
    if not force and image_exists(client, tag):
        log(f"image {tag} already exists (use --force to rebuild)")
        return {"tag": tag, "built": False, "seconds": 0.0, "size_mb": _size_mb(client, tag)}
    if os.geteuid() != 0:
        raise DockerSandboxError("building the image needs root (debootstrap): run `sudo rlm sandbox build-image`")
    for tool in ("debootstrap", "tar"):
        if shutil.which(tool) is None:
            raise DockerSandboxError(f"{tool} is not installed: apt-get install {tool}")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="rlm-image-"))
    try:
        rootfs = work / "rootfs"
        packages = ",".join(["python3", *include])
        log(f"debootstrap {suite} from {mirror} with {packages} (a few minutes)…")
        _run(["debootstrap", "--variant=minbase", f"--include={packages}", suite, str(rootfs), mirror],
             work / "debootstrap.log", "debootstrap")
        _finish_rootfs(rootfs)
        tarball = work / "rootfs.tar"
        log("packing the root filesystem…")
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tarball), "."],
             work / "tar.log", "tar")
        from docker.utils import parse_repository_tag

        repository, version = parse_repository_tag(tag)
        version = version or "latest"
        log(f"importing as {repository}:{version}…")
        client.api.import_image_from_file(str(tarball), repository=repository, tag=version, changes=CHANGES)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not image_exists(client, tag):
        raise DockerSandboxError(f"the engine did not record the image {tag} after the import")
    seconds = round(time.monotonic() - started, 1)
    size = _size_mb(client, tag)
    log(f"built {tag} in {seconds} s ({size} MB)")
    return {"tag": tag, "built": True, "seconds": seconds, "size_mb": size}


def _finish_rootfs(rootfs: Path) -> None:
    """Trim the tree, add the worker and the mount points the sandbox uses."""
    for relative in TRIM:
        target = rootfs / relative
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
    (rootfs / "opt" / "rlm").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(WORKER_SCRIPT, rootfs / "opt" / "rlm" / "worker.py")
    os.chmod(rootfs / "opt" / "rlm" / "worker.py", 0o644)
    for mount_point, mode in (("work", 0o1777), ("rlm-input", 0o755), ("opt/rlm-host", 0o755)):
        (rootfs / mount_point).mkdir(parents=True, exist_ok=True)
        os.chmod(rootfs / mount_point, mode)


def _run(argv: list[str], log_file: Path, what: str) -> None:
    with open(log_file, "wb") as out:
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    if code != 0:
        tail = log_file.read_text(errors="replace").strip().splitlines()[-15:]
        raise DockerSandboxError(f"{what} failed (exit code {code}):\n" + "\n".join(tail))


def _size_mb(client: Any, tag: str) -> int | None:
    try:
        return round(client.images.get(tag).attrs["Size"] / 1e6)
    except Exception:
        return None
