"""Opening the tracking store as a run does, and saying in one line why it cannot be opened.

A run's sink and ``rlm plugins doctor --sink mlflow`` both go through ``open_experiment``: for a local store
(MLflow's default ``sqlite:///mlflow.db``, another ``sqlite:`` file, a ``file:`` folder) the doctor's answer is
what the run will meet, and opening the store once (it creates a new SQLite store's tables, seconds on a small
machine) leaves the run nothing slow to do. ``store_problem`` turns MLflow's long refusals (the file store's
paragraph, a SQL store without SQLAlchemy) into one whole line with what to do, never a sentence cut short.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Optional

from rlm_host import Readiness
from rlm_host.sdk.observability import redacted_clip

LOCAL_HINT = ("pip install 'rlm-sink-mlflow[local]' (the full mlflow: its SQLite store, `mlflow server` and "
              "`mlflow ui`), then tracking_uri = \"sqlite:///PATH/mlflow.db\" or a server's http:// URL")
OPEN_SECONDS = 120  # a new SQLite store's tables, on a slow disk


def open_experiment(uri: Optional[str], experiment: str) -> tuple[Any, str]:
    """An ``MlflowClient`` for ``uri`` (None: MLflow's default) and the id of ``experiment``, created when
    missing (another process creating it meanwhile is not an error)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        return client, found.experiment_id
    try:
        return client, client.create_experiment(experiment)
    except Exception:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise
        return client, found.experiment_id


def default_uri() -> str:
    """The tracking URI MLflow uses when none is set (``sqlite:///mlflow.db`` in the working folder in 3.x)."""
    import mlflow

    return str(mlflow.get_tracking_uri())


def store_problem(exc: BaseException) -> str:
    """Why the store could not be used, as one whole line: the known refusals said with their remedy, anything
    else as its first sentence (redacted, then cut at 300 characters)."""
    text = str(exc).strip()
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    if "filesystem tracking backend" in text and "MLFLOW_ALLOW_FILE_STORE" in text:
        return ("MLflow 3 no longer writes a file: store (it refuses it unless MLFLOW_ALLOW_FILE_STORE=true); "
                "use a sqlite: store or a tracking server")
    if missing and missing.split(".")[0] in ("sqlalchemy", "alembic", "sqlparse"):
        return f"a sqlite: store needs the full mlflow package ({missing} is not installed)"
    first = text.splitlines()[0] if text else ""
    sentence = first.split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {redacted_clip(sentence, 300, 'ellipsis')}" if sentence else type(exc).__name__


def local_readiness(uri: Optional[str], experiment: str) -> Readiness:
    """Open a local store as a run would (bounded by ``OPEN_SECONDS``): ready when the experiment is there."""
    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            outcome["uri"] = uri or default_uri()
            outcome["id"] = open_experiment(uri, experiment)[1]
        except BaseException as exc:  # noqa: BLE001 - reported as the check's answer
            outcome["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=attempt, name="rlm-sink-mlflow-doctor", daemon=True)
    worker.start()
    worker.join(OPEN_SECONDS)
    where = redacted_clip(str(outcome.get("uri") or uri or "MLflow's default store"), 300, "ellipsis")
    if worker.is_alive():
        return Readiness(False, f"{where} did not open within {OPEN_SECONDS} s", LOCAL_HINT)
    if "error" in outcome:
        return Readiness(False, f"{where}: {store_problem(outcome['error'])}", LOCAL_HINT)
    return Readiness(True, f"{where} opens (experiment {experiment!r}, {time.monotonic() - started:.1f} s)")
