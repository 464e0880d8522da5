"""The Docker engine as the sandbox sees it: connecting, image checks, labels and stale-container cleanup.

Every failure a user can fix is a ``DockerSandboxError`` whose message names the fix (it is both a
``SandboxError``, which ends a run cleanly, and an ``RlmError``, which the CLI prints as one line).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from rlm_host import RlmError, SandboxError

from rlm_sandbox_docker import DEFAULT_IMAGE, DERIVED_REPOSITORY, ENGINE_HINT, LABEL

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
OWNER_LABEL = "rlm.owner"  # "<hostname>:<pid>:<process start time>" of the rlm process owning a container
HOST_DIR_LABEL = "rlm.host-dir"  # the session's host directory (large values), removed with a stale container
HOST_DIR_PREFIX = "rlm-docker-"


class DockerSandboxError(SandboxError, RlmError):
    """The Docker sandbox cannot be used as configured; the message says how to fix it.

    ``problem`` is the message without the fix, for places that show the fix separately (the doctor).
    """

    def __init__(self, message: str, *, hint: str = "", problem: str = "") -> None:
        super().__init__(message, hint=hint)
        self.problem = problem or message


def engine_address(base_url: str | None = None) -> str:
    """Where the engine is looked for: the setting, else DOCKER_HOST, else the default socket."""
    return base_url or os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def connect(base_url: str | None = None, *, timeout: float = 60, cached: bool = True) -> Any:
    """A ``docker.DockerClient`` whose engine answered; DockerSandboxError naming the fix otherwise.

    Clients are cached per address (a client is thread-safe; creating one costs a round trip).
    """
    try:
        import docker
    except ImportError:
        raise DockerSandboxError("the docker package is not installed: pip install docker") from None
    address = engine_address(base_url)
    with _clients_lock:
        client = _clients.get(address) if cached else None
        if client is not None:
            return client
        try:
            if base_url:
                client = docker.DockerClient(base_url=base_url, timeout=timeout)
            else:
                client = docker.from_env(timeout=timeout)  # DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH
            client.api.ping()
        except Exception as exc:  # DockerException, requests' ConnectionError, a bad URL…
            cause = _cause(exc)
            fix = ENGINE_HINT
            if cause == "permission denied":
                fix = "add your user to the `docker` group (then log in again), or run rlm as root"
            raise DockerSandboxError(f"cannot reach the Docker engine at {address}: {fix} ({cause})", hint=fix,
                                     problem=f"cannot reach the Docker engine at {address} ({cause})") from None
        if cached:
            _clients[address] = client
        return client


def forget_client(base_url: str | None = None) -> None:
    """Drop the cached client for an address (after the engine went away)."""
    with _clients_lock:
        _clients.pop(engine_address(base_url), None)


# -- images with extra Python packages ----------------------------------------------------------------------
def package_set(packages: Any) -> tuple[str, ...]:
    """Requirement strings as one canonical set: stripped, without duplicates or empties, sorted."""
    return tuple(sorted({str(p).strip() for p in packages} - {""}))


def derived_tag(packages: Any) -> str:
    """The default tag of the image holding ``packages``: ``rlm-sandbox:py-<sha256 of the sorted set>[:10]``.

    It depends only on the requirement strings, so a session given the same packages finds the same image.
    """
    digest = hashlib.sha256("\n".join(package_set(packages)).encode("utf-8")).hexdigest()
    return f"{DERIVED_REPOSITORY}:py-{digest[:10]}"


def build_command(packages: Any) -> str:
    """The command that builds the derived image of ``packages`` under its default tag."""
    return "rlm sandbox build-image" + "".join(f" --with {shlex.quote(p)}" for p in package_set(packages))


def require_image(client: Any, image: str, packages: Any = ()) -> Any:
    """The image, or DockerSandboxError saying how to get it (for a derived image: the build command)."""
    import docker.errors

    try:
        return client.images.get(image)
    except docker.errors.ImageNotFound:
        if packages:
            how = f"run `{build_command(packages)}`"
            listed = ", ".join(package_set(packages))
            raise DockerSandboxError(f"image {image} (the sandbox image with {listed}) not found: {how}",
                                     hint=how, problem=f"image {image} not found") from None
        how = "run `rlm sandbox build-image" + ("" if image == DEFAULT_IMAGE else f" --tag {image}") + "`"
        raise DockerSandboxError(f"image {image} not found: {how} (or `docker pull {image}` where a registry is "
                                 f"reachable)", hint=how, problem=f"image {image} not found") from None
    except docker.errors.APIError as exc:
        raise DockerSandboxError(f"cannot inspect the image {image}: {_short(exc)}") from None


# -- owners and stale containers ---------------------------------------------------------------------------
def _start_time(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (tells a live process from a reused pid)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def owner_label() -> str:
    """This process as a container owner: '<hostname>:<pid>:<start time>'."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()) or '?'}"


def owner_is_gone(owner: str) -> bool:
    """Whether the rlm process that owns a container has ended (only owners on this machine are judged)."""
    host, _, rest = owner.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started


def remove_stale(client: Any, *, everything: bool = False) -> list[str]:
    """Remove labelled containers whose owner process is gone (or all of them); return their names."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True):
        owner = container.labels.get(OWNER_LABEL, "")
        if everything or owner_is_gone(owner):
            try:
                container.remove(force=True)
                removed.append(container.name)
            except Exception:  # gone meanwhile
                continue
            if owner.partition(":")[0] == socket.gethostname():
                _remove_host_dir(container.labels.get(HOST_DIR_LABEL, ""))
    return removed


def _remove_host_dir(path: str) -> None:
    """Remove a dead session's host directory (copies of its large values), if it is one of ours."""
    directory = Path(path)
    if (path and directory.name.startswith(HOST_DIR_PREFIX) and directory.parent == Path(tempfile.gettempdir())
            and directory.is_dir() and not directory.is_symlink()):
        shutil.rmtree(directory, ignore_errors=True)


_swept: set[str] = set()


def sweep_once(client: Any, address: str) -> None:
    """Remove stale containers once per engine per process (at the first session start)."""
    if address in _swept:
        return
    _swept.add(address)
    try:
        remove_stale(client)
    except Exception:  # never let housekeeping stop a run
        pass


def _cause(exc: BaseException) -> str:
    """Why a connection failed, in a few words."""
    text = str(exc)
    for needle, cause in (("FileNotFoundError", "no engine socket there"), ("No such file", "no engine socket there"),
                          ("ConnectionRefused", "connection refused"), ("Connection refused", "connection refused"),
                          ("PermissionError", "permission denied"), ("Permission denied", "permission denied"),
                          ("timed out", "timed out"), ("Timeout", "timed out")):
        if needle in text:
            return cause
    return _short(exc)


def _short(exc: BaseException) -> str:
    """An exception in one line, without the long urllib3 reprs."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) < 300 else text[:297] + "..."
