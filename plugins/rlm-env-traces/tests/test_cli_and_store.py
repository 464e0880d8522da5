"""``rlm traces …`` through the host, and the TraceStore's promises: the index, its reuse, its caps and errors."""

import json
import os
from pathlib import Path

import pytest

from rlm_env_traces import store as store_module
from rlm_env_traces.generate import SYSTEMIC_MESSAGE, generate
from rlm_env_traces.store import TraceStore

PLUGIN = "rlm-env-traces"


def test_registers_the_environment_and_the_command(rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN).collect_all()
    dist = next(d for d in host.distributions if d.name == PLUGIN)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"environment": ["trace_analysis", "trace_rlm"], "command": ["traces"]}


def test_cli_commands(rlm_cli, rlm_isolated, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the table's width, as on a wide terminal
    path = rlm_isolated.work / "t.jsonl.gz"
    info = generate(path, traces=12, fmt="mixed", malformed=2)
    failing = info["error_trace_ids"][0]
    index = json.loads(rlm_cli("traces", "index", str(path), "--json", plugins=PLUGIN).out)
    assert index["traces"] == 12 and index["malformed_lines"] == 2
    overview = json.loads(rlm_cli("traces", "overview", str(path), "--json", plugins=PLUGIN).out)
    assert overview["error_traces"] == 3 and overview["agents"] == {"researcher": 6, "support": 6}
    query = json.loads(rlm_cli("traces", "query", str(path), "--errors", "--agent", "researcher", "--json",
                               plugins=PLUGIN).out)
    assert query["total"] == 2
    assert len(json.loads(rlm_cli("traces", "view", str(path), failing, plugins=PLUGIN).out)["spans"]) == 7
    search = json.loads(rlm_cli("traces", "search", str(path), failing, "time.?out", "--regex", "--json",
                                plugins=PLUGIN).out)
    assert search["match_count"] == 1
    table = rlm_cli("traces", "query", str(path), "--model", "gpt-4o-mini", plugins=PLUGIN)
    assert table.code == 0 and "6 traces" in table.out and "gpt-4o-mini" in table.out
    exported = rlm_cli("traces", "export", str(path), "out", "--errors", plugins=PLUGIN)
    assert exported.code == 0 and SYSTEMIC_MESSAGE in (rlm_isolated.work / "out" / "summary.md").read_text()
    missing = rlm_cli("traces", "overview", "nope.jsonl", plugins=PLUGIN)
    assert missing.code == 2 and "trace file not found" in missing.err


def test_the_index_is_reused_until_the_file_changes(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    generate(path, traces=5)
    first = TraceStore.load(path)
    calls = []
    monkeypatch.setattr("rlm_env_traces.index.build", lambda *a, **k: calls.append(a) or pytest.fail("rebuilt"))
    assert TraceStore.load(path).index == first.index and not calls
    monkeypatch.undo()
    with path.open("a") as handle:
        handle.write("not json\n")
    assert TraceStore.load(path).index.malformed == 1


def test_a_read_only_folder_puts_the_index_in_the_cache(tmp_path, monkeypatch):
    """As root (CI) the load runs as nobody in a child process: root writes into read-only folders."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="rlm-ro-"))  # tmp_path's parents are private to root: nobody cannot pass
    try:
        base.chmod(0o755)
        folder, cache = base / "ro", base / "cache"
        folder.mkdir()
        cache.mkdir(mode=0o777)
        cache.chmod(0o777)
        generate(folder / "t.jsonl", traces=3)
        (folder / "t.jsonl").chmod(0o644)
        folder.chmod(0o555)
        if os.geteuid() != 0:
            monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
            index_path = TraceStore.load(folder / "t.jsonl").index_path
        else:  # a forked child that drops to nobody (the venv itself may be private to root)
            generate(tmp_path / "warm.jsonl", traces=1)
            TraceStore.load(tmp_path / "warm.jsonl")  # every module a load needs, imported before the child drops root
            read, write = os.pipe()
            child = os.fork()
            if child == 0:  # pragma: no cover - the child
                code = 1
                try:
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
                    os.environ.update(XDG_CACHE_HOME=str(cache), XDG_CONFIG_HOME=str(cache), HOME=str(cache))
                    os.write(write, str(TraceStore.load(folder / "t.jsonl").index_path).encode())
                    code = 0
                finally:
                    os._exit(code)
            os.close(write)
            _, status = os.waitpid(child, 0)
            index_path = Path(os.read(read, 4096).decode())
            os.close(read)
            assert os.waitstatus_to_exitcode(status) == 0
        assert index_path.is_relative_to(cache) and index_path.is_file()
        assert not (folder / "t.jsonl.rlm-index").exists()
    finally:
        folder.chmod(0o755)
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def test_the_cache_is_used_when_the_sidecar_cannot_be_written(tmp_path, monkeypatch):
    """The same fallback as a read-only folder, forced for a test run as root."""
    path = tmp_path / "t.jsonl"
    generate(path, traces=3)
    monkeypatch.setattr("rlm_env_traces.index.sidecar_path", lambda p: tmp_path / "missing-dir-file" / "x")
    (tmp_path / "missing-dir-file").write_text("a file, so no folder can be made here")
    store = TraceStore.load(path, cache_dir=tmp_path / "cache")
    assert store.index_path.parent == tmp_path / "cache"


def test_oversized_traces_get_a_diagnostic_and_attributes_are_capped(tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    span = {"trace_id": "t1", "span_id": "s1", "name": "chat", "status": {"code": "OK"},
            "attributes": {"gen_ai.prompt": "x" * 40_000}, "start_time": "2026-01-01T00:00:00Z"}
    path.write_text("\n".join(json.dumps({**span, "span_id": f"s{i}"}) for i in range(5)) + "\n")
    monkeypatch.setattr(store_module, "VIEW_TRACE_CHARS", 100_000)
    store = TraceStore.load(path)
    view = store.view_trace("t1")
    assert view["oversized"] and view["span_count"] == 5 and view["chars"] > 100_000
    assert "x" * 1000 not in json.dumps(view)
    (one,) = store.view_spans("t1", ["s3", "zz"])["spans"]
    assert 16_000 < len(one["attributes"]["gen_ai.prompt"]) < 16_500
    assert store.view_spans("t1", ["s3", "zz"])["missing_span_ids"] == ["zz"]
    assert store.index.traces["t1"].start == 1_767_225_600_000_000_000


def test_an_empty_file_is_an_error(tmp_path):
    (tmp_path / "e.jsonl").write_text("")
    with pytest.raises(Exception, match="trace file is empty"):
        TraceStore.load(tmp_path / "e.jsonl")


@pytest.mark.parametrize("fmt", ["flat", "otlp", "mixed"])
def test_a_parallel_build_equals_a_single_pass(tmp_path, monkeypatch, fmt):
    from rlm_env_traces import index

    path = tmp_path / "t.jsonl"
    generate(path, traces=40, fmt=fmt, malformed=4)
    single = index.build(path, workers=1)
    monkeypatch.setattr(index, "PARALLEL_BYTES", 0)
    parallel = index.build(path, workers=3)
    assert parallel == single and single.malformed == 4 and len(single.traces) == 40


def test_a_trace_split_across_lines_and_parts_is_merged(tmp_path, monkeypatch):
    """Interleaved traces: ranges per line, sums and names merged across the parts of a parallel build."""
    from rlm_env_traces import index

    path = tmp_path / "t.jsonl"
    spans = [{"trace_id": f"t{i % 2}", "span_id": f"s{i}", "status": {"code": "ERROR" if i == 3 else "OK"},
              "attributes": {"gen_ai.usage.input_tokens": 10, "gen_ai.agent.name": f"a{i % 3}"},
              "resource": {"service.name": "svc"}, "start_time": 100 + i, "end_time": 200 + i}
             for i in range(8)]
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))
    monkeypatch.setattr(index, "PARALLEL_BYTES", 0)
    built = index.build(path, workers=2)
    odd = built.traces["t1"]
    assert (odd.spans, odd.error_spans, odd.input_tokens, odd.start, odd.end) == (4, 1, 40, 101, 207)
    assert built.names(odd).agents == ("a0", "a1", "a2") and len(odd.ranges) == 4
    assert [s["span_id"] for s in TraceStore(path, built, path).trace_spans("t1")] == ["s1", "s3", "s5", "s7"]


def test_the_readme_session_can_be_reproduced_and_ids_read_whole(rlm_cli, rlm_isolated):
    """`rlm traces generate` makes the README's harness.jsonl; a piped query prints ids whole on one line; view
    and search take a unique prefix as `rlm runs show` does; a prefix that is too short or unknown is bad input."""
    import subprocess
    import sys

    work = rlm_isolated.work
    made = rlm_cli("traces", "generate", str(work / "harness.jsonl"), plugins=PLUGIN)
    assert made.code == 0 and "traces=60" in made.out, made.err
    assert rlm_cli("traces", "generate", str(work / "harness.jsonl"), plugins=PLUGIN).code == 2  # never overwrites
    (work / "planted.jsonl").symlink_to(work / "startup.sh")  # dangling: writing it would create its target
    assert rlm_cli("traces", "generate", str(work / "planted.jsonl"), plugins=PLUGIN).code == 2
    assert not (work / "startup.sh").exists()
    listed = rlm_cli("traces", "query", str(work / "harness.jsonl"), "--errors", "--limit", "3", plugins=PLUGIN)
    ids = [line.split("│")[1].strip() for line in listed.out.splitlines() if line.startswith("│")]
    assert len(ids) == 3 and all(len(i) == 32 for i in ids), listed.out
    viewed = rlm_cli("traces", "view", str(work / "harness.jsonl"), ids[0][:8], plugins=PLUGIN)
    assert viewed.code == 0 and json.loads(viewed.out)["trace_id"] == ids[0]
    found = rlm_cli("traces", "search", str(work / "harness.jsonl"), ids[0][:8], "time.?out", "--regex", "--json",
                    plugins=PLUGIN)
    assert found.code == 0 and json.loads(found.out)["match_count"] >= 1
    short = rlm_cli("traces", "view", str(work / "harness.jsonl"), ids[0][:2], plugins=PLUGIN)
    assert short.code == 2 and "rlm traces query" in short.err and "query_traces lists" not in short.err
    helped = subprocess.run([sys.executable, "-m", "rlm_env_traces.generate", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--traces" in helped.stdout
    assert "--install-completion" not in rlm_cli("traces", "--help", plugins=PLUGIN).out
