"""The plugin's hook implementations: the ``bench`` and ``leaderboard`` commands and the built-in presets.

Imported at every ``rlm`` start, so it imports ``rlm_host`` only; the presets module loads when a benchmark
pack is first asked for, the commands when they run.
"""

from __future__ import annotations

from rlm_host import BenchmarkPackSpec, CommandSpec, hookimpl


@hookimpl
def rlm_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec("bench", "Benchmarks with real data and answers: run presets, compare, report.",
                    "rlm_bench.bench_cmd:app"),
        CommandSpec("leaderboard", "Rank saved benchmarks by mean score, reward, cost, tokens, …",
                    "rlm_bench.leaderboard_cmd:app"),
    ]


@hookimpl
def rlm_register_benchmark_packs() -> list[BenchmarkPackSpec]:
    from rlm_bench.packs import builtin_pack_specs

    return builtin_pack_specs()
