"""A missing sandbox image, built when a session needs it (``[sandbox.docker] build_missing``).

``provide_image`` is what a session calls instead of ``require_image`` (and ``ensure_image``, what the planner
has a run's session do before the run starts: ``DockerSandbox.prepare``): a present image is returned at once. A
missing one that ``rlm sandbox build-image`` can make — the base (any tag of the ``rlm-sandbox`` repository but
a derived one) or the ``--with`` image of the session's packages — is built when the setting says ``always``,
or says ``ask`` and the person at the terminal answers yes (asked once per image and process); otherwise, and
when the build fails or is interrupted, the session fails with the error ``require_image`` gives today.

One build per engine and image at a time, across threads and processes (``rlm bench run -j N``): a lock file in
the user's cache folder, private to the user, and the image looked up again once the lock is held. A build
imports under a temporary tag and is tagged only when complete, so an interrupted one leaves no half image.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlm_sandbox_docker import DEFAULT_IMAGE, DERIVED_REPOSITORY, build_view
from rlm_sandbox_docker import image as images
from rlm_sandbox_docker.engine import DockerSandboxError, build_command, package_set, require_image

#: Rough build times on a 2-core machine, for the question: the base 40–60 s (debootstrap downloads), a
#: ``--with`` image ≈ 6 s (pytest) to 30 s (dspy) plus the download.
BASE_MINUTES, DERIVED_MINUTES = 1, 1
_DERIVED_TAG = re.compile(rf"^{re.escape(DERIVED_REPOSITORY)}:py-[0-9a-f]{{10}}$")
_declined: set[str] = set()  # images the person said no to in this process: the question is asked once
ALWAYS = 'build_missing = "always"'


def buildable(image: str, packages: Any = ()) -> bool:
    """Whether ``rlm sandbox build-image`` makes this image: the ``--with`` image of ``packages``, or a base
    under a tag of the ``rlm-sandbox`` repository (a derived tag named without its packages cannot be rebuilt)."""
    if package_set(packages):
        return True
    repository, _, _tag = image.rpartition(":") if ":" in image.rpartition("/")[2] else (image, "", "")
    return repository == DERIVED_REPOSITORY and not _DERIVED_TAG.match(image)


def base_problem() -> str:
    """Why a base image cannot be built in this process ("" when it can): debootstrap needs root and its tools."""
    if os.geteuid() != 0:
        return "building the base image needs root (debootstrap): run `sudo rlm sandbox build-image`"
    import shutil

    missing = [tool for tool in ("debootstrap", "tar") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not installed: apt-get install {' '.join(missing)}" if missing else ""


def on_demand(settings: Any, image: str | None = None) -> bool:
    """Whether a missing ``image`` (default: the configured one) would be built when a session starts here:
    the policy allows it without a question, or with one a person can answer, and this process can build it."""
    image = image or settings.image
    policy = settings.build_missing
    if policy == "never" or not buildable(image) or (policy == "ask" and not build_view.attended()):
        return False
    return not base_problem()


def provide_image(client: Any, image: str, packages: Any, settings: Any, address: str) -> Any:
    """The image (a docker SDK object); built first when missing and ``build_missing`` allows it; otherwise
    ``require_image``'s DockerSandboxError naming the build command."""
    try:
        return require_image(client, image, packages)
    except DockerSandboxError as missing:
        policy = settings.build_missing
        if not missing.problem.endswith(" not found"):  # the engine refused the lookup: nothing to build
            raise
        if policy == "never" or not buildable(image, packages) or image in _declined:
            raise
        if policy == "ask" and not build_view.attended():
            raise
        error = missing
    with image_lock(address, image):
        if images.image_exists(client, image):  # built by another session while this one waited
            return require_image(client, image, packages)
        if image in _declined:
            raise error
        base = DEFAULT_IMAGE if package_set(packages) else image
        base_missing = base == image or not images.image_exists(client, base)
        problem = base_problem() if base_missing else ""
        if problem:
            raise DockerSandboxError(f"{error} ({problem})", hint=error.hint, problem=error.problem) from None
        with build_view.paused_live_view():
            if policy == "ask" and not build_view.ask(question(image, packages, base_missing and base != image)):
                _declined.add(image)
                raise error
            if base != image and base_missing:
                with image_lock(address, base):
                    if not images.image_exists(client, base):
                        _build(client, base, (), settings, error)
            _build(client, image, package_set(packages), settings, error)
    return require_image(client, image, packages)


def ensure_image(client: Any, image: str, packages: Any, settings: Any, address: str) -> Any:
    """``provide_image`` before a run starts (``DockerSandbox.prepare``): the same image, built the same way. A
    missing image left unbuilt because nobody could be asked (``build_missing = "ask"`` with no terminal) fails
    with a hint naming the setting that would build it, besides the command."""
    try:
        return provide_image(client, image, packages, settings, address)
    except DockerSandboxError as missing:
        unasked = settings.build_missing == "ask" and not build_view.attended()
        if not (unasked and str(missing).startswith("image ") and buildable(image, packages)):
            raise
        hint = f"{missing.hint or 'run `rlm sandbox build-image`'}, or set [sandbox.docker] {ALWAYS} to build " \
               "it when a run needs it (a run on a terminal offers to)"
        raise DockerSandboxError(str(missing), hint=hint, problem=missing.problem) from None


def question(image: str, packages: Any, with_base: bool) -> str:
    """The one question: which image, what it holds, about how long."""
    wanted = package_set(packages)
    minutes = (BASE_MINUTES if not wanted or with_base else 0) + (DERIVED_MINUTES if wanted else 0)
    what = f" (with {', '.join(wanted)})" if wanted else ""
    base = f", after its base {DEFAULT_IMAGE}" if with_base else ""
    about = f"about {minutes} minute{'s' if minutes != 1 else ''}"
    return f"The Docker sandbox image {image}{what} is missing. Build it now{base} ({about})?"


def _build(client: Any, image: str, wanted: tuple[str, ...], settings: Any, error: DockerSandboxError) -> None:
    """Build ``image`` under a temporary tag with the progress shown, then tag it; a failure or Ctrl-C removes
    what was made and raises DockerSandboxError with the build command (no traceback)."""
    temporary = f"{DERIVED_REPOSITORY}:building-{uuid.uuid4().hex[:12]}"
    phases = len(images.DERIVED_PHASES) if wanted else len(images.BASE_PHASES)
    view = build_view.BuildView(image, phases)
    how = f"run `{build_command(wanted)}`" if wanted else error.hint or "run `rlm sandbox build-image`"
    try:
        if wanted:
            result = images.build_derived_image(wanted, temporary, base_url=settings.base_url, log=_quiet,
                                                phase=view.phase)
        else:
            result = images.build_image(temporary, base_url=settings.base_url, log=_quiet, phase=view.phase)
        from docker.utils import parse_repository_tag

        repository, tag = parse_repository_tag(image)
        client.images.get(temporary).tag(repository, tag or "latest")
    except KeyboardInterrupt:
        view.failed("was interrupted")
        _remove(client, temporary)
        raise DockerSandboxError(f"building the sandbox image {image} was interrupted: {how}", hint=how,
                                 problem=f"image {image} not found") from None
    except Exception as exc:
        view.failed()
        _remove(client, temporary)
        reason = exc.problem if isinstance(exc, DockerSandboxError) else f"{type(exc).__name__}: {exc}"
        raise DockerSandboxError(f"building the sandbox image {image} failed: {reason}\n{how}", hint=how,
                                 problem=f"image {image} not found") from None
    _remove(client, temporary)  # the image stays under its real tag
    view.done(f"{result.get('size_mb')} MB" if result.get("size_mb") else "")


def _quiet(message: str) -> None:
    """The builders' log lines: the view shows their phases instead."""


def _remove(client: Any, tag: str) -> None:
    try:
        client.images.remove(tag)
    except Exception:  # never made, or removed already
        pass


# -- the lock ------------------------------------------------------------------------------------------------
def lock_folder() -> Path:
    """``$XDG_CACHE_HOME/rlm/docker-image-locks`` (else ``~/.cache/…``): made private to the user, and refused
    when it is a link or someone else's (a name in a shared folder could be made in advance by another user)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "rlm" / "docker-image-locks"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise DockerSandboxError(f"cannot make the folder of rlm's image-build locks {folder}: {exc}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise DockerSandboxError(f"{folder} is not a folder of yours: remove it (it holds rlm's image-build locks)")
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


@contextmanager
def image_lock(address: str, image: str) -> Iterator[None]:
    """Hold the build lock of ``image`` on the engine at ``address`` (waiting, with a line saying so, while another
    thread or process builds it). The lock goes with the process if it dies."""
    key = hashlib.sha256(f"{address}\n{image}".encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", image)[:60]
    path = lock_folder() / f"{name}-{key}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            build_view.say(f"waiting for the build of {image} under way in another rlm session…")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
