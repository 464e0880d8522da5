"""rlm-runs: the saved runs of rlm — browse them (``rlm runs list``, ``show``, ``export``), step through one
(``rlm replay``), compare two (``rlm runs compare``), fork one at a step with other settings (``rlm runs fork``),
play one back as a model (``--model replay:RUN``), and see or stop the runs in progress (``rlm runs active``,
``cancel``).

For other plugins (the TUI's compare view): ``compare_runs(a, b)`` over two ``Replay``s and ``render_comparison``.
"""

from rlm_runs.compare import RunComparison, compare_runs, render_comparison

__all__ = ["RunComparison", "compare_runs", "render_comparison"]
