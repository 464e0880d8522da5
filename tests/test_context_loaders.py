"""Context loaders: the built-in text and JSON loaders keep the contract third parties subclass; a binary file no
loader reads is bad input naming the file, and in a folder it is skipped with a warning, never silently."""

from __future__ import annotations

import json
from pathlib import Path

from rlm_host.testing import ContextLoaderContract


class TestJsonLoader(ContextLoaderContract):
    loader = "json"
    distribution = ""

    def sample(self, folder: Path) -> tuple[Path, str]:
        path = folder / "facts.json"
        path.write_text(json.dumps({"stations": [{"name": "Halley", "sensor": "T4 failed at -41.7 C"}]}))
        return path, "T4 failed at -41.7 C"

    def broken(self, folder: Path) -> Path:
        path = folder / "broken.json"
        path.write_text('{"stations": [')
        return path


class TestJsonLinesLoader(ContextLoaderContract):
    loader = "jsonl"
    distribution = ""

    def sample(self, folder: Path) -> tuple[Path, str]:
        path = folder / "events.jsonl"
        path.write_text('{"day": 116, "event": "ok"}\n\n{"day": 117, "event": "T4 failed at 03:40 UTC"}\n')
        return path, "T4 failed at 03:40 UTC"

    def broken(self, folder: Path) -> Path:
        path = folder / "events.ndjson"
        path.write_text('{"day": 116}\n{"day": 117,\n')
        return path


def test_json_lines_are_a_list_of_values_and_a_bad_line_is_named(tmp_path):
    from rlm_host import InputError
    from rlm_host.sdk.context import load_context

    (tmp_path / "a.jsonl").write_text('{"a": 1}\n[2]\n\n"three"\n')
    assert load_context([str(tmp_path / "a.jsonl")]) == [{"a": 1}, [2], "three"]
    (tmp_path / "b.jsonl").write_text('{"a": 1}\nnot json\n')
    try:
        load_context([str(tmp_path / "b.jsonl")])
    except InputError as exc:
        assert "b.jsonl: line 2 is not valid JSON" in exc.message
    else:
        raise AssertionError("a bad line must be an InputError")


class TestTextLoader(ContextLoaderContract):
    loader = "text"
    distribution = ""

    def sample(self, folder: Path) -> tuple[Path, str]:
        path = folder / "log.md"
        path.write_text("# Day 117\nThe thermistor T4 failed at 03:40 UTC.\n")
        return path, "T4 failed at 03:40 UTC"

    def broken(self, folder: Path) -> Path:
        path = folder / "image.png"
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
        return path


def test_a_binary_file_is_bad_input_and_a_folder_skips_it_with_a_warning(rlm_cli, rlm_script, rlm_isolated):
    work = rlm_isolated.work
    (work / "scan.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 4)
    model = rlm_script(["```repl\nprint(list_files())\n```", "FINAL(1)"])
    single = rlm_cli("run", "q", "--context", "scan.pdf", "--model", model, "--sandbox", "process")
    assert single.code == 2 and "scan.pdf: a binary file (.pdf) that no context loader reads" in single.err
    assert "rlm plugins list" in single.err and "Traceback" not in single.err
    (work / "docs").mkdir()
    (work / "docs" / "notes.txt").write_text("plain notes")
    (work / "docs" / "scan.pdf").write_bytes((work / "scan.pdf").read_bytes())
    folder = rlm_cli("run", "q", "--context", "docs", "--model", model, "--sandbox", "process", "--json")
    assert folder.code == 0, folder.err
    assert "skipped 1 file(s) no context loader could read: scan.pdf" in folder.err
    start = json.loads(Path(json.loads(folder.out)["trajectory_path"]).read_text().splitlines()[0])
    assert start["data"]["context"]["documents"] == 1


def test_plugins_list_shows_the_loaders(rlm_cli):
    shown = rlm_cli("plugins", "list", "--all")
    assert "context_loader:" in shown.out and "json, jsonl, text" in shown.out


def test_sniffing_a_zip_bomb_reads_only_the_head_of_an_entry(tmp_path):
    """A package without a known suffix is sniffed in the host: it must never inflate a whole entry."""
    import tracemalloc
    import zipfile

    from rlm_host.engine.context_loading import media_type

    bomb = tmp_path / "report"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", b"<Types>" + b" " * 60_000_000)
    tracemalloc.start()
    try:
        media_type(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, peak
