"""rlm-harness: the ``harness`` environment (a tool-using coding agent over a project folder whose file tools are
confined to the folder, whose commands, tests and searches run inside the run's sandbox, and which offers the
tools of the user's MCP servers, every change subject to ``[run] approve``), the ``rlm harness`` command and the
``coding_quick`` benchmark."""

#: What the harness's sandbox must import: pytest, for ``run_tests`` (a project adds its own test dependencies
#: with ``[environment.harness] sandbox_packages``).
SANDBOX_PACKAGES = ("pytest",)
