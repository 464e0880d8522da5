"""A large text file given as the whole context stays on disk (``TextFile``): the host never reads its text, the
sandbox session loads it (the process and Docker workers from the file, Monty in pieces), and what the model
sees is exactly what the text loader would have given, in every runtime and after a worker restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.sdk.context import TextFile, describe_context, load_context
from rlm_host.context import LAZY_BYTES, TextLoader
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.testing.engine import isolated_runner
from support.workers import PLUGINS, RUNTIMES, engine, kill_worker  # noqa: F401 (engine: a fixture)

LOOK = "```repl\ni = context.find('needle')\nprint(len(context), context[i:i + 22], context.count(chr(13)))\n```"


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """Over LAZY_BYTES of text with Windows line ends, an undecodable byte and a needle near the end."""
    path = tmp_path_factory.mktemp("context") / "big.log"
    line = b"2026-11-25 sensor T4 nominal reading 17.25 C\r\n"
    with path.open("wb") as handle:
        for _ in range(LAZY_BYTES // len(line) + 10):
            handle.write(line)
        handle.write(b"bad byte \xff here\r\nthe needle is at 42 km\r\n")
    return path


def test_only_a_large_plain_text_file_stays_on_disk(big, tmp_path):
    assert isinstance(load_context([str(big)], lazy_text=True), TextFile)
    assert isinstance(load_context([str(big)]), str), "callers that did not ask get the text"
    small = tmp_path / "small.txt"
    small.write_text("short")
    assert load_context([str(small)], lazy_text=True) == "short"
    data = tmp_path / "big.json"
    data.write_text(json.dumps(["x" * 100] * (LAZY_BYTES // 100)))
    assert isinstance(load_context([str(data)], lazy_text=True), list)


def test_it_is_described_and_read_as_the_text_loader_reads_it(big):
    text = TextLoader().load(big)
    lazy = TextFile(big)
    assert lazy.read() == text and "".join(lazy.chunks(1 << 20)) == text
    assert describe_context(lazy) == describe_context(text)


def _run(tmp_path, sandbox, replies, monkeypatch, big, kill_before=None):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(TextFile, "read", lambda self: pytest.fail("the host read the context's text"))
    if kill_before:
        from rlm_host.sandbox.session_base import SessionBase

        real = SessionBase.execute

        def execute(self, code, **kwargs):
            if code.startswith(kill_before):
                kill_worker(self)
            return real(self, code, **kwargs)

        monkeypatch.setattr(SessionBase, "execute", execute)
    runner = isolated_runner(tmp_path, sandbox=sandbox, plugins=PLUGINS[sandbox])
    root = ScriptedConnector.from_responses(replies)
    result = runner.run_task("Where is the needle?", context=TextFile(big), connectors={"root": root, "sub": root})
    events = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
    return result, events, [e["data"]["observation"]["blocks"][0] for e in events if e["type"] == "step"
                            and e["data"]["observation"].get("blocks")]


@pytest.mark.parametrize("engine", RUNTIMES, indirect=True)
def test_the_sandbox_holds_the_text_the_host_never_read(tmp_path, monkeypatch, big, engine):
    text = TextLoader().load(big)
    result, events, blocks = _run(tmp_path, engine, [LOOK, "FINAL(done)"], monkeypatch, big)
    assert result.final_response == "done", result.error
    assert blocks[0]["stdout"] == f"{len(text)} needle is at 42 km\n 0\n"
    start = events[0]["data"]["context"]
    assert start["type"] == "str" and start["total_chars"] == len(text)


@pytest.mark.parametrize("engine", RUNTIMES, indirect=True)
def test_a_restarted_worker_gets_the_context_again(tmp_path, monkeypatch, big, engine):
    again = "```repl\nprint(len(context))\n```"
    result, _, blocks = _run(tmp_path, engine, [LOOK, again, "FINAL(done)"], monkeypatch, big,
                             kill_before="print(len(context))")
    assert blocks[1]["stdout"] == f"{len(TextLoader().load(big))}\n" and blocks[1].get("restarted")


def test_rlm_run_keeps_a_large_file_on_disk(rlm_cli, rlm_script, rlm_isolated, big, monkeypatch):
    monkeypatch.setattr(TextFile, "read", lambda self: pytest.fail("the host read the context's text"))
    result = rlm_cli("run", "q", "--context", str(big), "--model", rlm_script([LOOK, "FINAL(ok)"]), "--sandbox",
                     "process", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["final_response"] == "ok"


def test_a_text_grown_in_place_is_the_whole_text(tmp_path):
    """The worker and ``TextFile.read`` grow the text piece by piece (so reading peaks near its size, not twice):
    pieces that switch between ASCII and wider characters, and a line end split between two pieces, come out as a
    plain read gives them."""
    from rlm_host.sandbox.worker import read_in_place

    path = tmp_path / "mixed.txt"
    path.write_bytes(("abc\r\n" * 5 + "é ü 日本\r\n" + "x" * 7 + "🙂\n").encode() * 40 + b"\xff tail")
    expected = path.read_text(encoding="utf-8", errors="replace")
    with path.open(encoding="utf-8", errors="replace") as stream:
        assert read_in_place(stream, piece_chars=7) == expected
    assert TextFile(path).read() == expected
