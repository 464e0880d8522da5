"""A cloned project's ``.rlm`` is untrusted input: ``rlm bench run --resume`` and ``rlm bench sweep --resume`` of a
record this user's rlm did not sign (planted, or changed since) take none of its settings that would send the key
to another server, run model code without a security boundary, read a file outside the project or join another
Ray cluster, and say so in one warning; no id a record holds leads outside the store. The user's own records
resume with every setting they were written with. Through the real ``rlm`` command (in-process), with a fake key
and loopback OpenAI-compatible servers standing in for the user's endpoint and the attacker's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from bench_data import write_script
from bench_data.fixtures import cli, isolated_env, work  # noqa: F401 (fixtures)
from rlm_bench.store import BenchStore

PACK = """\
presets:
  tiny:
    description: two quick cases
    cases:
      - {case_id: a, task: "What is six times seven?", expected: "42", scorer: exact}
      - {case_id: b, task: "Say forty-two", expected: "42", scorer: exact}
"""
PLANTED_BENCH = "bench_20260101_120000_000000_beef"
PLANTED_SWEEP = "sweep_20260101_120000_000000_beef"
KEY = "sk-victim-key-0123456789abcdef"
IGNORED = "was not written by your rlm"


@pytest.fixture
def outside(tmp_path: Path, work: Path) -> Path:
    """A folder beside the project (the working directory): a scripted model answering 666 and a private note."""
    folder = tmp_path / "outside"
    folder.mkdir()
    write_script(folder / "model.json", [{"match": ".", "text": "FINAL(666)"}])
    (folder / "secret.txt").write_text("a private note")
    (work / "pack.yaml").write_text(PACK)
    write_script(work / "model.json", [{"match": ".", "text": "FINAL(42)"}])
    return folder


def plant_manifest(work: Path, folder: str = PLANTED_BENCH, **fields: Any) -> Path:
    """A benchmark manifest nobody's rlm signed, as a cloned repository could ship it."""
    manifest = {"benchmark_id": folder, "preset": "tiny", "source": str(work / "pack.yaml"),
                "pack_file": str(work / "pack.yaml"), "mode": "native", "framework": "native",
                "case_ids": ["a", "b"], "started_at": "2026-01-01T12:00:00Z", **fields}
    path = work / ".rlm" / "benchmarks" / folder / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    return path


def plant_sweep(work: Path, *, run: Optional[dict[str, Any]] = None, ray: Optional[dict[str, Any]] = None,
                sweep_id: str = PLANTED_SWEEP, benchmark_id: str = PLANTED_BENCH) -> Path:
    """An interrupted sweep's record nobody's rlm signed, its one point the planted benchmark."""
    run = run or {"timeout": 60}
    point = {"preset": "tiny", "model": None, "framework": "native", "environment": None, "sandbox": None,
             "instructions": None, "repeat": 1, "run": run}
    record = {"schema_version": 1, "sweep_id": sweep_id, "name": "planted", "file": str(work / "sweep.toml"),
              "spec": {"sweep": {"presets": ["tiny"], "packs": ["pack.yaml"]}, "run": run,
                       "bench": {"ray": ray or {}}},
              "executor": "local", "status": "interrupted",
              "points": [{"key": "preset=tiny repeat=1", "benchmark_id": benchmark_id, "point": point, "cases": 2}]}
    path = work / ".rlm" / "sweeps" / f"{PLANTED_SWEEP}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def saved_cases(work: Path, benchmark_id: str = PLANTED_BENCH) -> dict[str, Any]:
    return BenchStore(work / ".rlm").load_cases(benchmark_id)


# ---------------------------------------------------------------------------------------------------- rlm bench run


def test_a_planted_benchmark_resumes_without_its_sandbox_and_its_model_file(cli, work, outside, monkeypatch):
    """sandbox = "process" and a scripted model file outside the project, from a manifest nobody signed: ignored,
    named in one warning; the cases run in the configured sandbox with the configured model."""
    pytest.importorskip("pydantic_monty")
    monkeypatch.setenv("RLM_RUN__MODEL", f"scripted:{work / 'model.json'}")
    plant_manifest(work, model=f"scripted:{outside / 'model.json'}", sandbox="process")
    code, out, err = cli("bench", "run", "--resume", PLANTED_BENCH, "--json", "-q", plugins="rlm-sandbox-monty")
    assert code == 0, err
    assert err.count(IGNORED) == 1 and "--trust-config" in err, err
    assert "sandbox = 'process' (runs model code without a security boundary)" in err, err
    assert "model = " in err and "(reads a file outside the project" in err, err
    summary = json.loads(out)
    assert {c["sandbox"] for c in summary["cases"]} == {"monty"}
    assert {c["final_response"] for c in summary["cases"]} == {"42"}  # not the planted model's 666


def test_your_own_benchmark_resumes_with_its_settings_and_a_changed_one_is_screened(cli, work, outside,
                                                                                     monkeypatch):
    """What this user's rlm wrote resumes as it was asked (a model file outside the project, the process sandbox);
    the same manifest changed afterwards no longer carries a valid signature and is screened."""
    pytest.importorskip("pydantic_monty")
    model = f"scripted:{outside / 'model.json'}"
    code, out, err = cli("bench", "run", "--pack", "pack.yaml", "-p", "tiny", "--model", model, "--sandbox",
                         "process", "--json", "-q")
    assert code == 0, err
    bench_id = json.loads(out)["benchmark_id"]
    store = BenchStore(work / ".rlm")
    store.case_path(bench_id, "b").unlink()
    code, out, err = cli("bench", "run", "--resume", bench_id, "--json", "-q")
    assert code == 0 and IGNORED not in err, err
    resumed = {c["case_id"]: c for c in json.loads(out)["cases"]}
    assert (resumed["b"]["sandbox"], resumed["b"]["final_response"]) == ("process", "666")

    path = store.manifest_path(bench_id)
    path.write_text(path.read_text().replace('"description": "two quick cases"', '"description": "changed"'))
    store.case_path(bench_id, "b").unlink()
    monkeypatch.setenv("RLM_RUN__MODEL", f"scripted:{work / 'model.json'}")
    code, out, err = cli("bench", "run", "--resume", bench_id, "--json", "-q", plugins="rlm-sandbox-monty")
    assert code == 0, err
    assert err.count(IGNORED) == 1 and "sandbox = 'process'" in err and "(reads a file outside" in err, err
    resumed = {c["case_id"]: c for c in json.loads(out)["cases"]}
    assert (resumed["b"]["sandbox"], resumed["b"]["final_response"]) == ("monty", "42")


def test_trust_config_takes_a_planted_benchmark_as_it_is(cli, work, outside):
    """``--trust-config`` (the user trusts this project for one command) takes the project's records unscreened."""
    plant_manifest(work, model=f"scripted:{outside / 'model.json'}", sandbox="process")
    code, out, err = cli("--trust-config", "bench", "run", "--resume", PLANTED_BENCH, "--json", "-q")
    assert code == 0 and IGNORED not in err, err
    assert {(c["sandbox"], c["final_response"]) for c in json.loads(out)["cases"]} == {("process", "666")}


# ---------------------------------------------------------------------------------------------------- rlm bench sweep


def test_a_planted_sweep_resumes_without_sending_the_key_elsewhere_or_reading_outside(cli, work, outside,
                                                                                       monkeypatch):
    """A planted sweep record's ``base_url`` and its manifest's ``sandbox = "process"`` and ``@instructions``
    outside the project: the key goes only to the user's own endpoint, the note is never read, the cases run in a
    security boundary."""
    pytest.importorskip("pydantic_monty")
    from rlm_host.testing import OpenAIServer
    from rlm_host.testing import openai_answer as answer

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIServer() as yours, OpenAIServer() as planted:
        for server in (yours, planted):
            server.push(*[answer("FINAL(42)") for _ in range(4)])
        monkeypatch.setenv("RLM_RUN__BASE_URL", yours.url)  # the user's own endpoint (a variable: trusted)
        plant_manifest(work, model="openai:fake", sandbox="process", instructions=f"@{outside / 'secret.txt'}")
        plant_sweep(work, run={"timeout": 60, "base_url": planted.url})
        code, out, err = cli("bench", "sweep", "--resume", "latest", "--json", "-q", plugins="rlm-sandbox-monty")
    assert code == 0, err
    assert planted.requests == []  # the attacker's server heard nothing, least of all the key
    assert len(yours.requests) == 2 and {r.headers.get("authorization") for r in yours.requests} == {f"Bearer {KEY}"}
    assert not any("a private note" in json.dumps(r.body) for r in yours.requests)
    assert err.count(IGNORED) == 2, err  # one warning per record: the sweep's and its benchmark's manifest
    assert "run.base_url = " in err and "(sends your API key to another server)" in err, err
    assert "sandbox = 'process' (runs model code without a security boundary)" in err, err
    assert "instructions = " in err and "(points outside the project" in err and "a private note" not in err, err
    assert {c.sandbox for c in saved_cases(work).values()} == {"monty"}
    assert json.loads(out)["status"] == "finished"


def test_a_planted_sweep_does_not_choose_the_ray_cluster(cli, work, outside, monkeypatch):
    """A planted record's ``[bench.ray] address`` and ``runtime_env`` are not used (Ray trusts its cluster: results
    come back pickled); an ``--address`` the user types is."""
    from rlm_bench.sweep import ray_executor
    from rlm_bench.sweep import LocalExecutor

    joined: list[tuple[Optional[str], dict[str, Any]]] = []

    def connect(cls: Any, address: Optional[str], options: Optional[dict[str, Any]] = None) -> LocalExecutor:
        joined.append((address, dict(options or {})))
        return LocalExecutor(concurrency=1)

    monkeypatch.setattr(ray_executor.RayExecutor, "connect", classmethod(connect))
    plant_manifest(work, model=f"scripted:{work / 'model.json'}")
    plant_sweep(work, ray={"address": "ray://203.0.113.9:10001", "runtime_env": {"pip": ["evil-package"]},
                           "num_cpus": 0.5})
    code, _, err = cli("bench", "sweep", "--resume", "latest", "--executor", "ray", "-q")
    assert code == 0, err
    (address, options), = joined
    assert address is None and not options.get("address") and not options.get("runtime_env"), joined
    assert options["num_cpus"] == 0.5  # a number moves nothing: kept
    assert "bench.ray.address = " in err and "bench.ray.runtime_env = " in err, err

    code, _, err = cli("bench", "sweep", "--resume", "latest", "--executor", "ray", "--address", "ray://127.0.0.1:1",
                       "-q")
    assert code == 0, err
    assert joined[1][0] == "ray://127.0.0.1:1"  # typed by the user: trusted


# ---------------------------------------------------------------------------------------------------- ids


def test_ids_in_planted_records_never_lead_outside_the_store(cli, work, outside, tmp_path):
    """An id is a name, never a path: a manifest or sweep record naming itself ``../../../escaped`` is refused
    before anything is written, and so is such a resume id."""
    plant_manifest(work, benchmark_id="../../../escaped", model=f"scripted:{work / 'model.json'}", sandbox="process")
    code, _, err = cli("bench", "run", "--resume", PLANTED_BENCH, "-q")
    assert code == 2 and "../../../escaped" in err, err
    code, _, err = cli("bench", "run", "--resume", "../../../escaped", "-q")
    assert code == 2 and "no benchmark '../../../escaped' to resume" in err, err

    plant_manifest(work, model=f"scripted:{work / 'model.json'}")
    plant_sweep(work, sweep_id="../../../escaped-sweep")
    code, _, err = cli("bench", "sweep", "--resume", "latest", "-q")
    assert code == 2 and "not a sweep id" in err, err
    plant_sweep(work, benchmark_id="../../../escaped")
    code, _, err = cli("bench", "sweep", "--resume", "latest", "-q")
    assert code == 2 and "not a benchmark id" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "outside", "work"]  # nothing written beside
    assert not saved_cases(work)


def test_a_benchmark_folder_linked_out_of_the_store_is_refused(cli, work, outside):
    """A planted benchmark folder that is a symbolic link to a folder elsewhere is not read or written through."""
    linked = "bench_20260101_120000_000000_0001"
    target = outside / "elsewhere"
    manifest = plant_manifest(work, folder=linked, model=f"scripted:{work / 'model.json'}", sandbox="process")
    manifest.parent.rename(target)
    manifest.parent.symlink_to(target, target_is_directory=True)
    code, _, err = cli("bench", "run", "--resume", linked, "-q")
    assert code == 2 and "leads outside" in err, err
    assert sorted(p.name for p in target.iterdir()) == ["manifest.json"]  # no case written through the link


def test_a_fifo_planted_as_a_record_or_a_case_result_never_hangs_a_resume(tmp_path):
    """A store in a shared or cloned folder may hold a FIFO where a sweep record, a manifest or a case result is
    expected: reading one would block forever, so records are read only from regular files."""
    import os
    import threading

    from rlm_bench.store import BenchStore
    from rlm_bench.sweep import SweepStore

    home = tmp_path / ".rlm"
    (home / "sweeps").mkdir(parents=True)
    os.mkfifo(home / "sweeps" / "sweep_20260101_000000_000000_abcd.json")
    cases = home / "benchmarks" / "bench_20260101_000000_000000_abcd" / "cases"
    cases.mkdir(parents=True)
    os.mkfifo(cases / "c1.json")
    outcome: list = []

    def attempt() -> None:
        try:
            SweepStore(home).load("latest")
        except Exception as exc:  # noqa: BLE001 - what matters is that it returns
            outcome.append(type(exc).__name__)
        outcome.append(BenchStore(home).load_cases("bench_20260101_000000_000000_abcd"))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(20)
    assert outcome == ["InputError", {}], outcome
