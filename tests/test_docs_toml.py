"""Every ```toml block of README.md, of the docs site (docs/**/*.md) and of every plugin README parses with
tomllib, and the ``[[prices]]`` example of the docs is accepted by ``rlm config show`` as printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("plugins/*/README.md"))]
TOML_BLOCK = re.compile(r"^```toml[^\n]*\n(.*?)^```", re.S | re.M)
RLM = str(Path(sys.executable).with_name("rlm"))


def toml_blocks() -> list[tuple[str, str]]:
    return [(f"{page.relative_to(ROOT)}#{i}", body) for page in PAGES
            for i, body in enumerate(TOML_BLOCK.findall(page.read_text(encoding="utf-8")), 1)]


@pytest.mark.parametrize("where,body", toml_blocks(), ids=[w for w, _ in toml_blocks()])
def test_every_toml_block_parses(where, body):
    tomllib.loads(body)


def _rlm(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    return subprocess.run([RLM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_the_readme_prices_example_is_accepted_as_printed(rlm_isolated):
    block = next(body for _, body in toml_blocks() if "[[prices]]" in body)
    (rlm_isolated.work / "rlm.toml").write_text(block)
    done = _rlm("--trust-config", "config", "show", "--json", cwd=rlm_isolated.work)  # prices apply once trusted
    assert done.returncode == 0, done.stderr
    assert '"openai:gpt-4.1"' in done.stdout and "prices" in json.dumps(json.loads(done.stdout))


def test_the_strict_hint_is_toml_a_user_can_paste(rlm_isolated):
    done = _rlm("run", "q", "--model", "openai:nosuch-model", "--base-url", "http://127.0.0.1:9", "--max-cost", "0.01",
                "--strict", "--sandbox", "process", cwd=rlm_isolated.work)
    assert done.returncode == 2 and "hint:" in done.stderr
    hint = done.stderr.split("hint:", 1)[1]
    lines = hint.splitlines()
    start = next(i for i, line in enumerate(lines) if "[[prices]]" in line)
    snippet = [lines[start].strip()] + [line for line in lines[start + 1:] if re.match(r"\s*\w+\s*=", line)]
    parsed = tomllib.loads("\n".join(snippet))
    assert parsed["prices"][0]["model"] == "openai:nosuch-model"
    (rlm_isolated.work / "rlm.toml").write_text("\n".join(snippet) + "\n")
    assert _rlm("config", "show", cwd=rlm_isolated.work).returncode == 0
