"""Build the sandbox image locally, with no registry: debootstrap a minimal Debian with python3, then import it.

``rlm sandbox build-image`` runs ``build_image``: ``debootstrap --variant=minbase --include=python3`` into a
temporary directory (only Debian's package mirror is needed), trims caches and documentation, adds the worker
at ``/opt/rlm/worker.py`` and the mount points, packs the tree with ``tar`` and imports it through the engine
API with the image's CMD / USER / WORKDIR / ENV set (what ``docker import --change`` does). Needs root (for
debootstrap) and a reachable engine.

``rlm sandbox build-image --with PKG …`` runs ``build_derived_image``: the base image plus Python distributions,
still without a registry and without any container that needs network. pip (on the host) installs wheels for
the image's Python and platform into a staging folder; a container of the base image with no network compiles
their bytecode there (the sandbox's root is read-only, so ``.pyc`` files could never be written at run time);
the filesystem of a created, never started, container of the base is exported, the staged files are appended
under ``/usr/local/lib/python3.X/dist-packages`` (owned by root, world-readable) and the result is imported
with the base's configuration plus labels naming the packages. Its default tag is ``derived_tag(packages)``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rlm_host.sdk.sandbox import WORKER_SCRIPT

from rlm_sandbox_docker import DEFAULT_IMAGE
from rlm_sandbox_docker.engine import DockerSandboxError, connect, derived_tag, package_set

DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
USER = "65534:65534"
TRIM = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info",
        "usr/share/locale", "var/log")
CHANGES = [
    'CMD ["python3", "-I", "-u", "/opt/rlm/worker.py"]',
    f"USER {USER}",
    "WORKDIR /work",
    "ENV LANG=C.UTF-8 PYTHONIOENCODING=utf-8 PYTHONDONTWRITEBYTECODE=1 HOME=/work TMPDIR=/work",
    "LABEL org.rlm.sandbox-image=1",
]


#: The steps of each build, in order, as ``phase`` callbacks name them (the progress display counts them).
BASE_PHASES = ("debootstrap", "trimming", "packing", "importing")
DERIVED_PHASES = ("exporting", "pip", "compiling", "assembling", "importing")


def _no_phase(name: str) -> None:
    """The default ``phase`` callback: nobody is watching the steps."""


def image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(tag: str = DEFAULT_IMAGE, *, suite: str = DEFAULT_SUITE, mirror: str = DEFAULT_MIRROR,
                include: tuple[str, ...] = (), force: bool = False, base_url: str | None = None,
                log: Callable[[str], None] = print,
                phase: Callable[[str], None] = _no_phase) -> dict[str, Any]:
    """Build and import the image; returns {"tag", "built", "seconds", "size_mb"} (built False: it existed).

    ``phase(name)`` is called as each of ``BASE_PHASES`` begins (a progress display shows them)."""
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
        phase("debootstrap")
        log(f"debootstrap {suite} from {mirror} with {packages} (a few minutes)…")
        _run(["debootstrap", "--variant=minbase", f"--include={packages}", suite, str(rootfs), mirror],
             work / "debootstrap.log", "debootstrap")
        phase("trimming")
        _finish_rootfs(rootfs)
        tarball = work / "rootfs.tar"
        phase("packing")
        log("packing the root filesystem…")
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tarball), "."],
             work / "tar.log", "tar")
        from docker.utils import parse_repository_tag

        repository, version = parse_repository_tag(tag)
        version = version or "latest"
        phase("importing")
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
    for mount_point, mode in (("work", 0o1777), ("rlm-input", 0o755), ("opt/rlm-host", 0o755), ("workspace", 0o755)):
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


# -- derived images: the base plus Python distributions ------------------------------------------------------
PACKAGES_LABEL = "org.rlm.sandbox-packages"  # JSON list of the requirement strings
BASE_LABEL = "org.rlm.sandbox-base"
STAGING = "/rlm-staging"  # where the compiling container sees the staging folder
#: glibc 2.5 / 2.12 / 2.17 are the legacy manylinux1 / 2010 / 2014 (pip adds those names for manylinux2014)
OLDEST_GLIBC_MINOR = 5


def build_derived_image(packages: Iterable[str], tag: str | None = None, *, base: str = DEFAULT_IMAGE,
                        force: bool = False, base_url: str | None = None, log: Callable[[str], None] = print,
                        suite: str = DEFAULT_SUITE, mirror: str = DEFAULT_MIRROR, include: tuple[str, ...] = (),
                        phase: Callable[[str], None] = _no_phase) -> dict[str, Any]:
    """Build ``base`` + ``packages`` as ``tag`` (default ``derived_tag(packages)``); the base is built if missing.
    ``phase(name)`` is called as each of ``DERIVED_PHASES`` begins (and of ``BASE_PHASES``, for a missing base).

    Returns {"tag", "built", "seconds", "size_mb", "packages", "installed", "base", "python"} ("built" False:
    the image existed; "installed": "name version" of every distribution pip installed).
    """
    import docker.errors

    wanted = package_set(packages)
    if not wanted:
        raise DockerSandboxError("no packages given: `rlm sandbox build-image --with PKG [--with PKG …]`")
    tag = tag or derived_tag(wanted)
    client = connect(base_url, timeout=900, cached=False)
    previous = _image_id(client, tag)
    if not force and previous:
        log(f"image {tag} already exists (use --force to rebuild)")
        return {"tag": tag, "built": False, "seconds": 0.0, "size_mb": _size_mb(client, tag),
                "packages": list(wanted), "installed": [], "base": base, "python": None}
    started = time.monotonic()
    if not image_exists(client, base):
        log(f"the base image {base} is missing: building it first")
        build_image(base, suite=suite, mirror=mirror, include=include, base_url=base_url, log=log, phase=phase)
    base_image = client.images.get(base)
    work = Path(tempfile.mkdtemp(prefix="rlm-image-"))
    try:
        tarball = work / "rootfs.tar"
        phase("exporting")
        log(f"exporting the filesystem of {base}…")
        _export(client, base, tarball)
        layout = _python_layout(tarball)
        arch = _architecture(client)
        log(f"pip: wheels for CPython {layout['python']} on manylinux (glibc {layout['glibc']}) {arch}: "
            + " ".join(wanted))
        staging = work / "staging"
        staging.mkdir()
        phase("pip")
        _pip_install(wanted, staging, layout, arch, work / "pip.log")
        installed = _installed(staging)
        phase("compiling")
        log(f"compiling bytecode with the image's python{layout['python']}…")
        _compile(client, base, staging, layout, log)
        image_tar = work / "image.tar"
        phase("assembling")
        _assemble(tarball, staging, layout, image_tar)
        tarball.unlink()
        from docker.utils import parse_repository_tag

        repository, version = parse_repository_tag(tag)
        version = version or "latest"
        labels = {PACKAGES_LABEL: json.dumps(list(wanted)), BASE_LABEL: base}
        phase("importing")
        log(f"importing as {repository}:{version}…")
        client.api.import_image_from_file(str(image_tar), repository=repository, tag=version,
                                          changes=_changes(base_image.attrs.get("Config") or {}, labels))
    except docker.errors.APIError as exc:
        raise DockerSandboxError(f"the Docker engine refused a step of building {tag}: "
                                 f"{exc.explanation or exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    current = _image_id(client, tag)
    if not current:
        raise DockerSandboxError(f"the engine did not record the image {tag} after the import")
    if previous and previous != current:  # --force: the image it replaces, untagged now (kept if in use)
        try:
            client.images.remove(previous)
        except Exception:
            pass
    seconds = round(time.monotonic() - started, 1)
    size = _size_mb(client, tag)
    log(f"installed {len(installed)} distributions: {', '.join(installed)}")
    log(f"built {tag} in {seconds} s ({size} MB; {base}: {_size_mb(client, base)} MB)")
    return {"tag": tag, "built": True, "seconds": seconds, "size_mb": size, "packages": list(wanted),
            "installed": installed, "base": base, "python": layout["python"]}


def _image_id(client: Any, tag: str) -> str | None:
    import docker.errors

    try:
        return client.images.get(tag).id
    except docker.errors.ImageNotFound:
        return None


def _export(client: Any, base: str, tarball: Path) -> None:
    """The base image's filesystem as a tar, from a created container that is never started."""
    container = client.containers.create(base, ["true"], network_mode="none", labels={"rlm.image-build": "1"})
    try:
        with open(tarball, "wb") as out:
            for chunk in container.export(chunk_size=1 << 20):
                out.write(chunk)
    finally:
        container.remove(force=True)


_PYTHON_STDLIB = re.compile(r"^(?:\./)?(usr/(?:local/)?)lib/python3\.(\d+)/os\.py$")
_GLIBC_FILE = re.compile(r"(?:^|/)libc-2\.(\d+)\.so$")
_GLIBC_VERSION = re.compile(rb"release version 2\.(\d+)")


def _python_layout(tarball: Path) -> dict[str, Any]:
    """The image's python3: version, where pip's files go, its executable; and the minor version of glibc."""
    pythons: list[tuple[str, int]] = []
    glibc: int | None = None
    with tarfile.open(tarball) as tar:
        for member in tar:
            name = member.name
            if (found := _PYTHON_STDLIB.match(name)) and member.isfile():
                pythons.append((found.group(1), int(found.group(2))))
            elif glibc is None and (found := _GLIBC_FILE.search(name)):
                glibc = int(found.group(1))
            elif glibc is None and name.endswith("/libc.so.6") and member.isfile():
                f = tar.extractfile(member)
                if f is not None and (stated := _GLIBC_VERSION.search(f.read())):
                    glibc = int(stated.group(1))
    if not pythons:
        raise DockerSandboxError("the base image has no python3 (no lib/python3.X/os.py)")
    if glibc is None:
        raise DockerSandboxError("the base image has no glibc (manylinux wheels need it; musl is not supported)")
    prefix, minor = max(pythons, key=lambda p: (p[0] == "usr/local/", p[1]))  # a python.org build wins
    # Debian's python3 reads /usr/local/lib/python3.X/dist-packages; a python.org build its site-packages
    site = f"usr/local/lib/python3.{minor}/" + ("site-packages" if prefix == "usr/local/" else "dist-packages")
    return {"python": f"3.{minor}", "site": site, "executable": f"/{prefix}bin/python3", "glibc": f"2.{glibc}"}


def _architecture(client: Any) -> str:
    """The engine's CPU architecture in wheel tags (x86_64, aarch64…)."""
    try:
        arch = client.info().get("Architecture") or ""
    except Exception:
        arch = ""
    arch = arch or os.uname().machine
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


def platform_tags(glibc: str, arch: str) -> list[str]:
    """pip --platform values for a glibc: manylinux_2_N down to 2_5, then manylinux2014 (pip adds 2010, 1)."""
    newest = int(glibc.split(".")[1])
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(newest, OLDEST_GLIBC_MINOR - 1, -1)]
    return tags + [f"manylinux2014_{arch}"]


def _pip_install(wanted: tuple[str, ...], staging: Path, layout: dict[str, Any], arch: str, log_file: Path) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--target", str(staging), "--only-binary=:all:",
            "--python-version", layout["python"], "--implementation", "cp",
            *[arg for tag in platform_tags(layout["glibc"], arch) for arg in ("--platform", tag)],
            "--no-compile", "--no-input", "--progress-bar", "off", "--disable-pip-version-check", *wanted]
    with open(log_file, "wb") as out:
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    if code != 0:
        lines = log_file.read_text(errors="replace").strip().splitlines()
        errors = [line for line in lines if line.startswith("ERROR")] or lines[-15:]
        raise DockerSandboxError(f"pip could not install {' '.join(wanted)} for the image's Python {layout['python']}"
                                 " (binary wheels only: a package with no wheel for this platform cannot be "
                                 "installed this way):\n" + "\n".join(errors[-15:]))


def _installed(staging: Path) -> list[str]:
    """'name version' of each distribution in the staging folder."""
    found = []
    for info in sorted(staging.glob("*.dist-info")):
        meta: dict[str, str] = {}
        try:
            for line in (info / "METADATA").read_text(errors="replace").splitlines():
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                meta.setdefault(key.strip(), value.strip())
        except OSError:
            pass
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        found.append(f"{meta.get('Name', name)} {meta.get('Version', version)}")
    return sorted(found, key=str.lower)


def _compile(client: Any, base: str, staging: Path, layout: dict[str, Any], log: Callable[[str], None]) -> None:
    """Byte-compile the staged files with the image's own python, in a container without network."""
    target = "/" + layout["site"]
    command = ["python3", "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
               "-s", STAGING, "-p", target, STAGING]  # tracebacks name the files where they will be
    container = client.containers.create(
        base, command, user=f"{os.getuid()}:{os.getgid()}", network_mode="none", read_only=True,
        cap_drop=["ALL"], security_opt=["no-new-privileges"], working_dir=STAGING, labels={"rlm.image-build": "1"},
        volumes={str(staging): {"bind": STAGING, "mode": "rw"}}, environment={"HOME": STAGING})
    try:
        container.start()
        status = container.wait(timeout=1800).get("StatusCode")
        if status:  # a few files that are not valid Python for this version (test data…) stay uncompiled
            output = container.logs().decode("utf-8", "replace").strip().splitlines()
            log(f"compileall exit code {status} (those files stay uncompiled): " + " | ".join(output[-3:]))
    finally:
        container.remove(force=True)


def _assemble(exported: Path, staging: Path, layout: dict[str, Any], out: Path) -> None:
    """The image's tar: the base's files, then the staged distributions (and their scripts, to /usr/local/bin)
    owned by root and world-readable. The engine refuses duplicate paths, so a base file the staged files
    replace (a directory of the site path, say) is left out of the copy."""
    site = layout["site"]
    scripts = staging / "bin"

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name == f"{site}/bin" or info.name.startswith(f"{site}/bin/"):
            return None  # the scripts go to /usr/local/bin (below)
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        if info.isdir():
            info.mode = 0o755
        elif not info.issym():
            info.mode = 0o755 if info.mode & 0o111 else 0o644
        return info

    parts = site.split("/")
    parents = ["/".join(parts[:depth]) for depth in range(4, len(parts))]  # usr/local/lib/python3.X
    script_files = sorted(p for p in scripts.iterdir() if p.is_file() and not p.is_symlink()) \
        if scripts.is_dir() else []
    replaced = {*parents, site, *(f"usr/local/bin/{p.name}" for p in script_files)}
    for root, dirs, files in os.walk(staging):
        relative = Path(root).relative_to(staging)
        replaced.update(f"{site}/{(relative / name).as_posix()}" for name in dirs + files)
    with tarfile.open(exported) as base, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for info in base:
            if info.name.rstrip("/") not in replaced:
                tar.addfile(info, base.extractfile(info) if info.isreg() else None)
        for name in parents:
            directory = tarfile.TarInfo(name)
            directory.type, directory.mtime, directory.mode = tarfile.DIRTYPE, int(time.time()), 0o755
            directory.uname = directory.gname = "root"  # what as_root makes of a directory
            tar.addfile(directory)
        tar.add(staging, arcname=site, filter=as_root)  # recursive, sorted
        for script in script_files:
            data = script.read_bytes()
            first, newline, rest = data.partition(b"\n")
            if first.startswith(b"#!") and b"python" in first:  # pip wrote the host's interpreter there
                data = b"#!" + layout["executable"].encode() + newline + rest
            info = tarfile.TarInfo(f"usr/local/bin/{script.name}")
            info.size, info.mode, info.mtime = len(data), 0o755, int(script.stat().st_mtime)
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))


def _changes(config: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """``docker import --change`` lines that give the new image the base's configuration plus ``labels``."""
    changes = []
    if config.get("Cmd"):
        changes.append("CMD " + json.dumps(config["Cmd"]))
    if config.get("Entrypoint"):
        changes.append("ENTRYPOINT " + json.dumps(config["Entrypoint"]))
    if config.get("User"):
        changes.append(f"USER {config['User']}")
    if config.get("WorkingDir"):
        changes.append(f"WORKDIR {config['WorkingDir']}")
    for variable in config.get("Env") or []:
        key, _, value = variable.partition("=")
        changes.append(f"ENV {key}={json.dumps(value)}")
    for key, value in {**(config.get("Labels") or {}), **labels}.items():
        changes.append(f"LABEL {key}={json.dumps(value)}")
    return changes
