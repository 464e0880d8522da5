"""``[sandbox.docker]``: the container's image and hardening. Every default is the hardened choice."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlm_sandbox_docker import DEFAULT_IMAGE

_SIZE = re.compile(r"^[0-9]+[bkmg]?$", re.IGNORECASE)
_UID_GID = re.compile(r"^[0-9]+:[0-9]+$")


class DockerSettings(BaseModel):
    """How the sandbox container is created (``rlm.toml`` ``[sandbox.docker]``, ``RLM_SANDBOX__DOCKER__*``)."""

    model_config = ConfigDict(extra="forbid")

    # -- the engine and the image
    base_url: str | None = Field(None, description="Docker engine address (default: DOCKER_HOST, else the "
                                    "default socket); the engine must share this machine's filesystem")
    image: str = Field(DEFAULT_IMAGE, description="image with python3 (`rlm sandbox build-image` makes the "
                       "default; e.g. python:3.12-slim where you can pull)")
    python: str = Field("python3", description="the interpreter inside the image")
    worker: Literal["host", "image"] = Field(
        "host", description="'host': mount this rlm's worker.py read-only (always matches the host); "
        "'image': run the image's own /opt/rlm/worker.py")
    runtime: str | None = Field(None, description="OCI runtime, e.g. 'runsc' for gVisor (default: the engine's)")
    build_missing: Literal["ask", "always", "never"] = Field(
        "ask", description="when a run needs an rlm-sandbox image that is missing: 'ask' (on a terminal, offer to "
        "build it; elsewhere fail naming the build command), 'always' (build it, with progress on stderr: CI, "
        "scripts), 'never' (fail naming the build command)")

    # -- hardening
    network_mode: str = Field("none", description="'none': no network at all (host functions use the channel)")
    read_only: bool = Field(True, description="read-only root filesystem")
    user: str = Field("65534:65534", description="uid:gid the code runs as (not root)")
    cap_drop: list[str] = Field(default_factory=lambda: ["ALL"], description="Linux capabilities dropped")
    security_opt: list[str] = Field(default_factory=lambda: ["no-new-privileges"], description="security options")
    memory: str | None = Field(None, description="container memory limit, docker syntax ('2g'); default: the "
                                  "run's memory limit + the work dir + 256m (no swap)")
    cpus: float = Field(1.0, gt=0, description="CPUs the container may use")
    pids_limit: int = Field(256, ge=16, description="processes and threads in the container")
    ipc_mode: str = Field("none", description="'none': a private IPC namespace without /dev/shm ('private' "
                          "mounts a private /dev/shm, which multiprocessing needs)")
    workdir: str = Field("/work", description="the writable tmpfs: working directory, HOME and TMPDIR")
    tmpfs_size: str = Field("256m", description="size of the writable tmpfs (counts towards the memory limit)")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables (the host's "
                                "environment is never passed)")

    # -- a workspace (SandboxServices.workspace: the project folder of an environment that edits files)
    workspace_dir: str = Field("/workspace", description="where a session's workspace (a host folder) is mounted "
                               "read-write; it becomes the working directory (HOME and TMPDIR stay on workdir)")
    workspace_user: str | None = Field(None, description="uid:gid code runs as when a workspace is mounted "
                                       "(default: the workspace folder's owner, so the files it creates there "
                                       "belong to that user on the host)")

    # -- large values and timing
    input_dir: str = Field("/rlm-input", description="where the session's host directory is mounted read-only")
    file_threshold: int = Field(1_000_000, ge=0, description="set_variable values larger than this many bytes "
                                "travel as a read-only file, not through the channel")
    start_timeout: float = Field(60.0, gt=0, description="seconds a new container may take to answer 'ready'")
    control_timeout: float = Field(120.0, gt=0, description="seconds for set/get/list/register requests")
    cleanup_stale: bool = Field(True, description="remove containers of dead rlm processes on this machine at start")

    @field_validator("workspace_dir", "workdir", "input_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or value.rstrip("/") == "":
            raise ValueError(f"{value!r} must be an absolute path in the container other than /")
        return value.rstrip("/")

    @field_validator("workspace_user")
    @classmethod
    def _uid_gid(cls, value: str | None) -> str | None:
        if value is not None and not _UID_GID.match(value):
            raise ValueError(f"{value!r} is not numeric 'uid:gid'")
        return value

    @field_validator("memory", "tmpfs_size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None and not _SIZE.match(value):
            raise ValueError(f"{value!r} is not a size like '512m' or '2g'")
        return value

    @model_validator(mode="after")
    def _distinct_mounts(self) -> DockerSettings:
        if len({self.workspace_dir, self.workdir, self.input_dir}) < 3:
            raise ValueError("workspace_dir, workdir and input_dir must be different paths")
        return self


def size_bytes(size: str) -> int:
    """'512m' → 536870912 (docker's binary units; a bare number is bytes)."""
    unit = size[-1].lower()
    if unit.isdigit():
        return int(size)
    return int(size[:-1]) * 1024 ** "bkmg".index(unit)
