"""The built-in ``local`` sink keeps the sink protocol and writes run and step lines for every run of a tree."""

import json
from pathlib import Path

from rlm_host.testing import SinkContract


class TestLocalSink(SinkContract):
    sink = "local"

    def check_output(self, events, home: Path) -> None:
        finals = {e.run_id: e for e in events if e.type == "final"}
        runs = [json.loads(line) for line in (home / "observability" / "runs.jsonl").read_text().splitlines()]
        recorded = {r["run_id"]: r for r in runs}
        for run_id, final in finals.items():
            line = recorded[run_id]
            assert line["completed"] == final.data["completed"] and line["steps"] == final.data["steps"]
            assert line["depth"] == final.depth and line["total_reward"] == final.data["total_reward"]
            steps = (home / "observability" / "steps" / f"{run_id}.jsonl").read_text().splitlines()
            assert len(steps) == final.data["steps"]
