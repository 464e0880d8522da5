"""The ``mlflow`` sink keeps the sink protocol (``rlm_host.testing.SinkContract``), checked against a real
MLflow server: every run of each tree fed is read back as a finished MLflow run, and each root as a trace."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest
from mlflow_server import client, mlflow_server, quiet_home  # noqa: F401

from rlm_host import wait_for_sinks
from rlm_host.sdk.observability import trace_id_for
from rlm_host.testing import SinkContract
from rlm_sink_mlflow.settings import MlflowSinkSettings

pytestmark = pytest.mark.slow
EXPERIMENT = f"contract-{uuid.uuid4().hex[:8]}"


class TestMlflowSink(SinkContract):
    sink = "mlflow"
    distribution = "rlm-sink-mlflow"

    def settings(self, home: Path) -> MlflowSinkSettings:
        return MlflowSinkSettings(tracking_uri=mlflow_server().url, experiment=EXPERIMENT)

    def unreachable_settings(self, home: Path) -> MlflowSinkSettings:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]  # nothing listens there once the socket is closed
        return MlflowSinkSettings(tracking_uri=f"http://127.0.0.1:{port}", timeout=1)

    def secret_environ(self) -> dict[str, str]:
        return {"MLFLOW_TRACKING_TOKEN": "tok-made-up-1234", "MLFLOW_TRACKING_USERNAME": "made-up-user",
                "MLFLOW_TRACKING_PASSWORD": "pw-made-up-5678"}

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__MLFLOW__TRACKING_URI": mlflow_server().url, "RLM_SINK__MLFLOW__EXPERIMENT": EXPERIMENT}

    def received(self, home: Path) -> str:
        """What the server stored: its database (WAL included) and every artifact, as text."""
        assert wait_for_sinks(60), "the sinks did not deliver within 60 s"
        files = sorted(p for p in mlflow_server().folder.rglob("*") if p.is_file())
        return "\n".join(p.read_bytes().decode(errors="replace") for p in files)

    def check_output(self, events, home: Path) -> None:
        assert wait_for_sinks(60), "the sinks did not deliver within 60 s"  # delivery ends after the run returns
        mlflow = client(mlflow_server())
        experiment = mlflow.get_experiment_by_name(EXPERIMENT).experiment_id
        for final in (e for e in events if e.type == "final"):
            runs = mlflow.search_runs([experiment], f"tags.`rlm.run_id` = '{final.run_id}'")
            assert len(runs) == 1, f"{final.run_id}: {len(runs)} MLflow runs"
            run = runs[0]
            assert run.info.status == "FINISHED" and run.data.metrics["steps"] == final.data["steps"]
            steps = [e for e in events if e.type == "step" and e.run_id == final.run_id]
            assert len(mlflow.get_metric_history(run.info.run_id, "reward")) == len(steps)
            if final.depth == 0:
                trace = mlflow.get_trace(f"tr-{trace_id_for(final.run_id)}")
                assert trace.info.trace_metadata["mlflow.sourceRun"] == run.info.run_id
                assert len({s.get_attribute("rlm.run_id") for s in trace.data.spans}) == len(
                    {e.run_id for e in events})
