"""``rlm bench sweep`` on this machine and ``rlm bench sweep-report``, as a user runs them: sweep files expanded
and checked, ``--dry-run`` with its cost estimates, real sweeps of scripted-model cases in the ``process`` sandbox
(threads, then worker processes), budgets, ``--resume``, Ctrl-C, and the sweep report as markdown and as an HTML
page checked in a real headless browser."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bench_data import BENCH, RLM_SCRIPT, write_script
from bench_data.fixtures import cli, isolated_env, work  # noqa: F401 (fixtures)


@pytest.fixture(autouse=True)
def trusted_sweep_files(isolated_env, monkeypatch):
    """These tests' own sweep files are trusted (an untrusted one is refused: tested at the end of this file)."""
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")


from rlm_bench.store import BenchStore
from rlm_bench.sweep import SweepStore
from rlm_bench.sweep.file import expand, load_sweep

REPO = Path(__file__).resolve().parents[3]
PACK = """\
presets:
  tiny:
    description: two quick cases
    cases:
      - case_id: a
        task: "What is six times seven?"
        expected: "42"
        scorer: exact
      - case_id: b
        task: "What is forty-two?"
        expected: "42"
        scorer: exact
  trio:
    description: three cases
    cases:
      - {case_id: x, task: "Say 42 (x)", expected: "42", scorer: exact}
      - {case_id: y, task: "Say 42 (y)", expected: "42", scorer: exact}
      - {case_id: z, task: "Say 42 (z)", expected: "42", scorer: exact}
"""


def setup(work: Path, *, delay: float = 0.0, wrong: str = "") -> str:
    """The pack file and a scripted model answering 42 (native: FINAL(42); the echo framework: ANSWER: 42), or
    41 to tasks matching ``wrong``; returns the model string (an absolute path)."""
    (work / "pack.yaml").write_text(PACK)
    rules = [{"match": "Reply with code, or ANSWER", "text": "ANSWER: 42", "delay": delay}]
    if wrong:
        rules.insert(0, {"match": wrong, "text": "FINAL(41)", "delay": delay})
    rules.append({"match": ".", "text": "FINAL(42)", "delay": delay})
    name = "model-wrong.json" if wrong else "model.json"
    write_script(work / name, rules)
    return f"scripted:{work / name}"


def sweep_file(work: Path, body: str, name: str = "sweep.toml") -> Path:
    path = work / name
    path.write_text(body)
    return path


def grid(model: str, *, presets: str = '["tiny"]', extra: str = "", run: str = "timeout = 60") -> str:
    return (f'[sweep]\nname = "t"\npresets = {presets}\npacks = ["pack.yaml"]\nmodels = ["{model}"]\n'
            f'sandboxes = ["process"]\n{extra}\n[run]\n{run}\n')


def sweep_id_of(err: str) -> str:
    return re.search(r"sweep (sweep_\w+)", err).group(1)


def price_everything(work: Path, per_million: float = 100.0) -> None:
    """An rlm.toml pricing every scripted model (otherwise free), so cases cost something."""
    (work / "rlm.toml").write_text(f'[[prices]]\nmodel = "scripted:*"\ninput = {per_million}\noutput = {per_million}\n')


# ---------------------------------------------------------------------------------------------------- the file


def test_expansion_axes_repeat_overrides_and_empty_axes(tmp_path):
    path = sweep_file(tmp_path, """
[sweep]
presets = ["p1", "p2"]
models = ["m:a", "m:b", "m:a"]
frameworks = []
environments = []
sandboxes = ["process"]
instructions = ["", "be brief"]
repeat = 2

[run]
timeout = 10
max_steps = 4

[[override]]
model = "m:b"
run = { timeout = 20, max_steps = 6 }

[[override]]
model = "m:b"
preset = "p2"
run = { timeout = 30 }
""")
    points = expand(load_sweep(path))
    assert len(points) == 2 * 2 * 1 * 1 * 1 * 2 * 2  # duplicates dropped, empty axes one "as configured" value
    assert [(p.preset, p.model, p.instructions, p.repeat) for p in points[:4]] == [
        ("p1", "m:a", None, 1), ("p1", "m:a", None, 2), ("p1", "m:a", "be brief", 1), ("p1", "m:a", "be brief", 2)]
    assert {p.framework for p in points} == {"native"} and {p.environment for p in points} == {None}
    runs = {(p.preset, p.model): p.run for p in points}
    assert runs[("p1", "m:a")] == {"timeout": 10, "max_steps": 4}
    assert runs[("p1", "m:b")] == {"timeout": 20, "max_steps": 6}
    assert runs[("p2", "m:b")] == {"timeout": 30, "max_steps": 6}  # later overrides win, in file order
    keys = [p.key for p in points]
    assert len(set(keys)) == len(keys) and keys[0] == "preset=p1 model=m:a framework=native sandbox=process repeat=1"


@pytest.mark.parametrize("body, key", [
    ('[sweep]\npresets = ["tiny"]\nmodel = ["x"]\n', "sweep.model: Extra inputs are not permitted"),
    ('[sweep]\npresets = ["tiny"]\nrepeat = "two"\n', "sweep.repeat: Input should be a valid integer"),
    ('[sweep]\nmodels = ["scripted:x"]\n', "sweep.presets: Field required"),
    ('[sweep]\npresets = []\n', "sweep.presets: List should have at least 1 item"),
    ('[sweep]\npresets = ["tiny"]\n[[override]]\nmodle = "x"\n', "override.0.modle: Extra inputs are not permitted"),
    ('[sweep]\npresets = ["tiny"]\n[bench.ray]\nnum_cpus = 0\n', "bench.ray.num_cpus: Input should be greater than 0"),
    ('[sweep\npresets = ["tiny"]\n', "not valid TOML"),
])
def test_bad_sweep_files_are_exit_2_naming_the_file_and_the_key(cli, work, body, key):
    path = sweep_file(work, body)
    code, out, err = cli("bench", "sweep", str(path), "--dry-run")
    assert code == 2, (out, err)
    assert str(path) in err and key in err
    assert not (work / ".rlm" / "sweeps").exists()


def test_a_model_naming_no_provider_and_an_unknown_name_stop_before_anything_runs(cli, work):
    model = setup(work)
    for models, what in (('"gpt-4o"', "gpt-4o"), ('"nosuchprovider:x"', "nosuchprovider")):
        path = sweep_file(work, grid(model).replace(f'["{model}"]', f"[{models}]"))
        code, _, err = cli("bench", "sweep", str(path), "-q")
        assert code == 2 and what in err, err
    path = sweep_file(work, grid(model, extra='frameworks = ["no-such-framework"]'))
    code, _, err = cli("bench", "sweep", str(path), "-q")
    assert code == 2 and "no-such-framework" in err
    code, _, err = cli("bench", "sweep", "-q")
    assert code == 2 and "--resume" in err
    assert not (work / ".rlm" / "benchmarks").exists() and not (work / ".rlm" / "sweeps").exists()


# ---------------------------------------------------------------------------------------------------- --dry-run


def test_dry_run_prints_the_points_cases_and_a_cost_estimate(cli, work, priced_model):
    setup(work)
    run = f'timeout = 60\nbase_url = "{priced_model.url}"'
    body = grid("openai:fake", presets='["tiny", "trio"]', extra="repeat = 2\nlimit = 2", run=run)
    path = sweep_file(work, body.replace('["openai:fake"]', '["openai:fake", "openai:unpriced"]'))
    code, out, err = cli("bench", "sweep", str(path), "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["POINT", "CASES", "EST.", "COST", "FROM"] and len(lines) == 1 + 8 + 1
    assert "preset=tiny model=openai:fake" in lines[1] and "repeat=1" in lines[1] and "repeat=2" in lines[2]
    assert "preset=trio model=openai:unpriced" in lines[8]
    # a price for the fake model in rlm.toml: an upper bound in dollars (8 steps of 4,000 + 600 tokens at $1/M)
    assert re.search(r"\s2\s+\$0\.0736\s+upper bound: 8 steps", lines[1]), lines[1]
    assert re.search(r"\s2\s+\?\s+no price known", lines[3]), lines[3]
    assert lines[-1] == ("8 points, 16 cases, estimated cost $0.2944 (4 point(s) without a price); nothing ran "
                         "(--dry-run)")
    assert not (work / ".rlm" / "benchmarks").exists() and not (work / ".rlm" / "sweeps").exists()
    assert priced_model.requests == []

    one = sweep_file(work, grid("openai:fake", run=run), "one.toml")  # real costs now: 2 cases at $0.0011
    code, _, err = cli("bench", "sweep", str(one), "-q")
    assert code == 0 and "$0.0022" in err, err
    code, out, err = cli("bench", "sweep", str(path), "--dry-run", "--json")
    assert code == 0, err
    dry = json.loads(out)
    rows = {(row["point"].split()[0], row["point"].split()[1]): row for row in dry["points"]}
    assert rows[("preset=tiny", "model=openai:fake")]["estimate_from"] == "2 earlier case(s)"
    assert rows[("preset=tiny", "model=openai:fake")]["cost_estimate"] == pytest.approx(0.0022)
    assert rows[("preset=trio", "model=openai:fake")]["estimate_from"].startswith("upper bound")
    assert rows[("preset=trio", "model=openai:unpriced")]["cost_estimate"] is None
    assert dry["total"] == {"points": 8, "cases": 16, "cost_estimate": pytest.approx(2 * 0.0022 + 2 * 0.0736),
                            "unpriced_points": 4}


# ---------------------------------------------------------------------------------------------------- real sweeps


def run_labels(case) -> dict:
    first = json.loads(Path(case.trajectory_path).read_text().splitlines()[0])
    return first["data"]["settings"]["labels"]


def test_a_local_sweep_makes_the_benchmarks_rlm_bench_run_makes(cli, work):
    model = setup(work)
    path = sweep_file(work, grid(model, extra="repeat = 2"))
    code, out, err = cli("bench", "sweep", str(path), "-q")
    assert code == 0, err
    sweep_id = sweep_id_of(err)
    assert "finished, 4 of 4 cases" in err and "node " in err
    record = SweepStore(work / ".rlm").load(sweep_id)
    assert record.status == "finished" and record.stopped is None and sum(n.cases for n in record.nodes.values()) == 4
    bench = BenchStore(work / ".rlm")
    summaries = [bench.load(p.benchmark_id) for p in record.points]
    assert [s.metrics.cases for s in summaries] == [2, 2] and all(s.metrics.accuracy == 1.0 for s in summaries)
    for point, summary in zip(record.points, summaries):
        for case in summary.cases:
            labels = run_labels(case)
            assert labels["sweep_id"] == sweep_id and labels["sweep_point"] == point.key
            assert labels["repeat"] == str(point.point["repeat"]) and labels["benchmark_id"] == summary.benchmark_id

    code, out, err = cli("bench", "run", "--pack", "pack.yaml", "--preset", "tiny", "--model", model, "--sandbox",
                         "process", "-q", "--json")
    assert code == 0, err
    single = json.loads(out)
    identity = ("preset", "source", "description", "mode", "framework", "environment", "model", "sub_model",
                "sandbox", "judge_model", "instructions", "cases_planned")
    swept = summaries[0].model_dump(mode="json")
    assert {k: swept[k] for k in identity} == {k: single[k] for k in identity}
    assert Path(swept["pack_file"]).resolve() == Path(single["pack_file"]).resolve()

    code, out, err = cli("bench", "compare", single["benchmark_id"], summaries[0].benchmark_id)
    assert code == 0 and "PASSED" in out, (out, err)
    code, out, err = cli("leaderboard", "--json")
    assert code == 0, err
    ranked = {row["benchmark_id"] for row in json.loads(out)["rows"]}
    assert {s.benchmark_id for s in summaries} | {single["benchmark_id"]} <= ranked
    code, out, err = cli("bench", "report", summaries[1].benchmark_id)
    assert code == 0 and f"# Benchmark {summaries[1].benchmark_id}" in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="worker processes: Linux")
def test_worker_processes_run_every_case_once(cli, work):
    model = setup(work)
    path = sweep_file(work, grid(model, presets='["tiny", "trio"]'))
    code, _, err = cli("bench", "sweep", str(path), "--processes", "2", "-q")
    assert code == 0, err
    record = SweepStore(work / ".rlm").load("latest")
    assert record.status == "finished" and sum(n.cases for n in record.nodes.values()) == 5
    bench = BenchStore(work / ".rlm")
    assert sorted(len(bench.load(p.benchmark_id).cases) for p in record.points) == [2, 3]
    assert len(list((work / ".rlm" / "runs").glob("run_*.jsonl"))) == 5  # each case ran exactly once


@pytest.fixture
def priced_model(work, monkeypatch):
    """A priced fake model: ``openai:fake`` served by a local OpenAI-compatible server (``OpenAIServer``),
    answering FINAL(42) with 1,000 + 100 tokens, priced at $1 per million by the project's rlm.toml: $0.0011 a call."""
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    from rlm_host.testing import OpenAIServer
    from rlm_host.testing import openai_answer as answer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (work / "rlm.toml").write_text('[[prices]]\nmodel = "openai:fake"\ninput = 1.0\noutput = 1.0\n')
    with OpenAIServer() as server:
        for _ in range(8):
            server.push(answer("FINAL(42)", prompt_tokens=1000, completion_tokens=100))
        yield server


def test_max_cost_stops_new_cases_and_the_record_and_report_say_why(cli, work, priced_model):
    setup(work)
    run = f'timeout = 60\nbase_url = "{priced_model.url}"'
    path = sweep_file(work, grid("openai:fake", presets='["trio"]', run=run))
    code, out, err = cli("bench", "sweep", str(path), "-j", "1", "--max-cost", "0.001", "-q")
    assert code == 0, err
    sweep_id = sweep_id_of(err)
    assert "budget, 1 of 3 cases, $0.0011" in err and "--max-cost $0.001 reached ($0.0011 spent)" in err
    assert f"rlm bench sweep --resume {sweep_id}" in err and len(priced_model.requests) == 1
    record = SweepStore(work / ".rlm").load(sweep_id)
    assert record.status == "budget" and record.stopped.startswith("--max-cost $0.001 reached")
    assert record.spent_cost == pytest.approx(0.0011) and record.spent_tokens == 1100
    bench = BenchStore(work / ".rlm")
    assert len(bench.load_cases(record.points[0].benchmark_id)) == 1
    assert not bench.summary_path(record.points[0].benchmark_id).exists()  # not every case: no summary yet

    code, out, err = cli("bench", "sweep-report", sweep_id[:14])
    assert code == 0, err
    assert "- status: budget (1 of 3 cases finished)" in out and "- stopped: --max-cost $0.001 reached" in out
    assert f"- resume: rlm bench sweep --resume {sweep_id}" in out
    assert "| all points | 1/3 (partial: 1 of 1 points) |" in out and "| partial |" in out

    code, _, err = cli("bench", "sweep", "--resume", sweep_id, "--max-tokens", "1", "-q")  # tokens budget, too
    assert code == 0 and "--max-tokens 1 reached (1100 spent)" in err  # the whole sweep's spend, earlier runs too
    assert len(priced_model.requests) == 1
    code, _, err = cli("bench", "sweep", "--resume", sweep_id, "-q")
    assert code == 0 and "finished, 3 of 3 cases" in err and len(priced_model.requests) == 3
    code, out, _ = cli("bench", "sweep-report", sweep_id)
    assert "| all points | 3 | 100.0% | 1.000 | $0.0011 | 3,300 |" in out


def test_resume_runs_only_the_missing_case(cli, work):
    model = setup(work)
    code, _, err = cli("bench", "sweep", str(sweep_file(work, grid(model, presets='["tiny", "trio"]'))), "-q")
    assert code == 0, err
    sweep_id = sweep_id_of(err)
    record = SweepStore(work / ".rlm").load(sweep_id)
    bench = BenchStore(work / ".rlm")
    trio = record.points[1].benchmark_id
    before = {p: p.stat().st_mtime_ns for p in (work / ".rlm" / "benchmarks").glob("bench_*/cases/*.json")}
    runs = set((work / ".rlm" / "runs").glob("run_*.jsonl"))
    bench.case_path(trio, "y").unlink()
    bench.summary_path(trio).unlink()

    code, out, err = cli("bench", "sweep", "--resume", sweep_id[:16], "-q", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "finished"
    new_runs = set((work / ".rlm" / "runs").glob("run_*.jsonl")) - runs
    assert len(new_runs) == 1 and '"task":"Say 42 (y)"' in next(iter(new_runs)).read_text().replace(": ", ":")
    after = {p: p.stat().st_mtime_ns for p in (work / ".rlm" / "benchmarks").glob("bench_*/cases/*.json")}
    assert {p for p in after if after[p] != before.get(p)} == {bench.case_path(trio, "y")}
    assert [c.case_id for c in bench.load(trio).cases] == ["x", "y", "z"]  # the summary, written again

    code, _, err = cli("bench", "sweep", "--resume", "sweep_nope", "-q")
    assert code == 2 and "no sweep 'sweep_nope'" in err


def test_ctrl_c_keeps_finished_cases_and_prints_the_resume_command(isolated_env, work):
    model = setup(work, delay=0.7)
    path = sweep_file(work, grid(model, presets='["trio"]'))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")} | {"RLM_PLUGINS": BENCH,
                                                                                "RLM_TRUST_CONFIG": "1"}
    process = subprocess.Popen([RLM_SCRIPT, "bench", "sweep", str(path), "-j", "1", "-q"], cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cases = work / ".rlm" / "benchmarks"
    deadline = time.monotonic() + 60
    while not list(cases.glob("bench_*/cases/*.json")) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    match = re.search(r"rlm bench sweep --resume (sweep_\w+)", err)
    assert match and "interrupted" in err, err
    record = SweepStore(work / ".rlm").load(match.group(1))
    saved = BenchStore(work / ".rlm").load_cases(record.points[0].benchmark_id)
    assert record.status == "interrupted" and 1 <= len(saved) < 3
    assert all(c.status == "completed" for c in saved.values())

    setup(work)  # the same model, answering at once now
    done = subprocess.run([RLM_SCRIPT, "bench", "sweep", "--resume", match.group(1), "-q"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = BenchStore(work / ".rlm").load(record.points[0].benchmark_id)
    assert summary.metrics.cases == 3 and summary.metrics.accuracy == 1.0
    assert {c.case_id: c.finished_at for c in summary.cases if c.case_id in saved} == {
        k: c.finished_at for k, c in saved.items()}  # the finished ones were kept, not run again


# ---------------------------------------------------------------------------------------------------- the report


@pytest.fixture
def two_by_two(cli, work, monkeypatch, priced_model):
    """A finished sweep of two models (the priced fake answering every case, a free scripted one getting case b
    wrong) × two frameworks (native and the echo test framework of tests/support, which runs FINAL(42) as code);
    returns (sweep id, cli)."""
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.echo_framework")  # tests/ is on sys.path: priced_model
    bad = setup(work, wrong="forty-two")
    body = grid("openai:fake", extra='frameworks = ["native", "echo"]')
    body = body.replace('["openai:fake"]', f'["openai:fake", "{bad}"]')
    body += f'\n[[override]]\nmodel = "openai:fake"\nrun = {{ base_url = "{priced_model.url}" }}\n'
    code, _, err = cli("bench", "sweep", str(sweep_file(work, body)), "-q")
    assert code == 0, err
    assert len(priced_model.requests) == 4
    return sweep_id_of(err), cli


def test_markdown_report_of_a_two_by_two_sweep(two_by_two, work):
    sweep_id, cli = two_by_two
    code, out, err = cli("bench", "sweep-report", "latest")
    assert code == 0, err
    assert out.startswith(f"# Sweep {sweep_id}: t\n") and "- status: finished (all 8 cases finished)" in out
    sections = re.findall(r"^## (.+)$", out, re.M)
    assert sections == ["Overall", "By model", "By framework", "Model × framework", "Latency per framework (s)",
                        "Nodes", "Points"]  # only the axes with two values; preset, sandbox… have one
    tables = {title: body for title, body in re.findall(r"^## (.+?)\n\n(.*?)(?=\n## |\Z)", out, re.M | re.S)}
    by_model = [line.split(" | ") for line in tables["By model"].splitlines()[2:]]
    assert [(r[0].strip("| ").rsplit("/", 1)[-1], *r[1:6]) for r in by_model] == [
        ("openai:fake", "4", "100.0%", "1.000", "$0.0011", "4,400"),
        ("model-wrong.json", "4", "100.0%", "0.500", "$0.0000", by_model[1][5])]  # scripted models are free
    frameworks = tables["By framework"].splitlines()[2:]
    assert [f.split(" | ")[0] for f in frameworks] == ["| native", "| echo"]
    assert len(tables["Model × framework"].splitlines()) == 2 + 2 + 4
    assert len(tables["Latency per framework (s)"].splitlines()) == 2 + 2
    assert len(tables["Points"].splitlines()) == 2 + 4 and "partial" not in tables["Points"]

    code, _, err = cli("bench", "sweep-report", sweep_id, "--format", "pdf")
    assert code == 2 and "unknown format 'pdf'" in err
    code, _, err = cli("bench", "sweep-report", "sweep_")  # a prefix two sweeps would share: here one
    assert code == 0


class Page(HTMLParser):
    """What the report tests look for: chart marks per chart, tables by class, scripts and URL attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.svg: str | None = None
        self.marks: dict[str, Counter] = {}
        self.series: list[str] = []
        self.tables: Counter = Counter()
        self.scripts = 0
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
            self.marks[self.svg] = Counter()
        elif self.svg and (tag, a.get("class")) in (("circle", "point"), ("g", "box"), ("rect", "bar")):
            self.marks[self.svg][tag] += 1
            if tag == "g":
                self.series.append(a["data-framework"])
        elif tag == "table":
            self.tables[a.get("class")] += 1
        elif tag == "script":
            self.scripts += 1
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None


def check_page(markup: str) -> Page:
    page = Page()
    page.feed(markup)
    assert not re.search(r"https?://", markup) and page.scripts == 0 and page.urls == []
    assert page.marks == {"chart-accuracy-cost": {"circle": 4}, "chart-latency": {"g": 2},
                          "chart-completion": {"rect": 2}}
    assert page.series == ["native", "echo"]
    assert page.tables["axis axis-model"] == 1 and page.tables["axis axis-framework"] == 1
    assert page.tables["axis axis-preset"] == 0 and page.tables["nodes"] == 1 and page.tables["points"] == 1
    return page


def test_html_report_of_a_two_by_two_sweep(two_by_two, work):
    sweep_id, cli = two_by_two
    code, markup, err = cli("bench", "sweep-report", sweep_id, "--format", "html")  # not a terminal: stdout
    assert code == 0, err
    assert markup.startswith("<!DOCTYPE html>") and "default-src 'none'" in markup
    check_page(markup)
    assert "Mean score against cost per case" in markup and 'data-y="0.5"' in markup and 'data-y="1"' in markup
    code, _, err = cli("bench", "sweep-report", sweep_id, "--format", "html", "--output", "r.html")
    assert code == 0 and (work / "r.html").read_text() == markup


# --- in a real browser ----------------------------------------------------------------------------------------

from test_bench_html import browser, chromium, png_pixels  # noqa: E402,F401 (the browser fixture and helpers)


def page_requests(net_log: Path) -> list[str]:
    """URLs the page itself asked for (the browser's own background requests have no page origin)."""
    log = json.loads(net_log.read_text())
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    return [event["params"]["url"] for event in log["events"] if "url" in event.get("params", {})
            if names.get(event["type"]) == "URL_REQUEST_START_JOB"
            and event.get("params", {}).get("initiator") != "not an origin"]


def load_in_browser(binary: str, page: Path, tmp: Path) -> tuple[str, list[str], list[str]]:
    """(DOM, console messages, URLs the page requested) of ``page`` in headless Chromium."""
    net_log = tmp / f"{page.stem}.netlog.json"
    run = browser(binary, tmp / f"profile-{page.stem}", "--enable-logging=stderr", "--v=0",
                  f"--log-net-log={net_log}", "--dump-dom", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    requests = [url for url in page_requests(net_log) if not url.startswith("file:")]
    return run.stdout, console, requests


@pytest.mark.slow
def test_html_sweep_report_renders_in_a_headless_browser(two_by_two, work, chromium, tmp_path):
    sweep_id, cli = two_by_two
    report = tmp_path / "sweep.html"
    code, _, err = cli("bench", "sweep-report", sweep_id, "--format", "html", "--output", str(report))
    assert code == 0, err

    # the checks see a page that breaks the rules: they are not vacuous
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><img src="http://127.0.0.1:9/x.png"><script>console.error("boom")</script>')
    _, console, requests = load_in_browser(chromium, control, tmp_path)
    assert any("boom" in line for line in console) and requests == ["http://127.0.0.1:9/x.png"]

    dom, console, requests = load_in_browser(chromium, report, tmp_path)
    assert console == [] and requests == []
    check_page(dom)  # the charts and tables as the browser built them

    shot = tmp_path / "shot.png"
    taken = browser(chromium, tmp_path / "profile-shot", f"--screenshot={shot}", report.as_uri())
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    width, height, bpp, pixels = png_pixels(shot.read_bytes())
    colours = {tuple(pixels[i:i + 3]) for i in range(0, len(pixels), bpp)}
    assert (0x1F, 0x77, 0xB4) in colours and (0xD6, 0x27, 0x28) in colours  # the first two series, drawn
    assert len({tuple(pixels[i:i + 3]) for i in range(0, len(pixels), bpp * 11)}) > 20


def test_the_documented_sweep_file_is_a_valid_sweep_file():
    """The example in docs/guide/benchmarks.md loads as it is printed (every key it shows exists)."""
    import re
    import tomllib

    from rlm_bench.sweep.file import SweepFile, expand

    page = (Path(__file__).resolve().parents[3] / "docs" / "guide" / "benchmarks.md").read_text()
    block = re.search(r"## Sweeps.*?```toml\n(.*?)```", page, re.S).group(1)
    spec = SweepFile.model_validate(tomllib.loads(block))
    points = expand(spec)
    assert len(points) == 1 * 2 * 2 * 1 * 2 * 3  # presets × models × frameworks × sandboxes × instructions × repeat
    haiku = [p for p in points if p.model == "anthropic:claude-3-5-haiku-latest"]
    assert all(p.run["timeout"] == 600 for p in haiku) and all(p.run["timeout"] == 300 for p in points
                                                                if p not in haiku)


ATTACKS = [  # (what the file adds to a plain grid, what the refusal names)
    ({"extra_tables": '[[override]]\nmodel = "MODEL"\nrun = { base_url = "http://attacker.invalid/v1" }\n'},
     "run.base_url"),
    ({"run": 'timeout = 60\nbase_url = "http://attacker.invalid/v1"'}, "[run] base_url"),
    ({"run": "timeout = 60\nallow_any_workdir = true"}, "allow_any_workdir"),
    ({"extra_tables": '[bench.ray]\nruntime_env = { pip = ["evil-package"] }\n'}, "runtime_env"),
    ({"extra_tables": '[bench.ray]\naddress = "ray://203.0.113.9:10001"\n'}, "[bench.ray] address"),
]


@pytest.mark.parametrize("parts, named", ATTACKS)
def test_an_untrusted_sweep_file_that_moves_keys_or_weakens_isolation_is_refused(cli, work, monkeypatch, parts,
                                                                                 named):
    """A sweep file that came with a cloned project may not send the user's key elsewhere, run model code outside
    a boundary or read files outside its folder: refused naming each ask, nothing runs, until the user trusts it."""
    monkeypatch.delenv("RLM_TRUST_CONFIG")
    model = setup(work)
    body = grid(model, run=parts.get("run", "timeout = 60")) + parts.get("extra_tables", "").replace("MODEL", model)
    path = sweep_file(work, body)
    code, _, err = cli("bench", "sweep", str(path), "-q")
    assert code == 2 and "is not trusted" in err and named in err, err
    assert "rlm config trust" in err
    assert not (work / ".rlm" / "benchmarks").exists() or not any((work / ".rlm" / "benchmarks").iterdir())
    trusted, _, err = cli("config", "trust", str(path))
    assert trusted == 0, err
    code, _, err = cli("bench", "sweep", str(path), "--dry-run")
    assert code == 0, err  # trusted as it is now: it plans


def test_an_untrusted_sweep_file_may_not_read_files_outside_its_folder(cli, work, monkeypatch, tmp_path):
    monkeypatch.delenv("RLM_TRUST_CONFIG")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("a private note")
    model = setup(work)
    text = grid(model).replace("[sweep]\n", f'[sweep]\ninstructions = ["@{secret}"]\n', 1)
    code, _, err = cli("bench", "sweep", str(sweep_file(work, text)), "-q")
    assert code == 2 and "instructions" in err and "a private note" not in err, err


def test_instructions_naming_a_fifo_are_refused_not_waited_for(cli, work):
    """``@notes`` that is a FIFO (planted beside the sweep file) would block the sweep forever at its first read."""
    import os
    import threading

    os.mkfifo(work / "notes")
    model = setup(work)
    text = grid(model).replace("[sweep]\n", '[sweep]\ninstructions = ["@notes"]\n', 1)
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(cli("bench", "sweep", str(sweep_file(work, text)), "-q")),
                              daemon=True)
    worker.start()
    worker.join(60)
    assert outcome, "the sweep waited on the FIFO"
    code, _, err = outcome[0]
    assert code == 2 and "instructions @notes: cannot read" in err, err


def test_an_untrusted_sweep_file_may_not_name_a_model_file_outside_in_the_slash_spelling(cli, work, monkeypatch,
                                                                                         tmp_path):
    """``scripted/PATH`` (the provider/name spelling the host also accepts) is screened as ``scripted:PATH`` is."""
    monkeypatch.delenv("RLM_TRUST_CONFIG")
    setup(work)
    planted = write_script(tmp_path / "outside.json", [{"match": ".", "text": "FINAL(42)"}])
    code, _, err = cli("bench", "sweep", str(sweep_file(work, grid(f"scripted/{planted}"))), "-q")
    assert code == 2 and "is not trusted" in err and "models = " in err and "reads a file outside" in err, err
    assert not (work / ".rlm" / "benchmarks").exists()


def test_a_base_url_password_is_never_written_or_printed_in_clear(cli, work, priced_model, monkeypatch):
    """``http://user:PASSWORD@host/v1`` is stored and printed as ``http://user:***@host/v1``; a resume reads the
    password again from the sweep file (a changed file is refused)."""
    from rlm_bench.sweep import driver

    given: list[str] = []  # the base URL each case was run with
    real_run_item = driver.run_item
    monkeypatch.setattr(driver, "run_item", lambda item, *rest: given.append(item.run["base_url"])
                        or real_run_item(item, *rest))
    setup(work)
    url = priced_model.url.replace("http://", "http://user:s3cret-passw0rd@")
    path = sweep_file(work, grid("openai:fake", run=f'timeout = 60\nbase_url = "{url}"'))
    code, out, err = cli("bench", "sweep", str(path), "-q", "--json")
    assert code == 0, err
    masked = priced_model.url.replace("http://", "http://user:***@")
    assert "s3cret-passw0rd" not in out + err and json.loads(out)["spec"]["run"]["base_url"] == masked
    written = [p for p in (work / ".rlm").rglob("*") if p.is_file()]
    assert written and not [p for p in written if "s3cret-passw0rd" in p.read_text(errors="replace")]
    record = SweepStore(work / ".rlm").load(json.loads(out)["sweep_id"])
    assert record.points[0].point["run"]["base_url"] == masked
    sent = len(priced_model.requests)

    BenchStore(work / ".rlm").case_path(record.points[0].benchmark_id, "b").unlink()
    code, out, err = cli("bench", "sweep", "--resume", record.sweep_id, "-q", "--json")
    assert code == 0 and json.loads(out)["status"] == "finished", err
    assert len(priced_model.requests) == sent + 1 and "s3cret-passw0rd" not in out + err
    assert given == [url, url, url]  # the resumed case too: the password read again from the sweep file

    BenchStore(work / ".rlm").case_path(record.points[0].benchmark_id, "b").unlink()
    path.write_text(path.read_text().replace("timeout = 60", "timeout = 61"))
    code, _, err = cli("bench", "sweep", "--resume", record.sweep_id, "-q")
    assert code == 2 and "says something else now" in err and len(priced_model.requests) == sent + 1, err


def test_the_progress_display_shows_node_names_and_errors_as_text(capsys):
    """Text from a run or a node reaches the terminal as text: a node's name in brackets is no rich markup, and a
    failed case's error (a model's words: ``[/bold]``, an escape sequence) is a notice line with its controls shown,
    never a crash of the display or a sequence the terminal acts on."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from rlm_bench.sweep.command import _Display
    from rlm_bench.sweep.driver import Progress

    display = _Display("sweep_x", "local")
    screen = io.StringIO()
    display.bar.live.console = Console(file=screen, force_terminal=True, width=200)  # a terminal: a live bar
    progress = Progress(total=2, done=1, per_node={"myhost": 1})
    failed = SimpleNamespace(status="error", case_id="a", error="model said [/bold] \x1b[2J")
    display.update("case", progress, failed)
    display.stop()
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue()) + capsys.readouterr().err  # the bar's own codes
    assert "[myhost: " in shown and "✗ a: model said [/bold] ␛[2J" in shown, shown
