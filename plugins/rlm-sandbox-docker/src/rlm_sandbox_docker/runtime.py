"""The ``docker`` sandbox runtime: one hardened, persistent container per sandbox session.

A session (one per run, one per child run) starts one container running the host's stdlib-only ``worker.py``
and talks to it in JSON lines over the container's attach socket (``channel.py``); host functions such as
``llm_query`` travel over the same channel, so the container has no network at all. The request/response
logic, timeouts and restarts (a fresh container with the host-set variables and functions restored) are the
host's ``WorkerSession``, shared with the ``process`` runtime.

By default the container has no network, a read-only root filesystem with a size-limited tmpfs work dir, a
non-root user, no capabilities, no-new-privileges, memory / CPU / pids limits, and an explicit minimal
environment (nothing from the host's). A per-session host directory is mounted read-only at ``/rlm-input``:
a large value given to ``set_variable`` (above ``file_threshold`` bytes) is written there and the worker loads
it from the file (``set_file``) instead of receiving it through the channel. The container is removed when the
session ends or is restarted; containers left by killed rlm processes are removed at the next start (and by
``rlm sandbox cleanup``).

A session given a workspace (``SandboxServices.workspace``: an environment's project folder) bind-mounts it
read-write at ``workspace_dir`` (``/workspace``), makes it the working directory and runs as the folder's owner
(HOME and TMPDIR stay on the tmpfs). A session given packages (``SandboxServices.packages``) runs the image
``rlm sandbox build-image --with …`` derives for them (``rlm-sandbox:py-<hash>``), unless ``image`` is set. A
missing image is built before the run starts (``prepare``, which the host's planner calls) or at a session's start
when ``build_missing`` allows it (``provision.py``).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from rlm_host import SandboxServices
from rlm_host.sdk.context import TextFile
from rlm_host.sdk.sandbox import (
    WORKER_SCRIPT, SandboxInfo, SandboxLimits, WorkerSession, sweep_workspace, workspace_metadata,
)

from rlm_sandbox_docker import DEFAULT_IMAGE, ISOLATION, LABEL
from rlm_sandbox_docker.channel import ContainerChannel
from rlm_sandbox_docker.engine import (
    HOST_DIR_LABEL, HOST_DIR_PREFIX, OWNER_LABEL, DockerSandboxError, connect, derived_tag, engine_address,
    forget_client, owner_label, package_set, require_image, sweep_once,
)
from rlm_sandbox_docker.provision import ensure_image, provide_image
from rlm_sandbox_docker.settings import DockerSettings, size_bytes

IMAGE_WORKER = "/opt/rlm/worker.py"  # where `rlm sandbox build-image` puts the worker
HOST_WORKER = "/opt/rlm-host/worker.py"  # where the host's worker is mounted (worker = "host")


class DockerSandbox(WorkerSession):
    """A persistent REPL session in a hardened container (a security boundary)."""

    info = SandboxInfo(name="docker", security_boundary=True, isolation=ISOLATION,
                       python_notes="Full CPython with its standard library; no network, and files can be "
                       "written only under the working directory.")
    worker_noun = "the sandbox container"

    def __init__(self, settings: DockerSettings | None = None, limits: SandboxLimits | None = None, *,
                 run_id: str | None = None, workspace: Path | str | None = None,
                 packages: Iterable[str] = ()) -> None:
        super().__init__(limits)
        self.settings = settings or DockerSettings()
        #: the host folder mounted read-write as the working directory (resolved), or None
        self.workspace = resolve_workspace(workspace) if workspace is not None else None
        #: version-control and tool metadata in the workspace at the start: mounted read-only; anything of the kind
        #: the code creates is removed after each step (rlm_host.sweep_workspace)
        self.metadata = workspace_metadata(self.workspace) if self.workspace is not None else set()
        #: the Python distributions the session's image must hold (SandboxServices.packages)
        self.packages = package_set(packages)
        #: the image used: [sandbox.docker] image, or for packages (and no image of one's own) the derived image
        derived = bool(self.packages) and self.settings.image == DEFAULT_IMAGE
        self.image = derived_tag(self.packages) if derived else self.settings.image
        self._built_with = self.packages if derived else ()  # what a missing image's build command installs
        if self.workspace is not None:
            self.info = self.info.model_copy(update={"python_notes": (
                "Full CPython with its standard library; no network. The working directory "
                f"{self.settings.workspace_dir} is the project folder (read-write, shared with the host); "
                f"elsewhere only {self.settings.workdir} (HOME, TMPDIR) is writable.")})
        self.start_timeout = self.settings.start_timeout
        self.control_timeout = self.settings.control_timeout
        self.session_id = uuid.uuid4().hex[:12]
        self.run_id = run_id or self.session_id  # the engine's factory does not pass the run id
        self._client: Any = None
        self._dir: Path | None = None  # host side: <dir>/input (mounted read-only), <dir>/worker.py
        self._files: dict[str, tuple[Path, Any]] = {}  # host variable → (its file, the value written there)
        self._counter = itertools.count(1)

    # -- what tests and tools look at ---------------------------------------------------------------------
    @property
    def container(self) -> Any:
        """The running container (docker SDK object), None when there is none."""
        channel = self._res.channel
        return channel.container if isinstance(channel, ContainerChannel) else None

    @property
    def container_id(self) -> str | None:
        container = self.container
        return container.id if container is not None else None

    @property
    def input_dir(self) -> Path | None:
        """The host directory mounted read-only in the container (None before the first start)."""
        return self._dir / "input" if self._dir else None

    def labels(self) -> dict[str, str]:
        """The labels every container of this session carries."""
        return {LABEL: "1", "rlm.run": self.run_id, "rlm.session": self.session_id, OWNER_LABEL: owner_label(),
                HOST_DIR_LABEL: str(self._dir or "")}

    # -- what the code leaves in the workspace -----------------------------------------------------------
    def execute(self, code: str, *, timeout: float | None = None) -> Any:
        try:
            return super().execute(code, timeout=timeout)
        finally:
            self._sweep_workspace()

    def shutdown(self) -> None:
        super().shutdown()
        self._sweep_workspace()  # the container is gone: nothing can leave more

    def _sweep_workspace(self) -> None:
        """The code runs as the workspace's owner, so it could leave a set-user-ID (or set-group-ID) program in
        the host folder for any local user to run with the owner's rights (root's, for a root-owned folder), or a
        new ``.git`` whose config the user's git would run: after every step and at the end both are undone."""
        if self.workspace is not None:
            sweep_workspace(self.workspace, self.metadata)

    # -- before the run ----------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Before a run starts (the planner calls it on a session it never starts): the image this session would
        use is present, or built now when ``build_missing`` allows (the question on a terminal, the progress on
        stderr); DockerSandboxError naming the fix otherwise, and the run stops before it starts (exit 2).
        Nothing is left to shut down."""
        client = connect(self.settings.base_url)
        ensure_image(client, self.image, self._built_with, self.settings, engine_address(self.settings.base_url))

    # -- launching ----------------------------------------------------------------------------------------
    def _prepare(self) -> Path:
        """Once per session: reach the engine, check the image, sweep stale containers, make the host dir (returned)."""
        client = connect(self.settings.base_url)
        provide_image(client, self.image, self._built_with, self.settings, engine_address(self.settings.base_url))
        if self.settings.cleanup_stale:
            sweep_once(client, engine_address(self.settings.base_url))
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix=HOST_DIR_PREFIX))  # 0700: private on the host
            directory = self._dir
            self._res.cleanups.append(lambda: shutil.rmtree(directory, ignore_errors=True))
            (directory / "input").mkdir()
            os.chmod(directory / "input", 0o755)  # the mount bypasses the private parent; the container's user reads
            shutil.copyfile(WORKER_SCRIPT, directory / "worker.py")
            os.chmod(directory / "worker.py", 0o644)
        self._client = client
        return self._dir

    def _container_options(self) -> dict[str, Any]:
        s = self.settings
        memory_mb = self.limits.memory_mb
        memory = s.memory or f"{memory_mb + size_bytes(s.tmpfs_size) // 2**20 + 256}m"
        rlimit_mb = min(memory_mb, size_bytes(memory) // 2**20)
        worker = IMAGE_WORKER if s.worker == "image" else HOST_WORKER
        assert self._dir is not None  # made by _prepare, with the client
        volumes = {str(self._dir / "input"): {"bind": s.input_dir, "mode": "ro"}}
        if s.worker == "host":
            volumes[str(self._dir / "worker.py")] = {"bind": HOST_WORKER, "mode": "ro"}
        user, working_dir = s.user, s.workdir
        if self.workspace is not None:
            # The one host folder the code can write. The code runs as the folder's owner (or workspace_user):
            # as 65534 it could not write a folder the host user owns, and what it creates there belongs to the
            # host user, not to a uid nobody on the host has. Everything else keeps its hardening.
            volumes[str(self.workspace)] = {"bind": s.workspace_dir, "mode": "rw"}
            for entry in sorted(self.metadata):  # .git, .envrc…: read-only inside (a link is never mounted)
                if not (self.workspace / entry).is_symlink():
                    volumes[str(self.workspace / entry)] = {"bind": f"{s.workspace_dir}/{entry}", "mode": "ro"}
            user, working_dir = s.workspace_user or workspace_owner(self.workspace), s.workspace_dir
        options = dict(
            image=self.image,
            command=[s.python, "-I", "-u", worker, "--memory-mb", str(rlimit_mb),
                     "--max-output-chars", str(self.limits.max_output_chars)],
            name=f"rlm-{self.session_id}-{next(self._counter)}",
            labels=self.labels(),
            stdin_open=True, tty=False, detach=False,  # detach=False: StdinOnce, so stdin closes with us
            network_mode=s.network_mode, read_only=s.read_only, user=user,
            cap_drop=list(s.cap_drop), security_opt=list(s.security_opt),
            mem_limit=memory, memswap_limit=memory, nano_cpus=int(s.cpus * 1e9), pids_limit=s.pids_limit,
            ipc_mode=s.ipc_mode,
            tmpfs={s.workdir: f"rw,noexec,nosuid,nodev,size={s.tmpfs_size},mode=1777"},
            volumes=volumes, working_dir=working_dir, hostname="rlm-sandbox",
            environment={"HOME": s.workdir, "TMPDIR": s.workdir, "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8",
                         "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/local/bin:/usr/bin:/bin", **s.env},
        )
        if s.runtime:
            options["runtime"] = s.runtime
        return options

    def _launch(self) -> ContainerChannel:
        """Create, attach and start a new container for this session."""
        if self._client is None:
            self._prepare()
        import docker.errors

        options = self._container_options()
        try:
            container = self._client.containers.create(**options)
        except docker.errors.ImageNotFound:
            require_image(self._client, self.image, self._built_with)  # raises the error naming the fix
            raise
        except docker.errors.APIError as exc:
            raise DockerSandboxError(f"cannot create the sandbox container: {exc.explanation or exc}") from None
        except docker.errors.DockerException as exc:
            raise self._engine_lost(exc) from None
        except OSError as exc:  # requests' ConnectionError is an OSError
            raise self._engine_lost(exc) from None
        note = f"the container's limit is {options['mem_limit']}"
        try:
            return ContainerChannel(self._client, container, memory_note=note)
        except Exception as exc:
            try:
                container.remove(force=True)
            except Exception:
                pass
            explanation = getattr(exc, "explanation", None) or exc
            raise DockerSandboxError(f"cannot start the sandbox container from {self.image}: "
                                     f"{explanation}") from None

    def _engine_lost(self, exc: BaseException) -> DockerSandboxError:
        forget_client(self.settings.base_url)
        self._client = None
        try:
            connect(self.settings.base_url)
        except DockerSandboxError as unreachable:
            return unreachable
        return DockerSandboxError(f"the Docker engine failed: {exc}")

    # -- large values as read-only files ------------------------------------------------------------------
    def _set_request(self, name: str, value: Any) -> dict:
        """Small values go through the channel; large strings and JSON values go as a read-only file."""
        previous = self._files.get(name)
        if previous is not None and previous[1] is value:  # restoring after a restart: the file is still there
            return self._file_message(name, previous[0])
        if isinstance(value, TextFile):  # a context kept on disk: linked (or copied) in, never read by the host
            return self._text_file_message(name, value, previous)
        data = self._encode_large(value)
        if previous is not None:
            previous[0].unlink(missing_ok=True)
            del self._files[name]
        if data is None:
            return {"op": "set", "name": name, "value": value}
        payload, fmt = data
        directory = self._dir if self._dir is not None else self._prepare()
        path = directory / "input" / f"{name}-{next(self._counter)}.{fmt}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(payload)
        finally:
            os.close(fd)
        self._files[name] = (path, value)
        return self._file_message(name, path)

    def _encode_large(self, value: Any) -> tuple[bytes, str] | None:
        """(bytes, 'text' | 'json') for a value above the threshold, None for one the channel should carry."""
        threshold = self.settings.file_threshold
        if threshold <= 0:
            return None
        if isinstance(value, str):
            if len(value) <= threshold:
                return None
            try:
                return value.encode("utf-8"), "text"
            except UnicodeEncodeError:  # lone surrogates: JSON escapes them
                return json.dumps(value).encode("ascii"), "json"
        if not isinstance(value, (list, dict, tuple)):
            return None
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))  # TypeError if not JSON data
        if len(text) <= threshold:
            return None
        try:
            return text.encode("utf-8"), "json"
        except UnicodeEncodeError:
            return json.dumps(value, separators=(",", ":")).encode("ascii"), "json"

    def _text_file_message(self, name: str, value: TextFile, previous: Any) -> dict:
        if previous is not None:
            previous[0].unlink(missing_ok=True)
        directory = self._dir if self._dir is not None else self._prepare()
        path = directory / "input" / f"{name}-{next(self._counter)}.textfile"
        try:
            if not value.path.stat().st_mode & 0o004:
                raise PermissionError("not readable by the container's user: copied instead")
            os.link(value.path, path)  # same filesystem, already world-readable: no copy at all
        except OSError:
            shutil.copyfile(value.path, path)  # in the kernel (sendfile): the text never enters this process
            os.chmod(path, 0o644)
        self._files[name] = (path, value)
        return self._file_message(name, path)

    def _file_message(self, name: str, path: Path) -> dict:
        fmt = {".text": "text", ".textfile": "textfile"}.get(path.suffix, "json")
        return {"op": "set_file", "name": name, "path": f"{self.settings.input_dir}/{path.name}", "format": fmt}


def resolve_workspace(workspace: Path | str) -> Path:
    """The workspace as an absolute host path with symlinks resolved; DockerSandboxError unless a directory."""
    path = Path(workspace).expanduser().resolve()
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise DockerSandboxError(f"the sandbox workspace {path} {what}: give an existing directory (--workdir)")
    return path


def workspace_owner(path: Path) -> str:
    """'uid:gid' of a folder's owner."""
    st = path.stat()
    return f"{st.st_uid}:{st.st_gid}"


def create(settings: DockerSettings | dict | None, services: SandboxServices) -> DockerSandbox:
    """The ``SandboxSpec`` factory: ``create(settings, services) -> DockerSandbox``."""
    if isinstance(settings, dict):
        settings = DockerSettings(**settings)
    return DockerSandbox(settings, services.limits, workspace=getattr(services, "workspace", None),
                         packages=getattr(services, "packages", ()))
