"""Tests of the plugin through the host, as a user meets it (run after `pip install -e .`).

The fixtures ``rlm_cli`` and ``rlm_plugin_host`` and the ``SinkContract`` suite come with rlm-host's test helpers
(``pip install rlm-host[test]``); no conftest.py is needed.
"""

import csv
import json

import pytest

from rlm_host.testing import BenchmarkPackContract, SinkContract

PLUGIN = "rlm-plugin-template"


def test_registers_through_its_entry_point(rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN).collect_all()
    dist = next(d for d in host.distributions if d.name == PLUGIN)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"environment": ["plugin-template-lines"], "framework": ["plugin-template-agent"],
                             "provider": ["plugin-template-ollama"], "sink": ["plugin-template-csv"],
                             "benchmark": ["plugin-template-qa"], "command": ["plugin-template"],
                             "check": ["plugin-template-output"]}


def test_command_and_doctor_check_run(rlm_cli):
    info = rlm_cli("plugin-template", "info", "--json", plugins=PLUGIN)
    assert info.code == 0 and json.loads(info.out)["plugin"] == PLUGIN
    doctor = rlm_cli("plugins", "doctor", "--json", plugins=PLUGIN)
    checks = {row["name"]: row for row in json.loads(doctor.out)["checks"]}
    assert checks["plugin-template-output"]["ok"] and "runs.csv" in checks["plugin-template-output"]["detail"]


class TestCsvSink(SinkContract):
    """The whole sink protocol suite, run against this plugin's sink."""

    sink = "plugin-template-csv"
    distribution = PLUGIN

    def check_output(self, events, home):
        rows = {row["run_id"]: row for row in csv.DictReader((home / "runs.csv").open())}
        for final in (e for e in events if e.type == "final"):
            row = rows[final.run_id]
            assert row["steps"] == str(final.data["steps"]) and row["depth"] == str(final.depth)
            assert row["termination_reason"] == final.data["termination_reason"]


class TestQaPack(BenchmarkPackContract):
    """The benchmark pack contract, run against this plugin's pack."""

    distribution = PLUGIN
    packs = ("plugin-template-qa",)

    def check_case(self, pack, case):
        assert case["context"]["value"], "every built-in case asks about the log"


def test_the_pack_reads_your_own_cases_and_names_a_bad_file(tmp_path):
    from rlm_plugin_template.pack import QaPackSettings, create
    from rlm_host import ConfigError, HostServices

    mine = tmp_path / "cases.jsonl"
    mine.write_text(json.dumps({"id": "q1", "question": "Capital of France?", "answer": "Paris"}) + "\n")
    (case,) = create(QaPackSettings(path=mine), HostServices(home=tmp_path))
    assert case == {"case_id": "q1", "task": "Capital of France?", "expected": "Paris",
                    "context": {"kind": "inline", "value": ""}}
    mine.write_text("{not json\n")
    with pytest.raises(ConfigError, match="line 1 is not JSON"):
        create(QaPackSettings(path=mine), HostServices(home=tmp_path))


def test_a_run_with_the_sink_named_records_it(rlm_cli, rlm_script, rlm_isolated):
    model = rlm_script(["```repl\nprint(6 * 7)\n```", "FINAL(42)"])
    result = rlm_cli("run", "What is 6 x 7?", "--model", model, "--sandbox", "process", "-q", plugins=PLUGIN)
    assert result.code == 0 and result.out.strip() == "42", result.err
    # the sink is named in run.sinks through the environment, as a user would in rlm.toml
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLM_RUN__SINKS", '["plugin-template-csv"]')
        result = rlm_cli("run", "What is 6 x 7?", "--model", rlm_script(["FINAL(42)"]), "--sandbox", "process", "-q",
                         plugins=PLUGIN)
    assert result.code == 0, result.err
    rows = list(csv.DictReader((rlm_isolated.runs / "runs.csv").open()))
    assert [(row["task"], row["completed"]) for row in rows] == [("What is 6 x 7?", "True")]
