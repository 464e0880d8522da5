"""``rlm runs export RUN --format html``: one self-contained page of a run tree, checked in a real headless
Chromium. The page shows the task, every step with its reply, code, output, variables and sub-calls, child runs
nested in the step that started them, and the answer; hostile text in a run is shown as text and no script of a
trajectory ever runs (the page's Content-Security-Policy allows only its own script); a 10,000-step run is paged,
never cut; the page loads nothing from the network."""

from __future__ import annotations

import json
import re
import textwrap
import time
from pathlib import Path

import pytest

from support.browser import browser, chromium  # noqa: F401 - chromium is a fixture (tests/support)

PLUGINS = "rlm-export-html,rlm-runs,rlm-sandbox-monty"  # rlm-runs: `rlm runs export`
HOSTILE = "</script><script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED2'\">\x1b[2J"


def page_dom(binary: str, tmp_path: Path, page: Path, fragment: str = "") -> str:
    done = browser(binary, tmp_path / "profile", "--dump-dom", page.as_uri() + fragment)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def export(rlm_cli, run: str, target: Path) -> None:
    done = rlm_cli("runs", "export", run, "--format", "html", "-o", str(target), plugins=PLUGINS)
    assert done.code == 0, done.out + done.err


@pytest.mark.slow
def test_a_run_with_a_child_run_is_one_page_with_everything(rlm_cli, rlm_script, rlm_isolated, chromium, tmp_path):
    code = textwrap.dedent("""\
        ```repl
        half = rlm_query("What is half of 84? Answer with FINAL.")
        print("the child said", half)
        ```""")
    model = rlm_script([code, "FINAL_VAR(half)"], rules=[{"match": "half of 84", "text": "FINAL(42)"}])
    run = rlm_cli("run", "Halve eighty-four.", "--model", model, "--sandbox", "monty", "--json", plugins=PLUGINS)
    assert run.code == 0, run.out + run.err
    page = tmp_path / "run.html"
    export(rlm_cli, "latest", page)
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", text), "nothing is loaded from the network"
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    dom = page_dom(chromium, tmp_path, page, "#step-1")
    assert 'data-drawn="yes"' in dom, "the page's own script ran"
    assert "Halve eighty-four." in dom and "step 1 · run_code" in dom and "step 2 · final" in dom
    assert "the child said 42" in dom, "the step's output"
    assert "Child run run_" in dom and "What is half of 84? Answer with FINAL." in dom, "the child run, nested"
    assert "rlm_query" in dom and "REPL variables" in dom
    assert re.search(r'class="answer">42<', dom), "the answer"


@pytest.mark.slow
def test_hostile_text_in_a_run_is_shown_as_text_and_never_runs(rlm_cli, rlm_script, rlm_isolated, chromium,
                                                              tmp_path):
    code = f"```repl\nbad = {HOSTILE!r}\nprint(bad)\n```"
    model = rlm_script([code, f"FINAL({HOSTILE})"])
    run = rlm_cli("run", "Say " + HOSTILE, "--model", model, "--sandbox", "monty", plugins=PLUGINS)
    assert run.code == 0, run.out + run.err
    page = tmp_path / "run.html"
    export(rlm_cli, "latest", page)
    assert "</script><script>document.title" not in page.read_text(encoding="utf-8"), "no text closes the data block"
    dom = page_dom(chromium, tmp_path, page, "#step-1")
    assert 'data-drawn="yes"' in dom
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert title.startswith("rlm run "), f"a script of the run set the title: {title}"
    body = dom[dom.index("<main"):]
    assert "<img" not in body and "<script>document" not in body, "no element made from a run's text"
    assert "&lt;/script&gt;&lt;script&gt;document.title='PWNED'" in body, "shown as text"
    assert "\\x1b[2J" in body and "\x1b" not in body, "a terminal escape is shown, not hidden"


@pytest.mark.slow
def test_a_10000_step_run_is_paged_never_cut(rlm_cli, rlm_isolated, chromium, tmp_path):
    trajectory = rlm_isolated.work / "long.jsonl"
    run_id = "run_20260101_000000_000000_abcd"
    base = {"run_id": run_id, "root_run_id": run_id, "parent_run_id": None, "depth": 0, "ts": 0.0}
    lines = [{**base, "type": "run_start", "seq": 0, "data": {"schema_version": "2", "task": "count", "model": "m"}}]
    for n in range(1, 10_001):
        lines.append({**base, "type": "step", "seq": n, "data": {
            "step": n, "action": "run_code", "reply": f"reply {n}", "code": f"print({n})",
            "observation": {"blocks": [{"code": f"print({n})", "stdout": f"out {n}\n"}], "success": n % 1000 != 0},
            "reward": 0.1, "usage": {"root": {"input_tokens": 10, "output_tokens": 2, "cost": 0.0}},
            "duration_s": 0.01}})
    lines.append({**base, "type": "final", "seq": 10_001, "data": {"final_response": "done", "steps": 10_000,
                                                                    "termination_reason": "final"}})
    trajectory.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    page = tmp_path / "long.html"
    export(rlm_cli, str(trajectory), page)
    text = page.read_text(encoding="utf-8")
    assert all(f'"reply {n}"' in text for n in (1, 5_000, 10_000)), "every step is in the file"
    started = time.monotonic()
    dom = page_dom(chromium, tmp_path, page)
    assert 'data-drawn="yes"' in dom and "page 1 of 100 (10000 steps)" in dom
    assert dom.count("<details") == 100, "one page of steps is drawn"
    assert time.monotonic() - started < 60  # a bound, not a measurement: benchmarks/html_page.py measures it
    last = page_dom(chromium, tmp_path, page, "#step-9999")
    assert "page 100 of 100" in last and "out 9999" in last, "a link to one step opens its page and the step"


def test_an_unknown_run_is_exit_2(rlm_cli, rlm_isolated):
    done = rlm_cli("runs", "export", "run_nope", "--format", "html", plugins=PLUGINS)
    assert done.code == 2 and "Traceback" not in done.err, done.err
