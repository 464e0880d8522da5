"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import BenchmarkPackSpec, EnvironmentSpec, hookimpl

from rlm_env_dspy import SANDBOX_PACKAGES


@hookimpl
def rlm_register_environments():
    return [
        EnvironmentSpec(
            "dspy",
            "Write, patch, test and improve DSPy programs in a project folder (--workdir), verified in the sandbox",
            "rlm_env_dspy.environment:DSPyCodingEnvironment",  # imported only when a run uses it
            aliases=("dspy-coding",),
            settings="rlm_env_dspy.environment:DSPySettings",  # [environment.dspy]
            workspace=True,  # the project folder is the sandbox's read-write working directory
            sandbox_packages=SANDBOX_PACKAGES,  # the verifier runs pytest and imports dspy in the sandbox
        ),
    ]


@hookimpl
def rlm_register_benchmark_packs():
    return [
        BenchmarkPackSpec("dspy_quick", "DSPy coding: 3 tasks in --env dspy, scored by hidden tests in the sandbox",
                          "rlm_env_dspy.bench:dspy_quick"),
        BenchmarkPackSpec("dspy_extended", "DSPy coding: dspy_quick plus 2 harder tasks, scored by hidden tests",
                          "rlm_env_dspy.bench:dspy_extended"),
    ]
