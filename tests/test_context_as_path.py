"""An environment that reads its context file itself (``EnvironmentSpec.context_as_path``) gets the path, unread."""

from pathlib import Path

import pytest

from rlm_host import EnvironmentSpec, InputError
from rlm_host.sdk.context import describe_context, load_context
from rlm_host.environments.kit import render_description


def test_the_path_is_checked_and_resolved_but_not_read(tmp_path, monkeypatch):
    trace = tmp_path / "big.jsonl"
    trace.write_bytes(b'{"x": 1}\n' * 10)
    monkeypatch.chdir(tmp_path)
    loaded = load_context(["big.jsonl"], as_path=True)
    assert loaded == trace.resolve() and isinstance(loaded, Path)
    assert load_context(["big.jsonl"]) == [{"x": 1}] * 10, "other environments still get the content"
    meta = describe_context(loaded)
    assert meta == {"type": "path", "path": str(trace.resolve()), "total_chars": 0, "bytes": 90}
    assert str(trace.resolve()) in render_description(meta) and "not loaded" in render_description(meta)


@pytest.mark.parametrize("paths", [["a.jsonl", "b.jsonl"], ["-"], ["."], ["missing.jsonl"]])
def test_anything_but_one_existing_file_is_refused(tmp_path, monkeypatch, paths):
    monkeypatch.chdir(tmp_path)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("{}\n")
    with pytest.raises(InputError):
        load_context(paths, as_path=True)


def test_the_flag_defaults_to_loading():
    spec = EnvironmentSpec("mine", "An environment", "x:y")
    assert spec.context_as_path is False
    assert EnvironmentSpec("mine", "An environment", "x:y", context_as_path=True).context_as_path
