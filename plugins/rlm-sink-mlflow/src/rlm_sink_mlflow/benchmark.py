"""One parent run per benchmark id, even when several processes start the same benchmark at the same moment.

MLflow makes run ids on the server and has no conditional create, so "search for the run tagged
``rlm.benchmark_id``, create one if there is none" lets two processes that search at once both create one. The
scheme here converges instead of locking:

- Every candidate parent run carries the tag ``rlm.benchmark_id``; of the active ones, the **winner** is the one
  with the smallest (start time, run id): one rule, so every process that sees the same candidates picks the
  same run.
- At a root run's start (``parent``): search; none found → create a candidate, then search again. A process whose
  candidate lost deletes it at once (nothing is nested under it yet) and nests its root under the winner.
- At a root run's end (``settle``): search again. Should a candidate have appeared after this process looked (a
  process whose first search came before ours became visible, whose create came after our second search), the
  roots nested under the losers move to the winner (``mlflow.parentRunId`` is an ordinary tag) and the losers are
  deleted, so the last root to finish leaves one parent run for the whole benchmark.
"""

from __future__ import annotations

from typing import Any, Optional

PARENT_TAG = "mlflow.parentRunId"
BENCHMARK_TAG = "rlm.benchmark_id"


def quoted(value: str) -> str:
    """``value`` inside single quotes of an MLflow search filter."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class BenchmarkRuns:
    """The benchmark parent runs of one experiment, as one process sees them (call under the sink's lock)."""

    def __init__(self, client: Any, experiment_id: str) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self._chosen: dict[str, str] = {}  # benchmark id → its parent run, as this process last found it
        self.created_and_deleted = 0  # candidates this process created and then gave up (a lost race)

    def parent(self, benchmark_id: str, labels: dict[str, str], start_ms: int) -> str:
        """The MLflow run id a root run of ``benchmark_id`` nests under: found, or created and kept if it wins."""
        if benchmark_id in self._chosen:
            return self._chosen[benchmark_id]
        found = self._candidates(benchmark_id)
        if not found:
            tags = {BENCHMARK_TAG: benchmark_id, "mlflow.source.name": "rlm", "mlflow.source.type": "LOCAL"}
            if labels.get("preset"):
                tags["preset"] = labels["preset"]
            run = self.client.create_run(self.experiment_id, start_time=start_ms, tags=tags,
                                         run_name=f"benchmark {benchmark_id}")
            mine = (run.info.start_time, run.info.run_id)
            found = self._candidates(benchmark_id)
            if mine not in found:  # a store that does not show a run at once: ours counts all the same
                found.append(mine)
            if min(found) != mine:
                self._delete(mine[1])
                self.created_and_deleted += 1
        winner = min(found)[1]
        self._chosen[benchmark_id] = winner
        return winner

    def settle(self, benchmark_id: str, root_run: str, used: str) -> str:
        """At a root's end: the winner now. Runs nested under any other candidate move to it, the other candidates
        go, and ``root_run`` moves too when it was nested under ``used``, a candidate that lost meanwhile."""
        found = self._candidates(benchmark_id)
        if not found:
            return used  # deleted by a person meanwhile: nothing to merge into
        winner = min(found)[1]
        for _, loser in found:
            if loser != winner:
                self._merge(loser, winner)
        if used != winner:
            self.client.set_tag(root_run, PARENT_TAG, winner)
        self._chosen[benchmark_id] = winner
        return winner

    def _candidates(self, benchmark_id: str) -> list[tuple[int, str]]:
        """(start time, run id) of the active runs tagged with the benchmark id (deleted runs are not searched)."""
        runs = self.client.search_runs([self.experiment_id], f"tags.`{BENCHMARK_TAG}` = {quoted(benchmark_id)}",
                                       max_results=100, order_by=["attributes.start_time ASC"])
        return [(int(r.info.start_time or 0), r.info.run_id) for r in runs]

    def _merge(self, loser: str, winner: str) -> None:
        """Move what is nested under ``loser`` to ``winner``, then delete ``loser``."""
        nested = self.client.search_runs([self.experiment_id], f"tags.`{PARENT_TAG}` = {quoted(loser)}",
                                         max_results=1000)
        for run in nested:
            try:
                self.client.set_tag(run.info.run_id, PARENT_TAG, winner)
            except Exception:  # deleted meanwhile, or moved by another process making the same merge
                continue
        self._delete(loser)

    def _delete(self, run_id: str) -> Optional[str]:
        try:
            self.client.delete_run(run_id)
        except Exception as exc:  # another process deleted it first (the same decision): nothing to do
            return str(exc)
        return None
