"""rlm-env-dspy: the ``dspy`` environment (an agent that writes, patches and tests DSPy programs in a project
folder, verified inside the sandbox) and the ``dspy_quick`` / ``dspy_extended`` coding benchmarks."""

SANDBOX_PACKAGES = ("dspy", "pytest")
