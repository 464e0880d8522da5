"""Trajectories: every run tree's events saved as JSON lines, listed, loaded and replayed step by step.

``TrajectoryWriter`` subscribes to a run's ``EventBus`` and appends to ``<home>/runs/<root_run_id>.jsonl``;
``RunStore`` lists and loads those files; ``Replay`` navigates the loaded events (``rlm_host.cli.render`` shows
them as text).
"""

from rlm_host.trajectory.tree import Replay, ReplayStep, RunTrace, SubCall
from rlm_host.trajectory.store import (AmbiguousRunError, CorruptTrajectoryError, RunNotFoundError, RunStore,
                                      RunSummary, TrajectoryError, TrajectoryWriter)

__all__ = ["TrajectoryWriter", "RunStore", "RunSummary", "TrajectoryError", "RunNotFoundError", "AmbiguousRunError",
           "CorruptTrajectoryError", "Replay", "ReplayStep", "RunTrace", "SubCall"]
