"""``[sink.mlflow]`` settings and the readiness check ``rlm plugins doctor`` runs: a server is probed over HTTP
(no mlflow import: fast); a local store is opened as a run opens it (``store.py``)."""

from __future__ import annotations

import base64
import os
import urllib.error
import urllib.request
from typing import Optional

from pydantic import ConfigDict, Field

from rlm_host import Readiness
from rlm_host.sdk.observability import ContentSettings

TOKEN_ENV = "MLFLOW_TRACKING_TOKEN"
BASIC_ENV = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")


class MlflowSinkSettings(ContentSettings):
    """``[sink.mlflow]`` (``RLM_SINK__MLFLOW__TRACKING_URI=…`` and so on); ``capture_content`` and
    ``content_max_chars`` come from the host's ``ContentSettings`` (the same two fields in every tracing sink)."""

    model_config = ConfigDict(extra="forbid")

    tracking_uri: Optional[str] = Field(None, description="tracking server (default: MLFLOW_TRACKING_URI, else "
                                                           "MLflow's own default)")
    experiment: str = Field("rlm", description="experiment name, created when missing")
    log_trajectory: bool = Field(True, description="attach the run tree's trajectory JSONL to the root run")
    tracing: bool = Field(True, description="record each run tree as an MLflow trace")
    timeout: float = Field(5.0, gt=0, description="seconds per HTTP request (and for the first /health probe)")
    max_retries: int = Field(1, ge=0, description="HTTP retries per request (MLflow's default is 7)")
    task_chars: int = Field(500, ge=20, description="characters of the task kept in the `task` param "
                            "and of the answer in the `rlm.answer` tag")


def resolved_uri(settings: Optional[MlflowSinkSettings]) -> Optional[str]:
    """The configured tracking URI, else MLFLOW_TRACKING_URI; None means MLflow's own default."""
    return (settings.tracking_uri if settings else None) or os.environ.get("MLFLOW_TRACKING_URI") or None


def auth_headers() -> dict[str, str]:
    """The Authorization header MLflow's client would send, from the same variables."""
    if os.environ.get(TOKEN_ENV):
        return {"Authorization": f"Bearer {os.environ[TOKEN_ENV]}"}
    user, password = (os.environ.get(name) for name in BASIC_ENV)
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}


def credentials_line() -> str:
    """Which credential variables are set (names only, never values)."""
    names = [TOKEN_ENV, *BASIC_ENV]
    present = [n for n in names if os.environ.get(n)]
    return f"credentials from {', '.join(present)}" if present else "no credential variable set"


def probe(uri: str, timeout: float) -> Optional[str]:
    """None when ``GET <uri>/health`` answers 200, else why not (one line)."""
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout) as response:
            return None if response.status == 200 else f"/health answered HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"/health answered HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return f"{uri} does not answer ({getattr(exc, 'reason', None) or exc})"


def _auth_status(uri: str, timeout: float) -> Optional[int]:
    """The HTTP status of an authenticated experiment search (401/403: the server wants other credentials)."""
    request = urllib.request.Request(f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search?max_results=1",
                                     headers=auth_headers())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


def check(settings: Optional[MlflowSinkSettings]) -> Readiness:
    """Is the tracking server there, and do the credentials (named, never shown) pass?"""
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:
        return Readiness(False, "mlflow is not installed", "pip install rlm-sink-mlflow")
    uri = resolved_uri(settings)
    if uri is None or not uri.startswith(("http://", "https://")):  # a local store: open it as the run will
        from rlm_sink_mlflow.store import local_readiness

        return local_readiness(uri, settings.experiment if settings else MlflowSinkSettings().experiment)
    timeout = min(settings.timeout if settings else 2.0, 2.0)
    problem = probe(uri, timeout)
    if problem:
        return Readiness(False, problem, "start it: mlflow server --host 127.0.0.1 --port 5000, or fix tracking_uri")
    status = _auth_status(uri, timeout)
    if status in (401, 403):
        hint = f"set {TOKEN_ENV}, or {BASIC_ENV[0]} and {BASIC_ENV[1]}"
        return Readiness(False, f"{uri} refuses the request (HTTP {status}; {credentials_line()})", hint)
    return Readiness(True, f"{uri} answers; {credentials_line()}")
