"""Sweeps: a grid of benchmark runs (``rlm bench sweep SWEEP.toml``) on this machine or a Ray cluster.

The driver plans the sweep (one benchmark, with its manifest, per point of the grid), hands every case to an
executor and alone keeps what comes back: each finished case is saved at once in the bench store, so a sweep is
resumable, and its record says how it went. ``rlm bench run`` is a one-point sweep through the same driver.

- ``file``: the sweep file (``[sweep]`` axes, ``[run]``, ``[[override]]``, ``[bench.ray]``), its screening and
  its expansion into points;
- ``plan``: the points' benchmarks and one ``SweepItem`` per case, or what a resume has left to run;
- ``record``: the sweep's signed record, ``<home>/sweeps/<sweep_id>.json``; ``secrets``: what it masks;
- ``driver``: the executor protocol, ``LocalExecutor`` (threads or forked worker processes) and ``SweepDriver``;
- ``worker``: ``SweepItem`` and ``run_item``, one case wherever an executor runs it;
- ``ray_executor``: ``--executor ray``, cases as Ray tasks (imports Ray; nothing here imports it);
- ``command``, ``report``: ``rlm bench sweep`` and ``rlm bench sweep-report``.
"""

from rlm_bench.sweep.driver import CaseLost, Executor, LocalExecutor, Progress, SweepDriver, SweepInterrupted
from rlm_bench.sweep.plan import Plan, plan_sweep, resume_plan
from rlm_bench.sweep.record import SweepRecord, SweepStore, stored_form
from rlm_bench.sweep.worker import SweepItem, run_item

__all__ = ["CaseLost", "Executor", "LocalExecutor", "Progress", "SweepDriver", "SweepInterrupted", "Plan",
           "plan_sweep", "resume_plan", "SweepRecord", "SweepStore", "stored_form", "SweepItem",
           "run_item"]
