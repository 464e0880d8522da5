"""A store on this machine (issue 47): ``rlm plugins doctor --sink mlflow`` opens a local store as the run's sink
does, so its ``ok`` means the run records; a store MLflow refuses is a FAIL with the reason in one whole line, and
the run's one warning says the same. Through the real ``rlm`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_server import quiet_environ

pytestmark = pytest.mark.slow
RLM = str(Path(sys.executable).with_name("rlm"))
REPLIES = ["```repl\nprint(len(context))\n```", "FINAL(42)"]


def rlm(folder: Path, *args: str, uri: str | None, **environ: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "MLFLOW_"))}
    env |= quiet_environ(folder) | {"RLM_PLUGINS": "rlm-sink-mlflow", **environ}
    if uri is not None:
        env["RLM_SINK__MLFLOW__TRACKING_URI"] = uri
    return subprocess.run([RLM, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=240)


def run(folder: Path, uri: str | None, **environ: str) -> subprocess.CompletedProcess:
    (folder / "s.json").write_text(json.dumps(REPLIES))
    (folder / "c.txt").write_text("a few words")
    return rlm(folder, "run", "q", "--context", "c.txt", "--model", "scripted:s.json", "--sandbox", "process",
               "--sink", "mlflow", "-q", uri=uri, **environ)


def doctor_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stdout.splitlines()
    index = next(i for i, line in enumerate(lines) if " mlflow " in line)
    return "\n".join(lines[index:index + 2])


def test_a_file_store_fails_the_doctor_and_the_run_says_why_in_one_whole_line(tmp_path):
    uri = f"file://{tmp_path}/mlruns"
    doctor = rlm(tmp_path, "plugins", "doctor", "--sink", "mlflow", uri=uri)
    line = doctor_line(doctor)
    assert doctor.returncode == 1 and line.startswith("FAIL"), doctor.stdout + doctor.stderr
    assert "MLFLOW_ALLOW_FILE_STORE=true" in line and "rlm-sink-mlflow[local]" in line
    done = run(tmp_path, uri)
    assert done.returncode == 0 and done.stdout == "42\n", done.stderr
    warning = [w for w in done.stderr.splitlines() if "mlflow sink" in w]
    assert len(warning) == 1 and "use a sqlite: store or a tracking server" in warning[0], done.stderr
    assert "…" not in warning[0] and "records nothing more" in warning[0]


def test_without_a_uri_the_doctor_opens_mlflows_default_store_and_the_run_records_in_it(tmp_path):
    doctor = rlm(tmp_path, "plugins", "doctor", "--sink", "mlflow", uri=None)
    line = doctor_line(doctor)
    assert line.startswith("ok") and f"sqlite:///{tmp_path}/mlflow.db opens" in line, line
    done = run(tmp_path, None)
    assert done.returncode == 0 and "mlflow sink" not in done.stderr and "disabled" not in done.stderr, done.stderr
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("rlm").experiment_id])
    assert [r.info.status for r in runs] == ["FINISHED"] and runs[0].data.tags["rlm.answer"] == "42"


def test_a_sqlite_store_without_the_sql_store_installed_names_the_local_extra(tmp_path):
    """mlflow-skinny alone has no SQLAlchemy: stood in for here by a package that cannot be imported."""
    stand_in = tmp_path / "site" / "sqlalchemy"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text('raise ModuleNotFoundError("No module named sqlalchemy", '
                                          'name="sqlalchemy")\n')
    uri = f"sqlite:///{tmp_path}/m.db"
    doctor = rlm(tmp_path, "plugins", "doctor", "--sink", "mlflow", uri=uri, PYTHONPATH=str(tmp_path / "site"))
    line = doctor_line(doctor)
    assert doctor.returncode == 1 and line.startswith("FAIL"), doctor.stdout + doctor.stderr
    assert "needs the full mlflow package" in line and "rlm-sink-mlflow[local]" in line
