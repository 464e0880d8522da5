"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports rlm_host only."""

from rlm_host import CommandSpec, DoctorCheck, SandboxSpec, hookimpl

from rlm_sandbox_docker import ISOLATION


@hookimpl
def rlm_register_sandboxes():
    return [
        SandboxSpec(
            "docker",
            "A hardened, persistent Docker container per session: a security boundary (needs a Docker engine)",
            "rlm_sandbox_docker.runtime:create",
            settings="rlm_sandbox_docker.settings:DockerSettings",
            security_boundary=True,
            isolation=ISOLATION,
            priority=10,  # after monty (20): a container costs an engine and a start per run
            workspace=True,  # SandboxServices.workspace: bind-mounted read-write as the working directory
            requires=("docker",),
            install_hint="pip install docker",
            check="rlm_sandbox_docker.checks:sandbox_ready",
        )
    ]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("sandbox", "Docker sandbox: build its image, remove stale containers.",
                        "rlm_sandbox_docker.commands:app")]


@hookimpl
def rlm_register_doctor_checks():
    return [DoctorCheck("docker-engine", "the Docker engine answers (for the docker sandbox)",
                        "rlm_sandbox_docker.checks:engine_ready", section="sandbox.docker"),
            # no section: it is given the whole configuration, to find the configured environment's packages
            DoctorCheck("docker-image", "the image the configured environment's docker sessions use is present",
                        "rlm_sandbox_docker.checks:images_ready")]
