"""A test-only environment (``RLM_PLUGIN_MODULES=support.nesting_environment``): ``nesting`` is pure_rlm built
through ``ctx.build_environment``, as plugins build the environments they wrap, so a test can see which
``[environment.pure_rlm]`` settings a nested environment gets."""

from __future__ import annotations

from typing import Any

from rlm_host import EnvironmentSpec, hookimpl


def build(settings: Any, ctx: Any) -> Any:
    return ctx.build_environment("pure_rlm")


@hookimpl
def rlm_register_environments():
    return [EnvironmentSpec("nesting", "A test environment: pure_rlm built through build_environment",
                            "support.nesting_environment:build")]
