"""The built-in presets keep the benchmark pack contract, and each generated case still gives its pinned answer."""

from __future__ import annotations

from typing import Any

from bench_data import BENCH
from rlm_bench import packs
from rlm_bench.cases import BenchmarkCase
from rlm_host.testing import BenchmarkPackContract


class TestBuiltinPresets(BenchmarkPackContract):
    distribution = "rlm-bench"
    packs = tuple(packs.PRESETS)

    def check_case(self, pack: str, case: dict[str, Any]) -> None:
        built = BenchmarkCase.model_validate(case)
        ready = built.materialize()  # raises when a generator drifts from its pinned answer
        assert ready.task and ready.expected == built.expected
        assert built.context.kind != "none" or built.environment == "generic"  # an RLM case has a context
