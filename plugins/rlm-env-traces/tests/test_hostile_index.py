"""Attacks on the trace store through what it finds on disk: forged and planted indexes, links at the index's
names, content swapped under the same size and mtime, huge and deep lines, corrupt gzip, too many traces."""

import json
import os
import subprocess
import sys
import textwrap
import zlib

import msgspec
import pytest

from rlm_env_traces import index as index_module
from rlm_env_traces import checks, reader, storage
from rlm_env_traces.generate import generate
from rlm_env_traces.index import sidecar_path
from rlm_env_traces.store import TraceStore
from rlm_host import InputError

PLUGIN = "rlm-env-traces"


def same_times(path, before):
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns


def forged(path, info, sealed=False):
    """A stored index for ``path`` claiming no errors and one huge, repeated range per trace."""
    honest = index_module.build(path)
    for entry in honest.traces.values():
        entry.error_spans = 0
        entry.ranges = [(0, 1 << 40)] * 3
    payload = msgspec.msgpack.encode(honest)
    return storage.seal(payload) if sealed else storage.MAGIC + b"\0" * storage.MAC_BYTES + payload


@pytest.mark.parametrize("shape", ["unsigned", "old format", "random bytes"])
def test_a_forged_index_with_the_files_size_and_mtime_is_never_used(rlm_cli, rlm_isolated, shape):
    path = rlm_isolated.work / "t.jsonl"
    info = generate(path, traces=12)
    before = os.stat(path)
    body = {"unsigned": lambda: forged(path, info), "random bytes": lambda: os.urandom(100_000),
            "old format": lambda: msgspec.msgpack.encode(index_module.build(path))}[shape]()  # unsigned, no header
    sidecar_path(path).write_bytes(body)
    same_times(path, before)
    overview = json.loads(rlm_cli("traces", "overview", str(path), "--json", plugins=PLUGIN).out)
    assert overview["error_traces"] == len(info["error_trace_ids"]) == 3, "the forged index hid the errors"
    view = json.loads(rlm_cli("traces", "view", str(path), info["error_trace_ids"][0], plugins=PLUGIN).out)
    assert len(view["spans"]) == 7
    assert storage.unseal(sidecar_path(path)) is not None, "the forged index was replaced by a signed one"


@pytest.mark.parametrize("signer", ["nobody", "another user"])
def test_an_index_whose_only_lie_is_in_its_counts_is_believed_only_when_this_user_signed_it(tmp_path, monkeypatch,
                                                                                            signer):
    """Honest ranges, fingerprint, size and mtime, only the error counts zeroed: every sanity check passes such an
    index, so its signature (this user's key) is all that keeps a view from hiding the errors."""
    path = tmp_path / "t.jsonl"
    info = generate(path, traces=6)
    lying = index_module.build(path)
    for entry in lying.traces.values():
        entry.error_spans = 0
    assert checks.problems(lying, path.stat().st_size, False) is None, "the lie passes every other check"
    payload = msgspec.msgpack.encode(lying)
    if signer == "nobody":
        body = storage.MAGIC + b"0" * storage.MAC_BYTES + payload  # hex digits: the signature is checked, and fails
    else:
        mine = os.environ["XDG_CONFIG_HOME"]
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-user"))  # their own key
        body = storage.seal(payload)
        monkeypatch.setenv("XDG_CONFIG_HOME", mine)
    sidecar_path(path).write_bytes(body)
    overview = TraceStore.load(path).get_overview()
    assert overview["error_traces"] == len(info["error_trace_ids"]) == 2, "the unsigned counts were believed"
    assert storage.unseal(sidecar_path(path)) is not None, "rebuilt and signed by this user"


def test_a_signed_index_that_fails_its_checks_is_rebuilt(tmp_path):
    """Even an index signed with this user's key (a bug, a leaked key) is checked range by range."""
    path = tmp_path / "t.jsonl"
    info = generate(path, traces=6)
    sidecar_path(path).write_bytes(forged(path, info, sealed=True))
    store = TraceStore.load(path)
    assert store.get_overview()["error_traces"] == len(info["error_trace_ids"]) == 2
    size = path.stat().st_size
    assert all(entry.ranges[-1][0] + entry.ranges[-1][1] <= size for entry in store.index.traces.values())


def test_content_swapped_under_the_same_size_and_mtime_is_reindexed(tmp_path):
    path = tmp_path / "t.jsonl"
    info = generate(path, traces=6)
    TraceStore.load(path)
    before = os.stat(path)
    text = path.read_text()
    path.write_text(text.replace('"code": "ERROR"', '"code": "OK!!!"').replace('"code":"ERROR"', '"code":"OK!!!"'))
    same_times(path, before)
    assert path.stat().st_size == before.st_size
    assert TraceStore.load(path).get_overview()["error_traces"] == 0 < len(info["error_trace_ids"])


@pytest.mark.parametrize(("offset", "length"), [(-5, 10), (0, 1 << 62), (10, -3), ((1 << 62), 1)])
def test_bad_ranges_are_clean_errors_whatever_the_index_says(tmp_path, offset, length):
    path = tmp_path / "t.jsonl"
    info = generate(path, traces=4)
    built = index_module.build(path)
    trace_id = info["error_trace_ids"][0]
    built.traces[trace_id].ranges = [(offset, length)]
    store = TraceStore(path, built, None)
    for call in (lambda: store.view_trace(trace_id), lambda: store.view_spans(trace_id, ["x"]),
                 lambda: store.search_trace(trace_id, "x")):
        with pytest.raises(InputError, match="outside the trace data"):
            call()


def test_links_planted_at_the_index_names_are_never_followed(tmp_path):
    path = tmp_path / "t.jsonl"
    generate(path, traces=3)
    victim = tmp_path / "victim.sh"
    victim.write_text("echo safe\n")
    for pid in range(os.getpid() - 2, os.getpid() + 3):  # the old predictable temporary names
        os.symlink(victim, tmp_path / f"t.jsonl.rlm-index.{pid}.tmp")
    os.symlink(victim, sidecar_path(path))  # and the index's own name
    store = TraceStore.load(path)
    assert victim.read_text() == "echo safe\n"
    assert store.index_path == sidecar_path(path) and not sidecar_path(path).is_symlink()
    assert TraceStore.load(path).index == store.index


def test_an_index_in_a_folder_others_can_write_goes_to_the_cache(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    generate(shared / "t.jsonl", traces=3)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = TraceStore.load(shared / "t.jsonl")
    assert store.index_path.is_relative_to(tmp_path / "cache") and not sidecar_path(shared / "t.jsonl").exists()
    assert (tmp_path / "cache" / "rlm" / "traces").stat().st_mode & 0o077 == 0


def test_a_fifo_as_the_trace_file_is_refused_not_waited_on(rlm_cli, rlm_isolated):
    os.mkfifo(rlm_isolated.work / "pipe.jsonl")
    result = rlm_cli("traces", "overview", "pipe.jsonl", plugins=PLUGIN)
    assert result.code == 2 and "trace file not found" in result.err


HUGE_LINE = """
import gzip, os, resource, sys
from pathlib import Path
from rlm_env_traces.generate import generate
from rlm_env_traces.index import build
small = Path(sys.argv[1]).with_name("small.jsonl")
generate(small, traces=2)
build(small)  # every module imported and warmed up
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
index = build(Path(sys.argv[1]))
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
print(grown, index.malformed, len(index.traces), index.data_size)
"""


def huge_line_gzip(path, megabytes):
    """A gzip of a few hundred KB holding one line of ``megabytes`` MB, then one good span."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"a" * (1 << 20)
    with path.open("wb") as out:
        out.write(packer.compress(b'{"trace_id": "big", "pad": "'))
        for _ in range(megabytes):
            out.write(packer.compress(chunk))
        out.write(packer.compress(b'"}\n' + json.dumps({"trace_id": "after", "span_id": "s"}).encode() + b"\n"))
        out.write(packer.flush())


@pytest.mark.parametrize("megabytes", [64, pytest.param(400, marks=pytest.mark.slow)])
def test_a_gzip_holding_one_huge_line_is_indexed_in_bounded_memory(tmp_path, megabytes):
    path = tmp_path / "bomb.jsonl.gz"
    huge_line_gzip(path, megabytes)
    assert path.stat().st_size < megabytes * 2_000
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(HUGE_LINE), str(path)], capture_output=True,
                          text=True, check=True)
    grown, malformed, traces, data_size = map(int, done.stdout.split())
    assert (malformed, traces) == (1, 1) and data_size > megabytes << 20
    assert grown < 3 * reader.MAX_LINE_BYTES >> 20, f"indexing grew the process by {grown} MB"


def test_deep_nesting_huge_numbers_and_odd_types_never_break_the_index(tmp_path):
    path = tmp_path / "odd.jsonl"
    lines = [b'{"trace_id": "deep", "attributes": {"x": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
             b'{"trace_id": "deep", "span_id": "s", "attributes": {"x": ' + b"[" * 600 + b"]" * 600 + b"}}",
             json.dumps({"trace_id": "big", "start_time": 10**40, "end_time": "1" * 80, "attributes": {
                 "gen_ai.usage.input_tokens": 10**30, "gen_ai.usage.output_tokens": -5}}).encode(),
             json.dumps({"trace_id": 5, "span_id": ["odd"], "name": {"n": 1}, "status": [1]}).encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    store = TraceStore.load(path)
    assert store.index.malformed == 1 and set(store.index.traces) == {"deep", "big", "5"}
    big = store.index.traces["big"]
    assert (big.start, big.end, big.output_tokens) == (None, None, 0) and big.input_tokens == index_module.TOKENS_CAP
    json.dumps(store.view_trace("deep")) and json.dumps(store.view_spans("deep", ["s"]))
    assert store.view_trace("5")["spans"][0]["name"] == {"n": 1}
    assert TraceStore.load(path).index == store.index, "stored and reloaded"


def test_a_truncated_or_corrupt_gzip_keeps_what_came_before(tmp_path):
    whole = tmp_path / "t.jsonl.gz"
    info = generate(whole, traces=40)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    store = TraceStore.load(cut)
    assert 0 < len(store.index.traces) < 40 and store.index.malformed >= 1
    first = next(iter(store.index.traces))
    assert store.view_trace(first)["spans"]
    noise = tmp_path / "noise.jsonl.gz"
    noise.write_bytes(b"\x1f\x8b" + os.urandom(300))
    with pytest.raises(InputError):
        TraceStore.load(noise)
    assert info["traces"] == 40


def test_too_many_traces_or_too_much_gzip_expansion_is_a_limit_error(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    generate(path, traces=30)
    monkeypatch.setattr(index_module, "MAX_TRACES", 10)
    with pytest.raises(reader.TraceLimitError, match="more than 10 traces"):
        index_module.build(path)
    monkeypatch.setattr(index_module, "PARALLEL_BYTES", 0)
    with pytest.raises(reader.TraceLimitError, match="more than 10 traces"):
        index_module.build(path, workers=2)
    monkeypatch.undo()
    packed = tmp_path / "t.jsonl.gz"
    generate(packed, traces=30)
    monkeypatch.setattr(reader, "GZIP_FLOOR_BYTES", 10_000)
    monkeypatch.setattr(reader, "GZIP_EXPANSION", 2)
    with pytest.raises(reader.TraceLimitError, match="decompresses to more than"):
        TraceStore.load(packed)


def test_a_cut_inside_a_huge_line_does_not_read_it_whole(tmp_path, monkeypatch):
    """The parallel build cuts the file where it may fall inside an over-long line."""
    path = tmp_path / "t.jsonl"
    generate(path, traces=10)
    with path.open("ab") as out:
        out.write(b'{"trace_id": "x", "pad": "' + b"y" * 3_000_000 + b'"}\n')
    generate(tmp_path / "tail.jsonl", traces=10, seed=3)
    with path.open("ab") as out:
        out.write((tmp_path / "tail.jsonl").read_bytes())
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 1_000_000)
    monkeypatch.setattr(index_module, "MAX_LINE_BYTES", 1_000_000)
    monkeypatch.setattr(index_module, "PARALLEL_BYTES", 0)
    single, parallel = index_module.build(path, workers=1), index_module.build(path, workers=4)
    assert single == parallel and single.malformed == 1 and len(single.traces) == 20
