"""Registration hooks of the good test plugin: cheap, no heavy import at module level."""

from rlm_host import (
    BenchmarkPackSpec,
    CommandSpec,
    DoctorCheck,
    EnvironmentSpec,
    FrameworkSpec,
    ProviderSpec,
    Readiness,
    SandboxSpec,
    SinkSpec,
    hookimpl,
)


@hookimpl
def rlm_register_environments():
    return [EnvironmentSpec("echo-env", "Echoes the task back (test)", "rlm_test_good.heavy:Echo", aliases=("echo",))]


@hookimpl
def rlm_register_frameworks():
    return [FrameworkSpec("test-framework", "A framework for tests", "rlm_test_good.heavy:Echo")]


@hookimpl
def rlm_register_sandboxes():
    return [
        SandboxSpec(
            "test-box",
            "A sandbox record for tests",
            "rlm_test_good.heavy:Echo",
            settings="rlm_test_good.settings:BoxSettings",
            security_boundary=True,
        )
    ]


@hookimpl
def rlm_register_sinks():
    return [SinkSpec("test-sink", "A sink for tests", "rlm_test_good.heavy:Echo")]


@hookimpl
def rlm_register_benchmark_packs():
    return [BenchmarkPackSpec("test-pack", "A benchmark pack for tests", "rlm_test_good.heavy:Echo")]


@hookimpl
def rlm_register_providers():
    return [ProviderSpec("test-llm", "A provider for tests", "rlm_test_good.heavy:Echo", key_env=("TEST_LLM_KEY",))]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("hello-test", "Say hello from the good test plugin.", "rlm_test_good.cli:app")]


def _always_ready(settings):
    return Readiness(True, "the good plugin is fine")


@hookimpl
def rlm_register_doctor_checks():
    return [DoctorCheck("good-check", "The good plugin's own check", _always_ready)]
