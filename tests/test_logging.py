"""Logging that composes: the libraries' standard-library records and rlm's own come out in one format and
obey one set of levels (``--log-json`` is JSON on every line; ``-vv`` shows the SDKs' requests and retries)."""

from __future__ import annotations

import json
import logging
import subprocess

import pytest

from support import RLM_SCRIPT
from rlm_host import logs


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    logs.configure(verbose=0, json=False, level="warning")


def lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_library_records_and_rlm_events_share_the_json_format(capsys):
    logs.configure(json=True, verbose=2)
    logging.getLogger("httpx").info("HTTP Request: %s %s", "POST", "http://127.0.0.1:1/v1/chat/completions")
    logs.get_logger("rlm.plugins").warning("plugin broken", plugin="p", error="boom")
    try:
        1 / 0
    except ZeroDivisionError:
        logging.getLogger("docker").exception("engine call failed")
    library, own, failure = (json.loads(line) for line in lines(capsys))
    assert library["event"].startswith("HTTP Request: POST") and library["logger"] == "httpx"
    assert library["level"] == "info" and library["timestamp"].endswith("Z")
    assert (own["event"], own["plugin"], own["logger"], own["level"]) == ("plugin broken", "p", "rlm.plugins",
                                                                          "warning")
    assert failure["level"] == "error" and "ZeroDivisionError" in failure["exception"]


def test_levels_warnings_by_default_rlm_info_with_v_everything_with_vv(capsys):
    def emit():
        logging.getLogger("openai").info("Retrying request to /chat/completions in 0.4 seconds")
        logging.getLogger("openai").warning("a library warning")
        logs.get_logger("rlm.engine").info("run planned", run_id="r1")

    logs.configure(verbose=0)
    emit()
    assert [("a library warning" in line) for line in lines(capsys)] == [True]
    logs.configure(verbose=1)
    emit()
    shown = lines(capsys)
    assert len(shown) == 2 and "run planned" in shown[1] and "run_id=r1" in shown[1]
    logs.configure(verbose=2)
    emit()
    assert len(lines(capsys)) == 3


def test_the_http_client_records_of_a_real_run_come_out_as_json_lines(rlm_isolated):
    """A run against a closed port: the HTTP library's own connection records, rendered by rlm, every line JSON."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(rlm_isolated.home), "OPENAI_API_KEY": "sk-test", "RLM_PLUGINS": ""}
    result = subprocess.run(
        [RLM_SCRIPT, "-vv", "--log-json", "run", "q", "--context", "-", "--model", "openai:gpt-4o-mini",
         "--base-url", "http://127.0.0.1:9/v1", "--sandbox", "process", "-q"],
        input="ctx", capture_output=True, text=True, env=env, cwd=rlm_isolated.work, timeout=120,
    )
    records = [json.loads(line) for line in result.stderr.splitlines()]  # raises on any line that is not JSON
    loggers = {record["logger"] for record in records}
    assert "httpcore.connection" in loggers and "rlm.cli" in loggers, loggers


def test_v_says_a_runs_start_and_end_at_info(rlm_isolated):
    """``rlm -v`` added no info line to a successful run; it now says what ran and how it ended (one line
    each), and without ``-v`` neither shows."""
    (rlm_isolated.work / "s.json").write_text(json.dumps(["```repl\nprint(1)\n```", "FINAL(42)"]))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(rlm_isolated.home), "RLM_PLUGINS": ""}
    args = ["run", "q", "--context", "-", "--model", "scripted:s.json", "--sandbox", "process", "-q"]
    plain = subprocess.run([RLM_SCRIPT, *args], input="ctx", capture_output=True, text=True, env=env,
                           cwd=rlm_isolated.work, timeout=120)
    assert plain.returncode == 0 and "[info" not in plain.stderr, plain.stderr
    verbose = subprocess.run([RLM_SCRIPT, "-v", *args], input="ctx", capture_output=True, text=True, env=env,
                             cwd=rlm_isolated.work, timeout=120)
    assert verbose.returncode == 0 and verbose.stdout == "42\n", verbose.stderr
    started = [line for line in verbose.stderr.splitlines() if "run started" in line]
    finished = [line for line in verbose.stderr.splitlines() if "run finished" in line]
    assert len(started) == 1 and "model=scripted:s.json" in started[0] and "sandbox=process" in started[0]
    assert len(finished) == 1 and "reason=final" in finished[0] and "steps=2" in finished[0]
    assert "trajectory=" in finished[0] and "[debug" not in verbose.stderr
