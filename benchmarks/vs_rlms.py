"""Our engine beside the authors' ``rlms`` package and a bare loop of HTTP calls, against one loopback model server.

Every contender talks to the same OpenAI-compatible server on 127.0.0.1 (``loopback_llm.py``), which scripts the
root model's turns, answers sub-calls with a short text after a chosen latency, and timestamps every request:

- rlm (monty), rlm (process): the real CLI, ``rlm run --model vllm:… --base-url … --sandbox S --json --quiet``;
- rlms: ``rlms==0.1.3`` (import name ``rlm``) in a virtualenv of its own (``isolated_env.py``), driven by a small
  script: ``RLM(backend="openai", environment="local", …).completion(prompt=context, root_prompt=question)``;
- bare loop: httpx (the transport under the openai SDK) making the same root calls and the same concurrent
  sub-calls, nothing else: the floor. (The SDK's ``chat.completions.create`` is not used: it re-validates the
  whole message list on every call, a cost that grows with the history; our provider posts the body directly.)

Scenarios (``--scenarios``):

1. batched sub-calls: turn 1 calls ``llm_query_batched`` with 16 prompts, each answered in 200 ms; the figure is
   the server's time from the first sub-call's arrival to the last one's answer, over the ideal 0.20 s;
2. step cost: 20 turns of ``x = 1`` then the answer, no model latency; the figure is the median time between the
   server finishing answer N and receiving request N+1, with a 1 KB and a ``--context-mb`` context;
3. peak RSS of the whole process tree (sampled from /proc every 20 ms) in a 3-turn run on a ``--context-mb`` context;
4. wall time of that 3-turn S-NIAH run (find the needle, print it, answer), and its in-process part (rlm's JSON
   ``duration_s``, rlms' ``completion()``), split into: before the run (interpreter, imports; the context file
   read, for rlms and the bare loop), loading (run start to the first root request: context into the sandbox,
   model client ready), after the last answer (the last root answer to the process's exit).
5. the chunking policy (what the paper's models do on S-NIAH, issue 37's table): turn 1 prints ``type(context)``
   and ``len(context)``; turn 2 cuts the context into 200,000-character chunks (100 more each, so the needle
   is whole in one of them), searches them, and asks the
   sub-model (``llm_query``) about the hit; turn 3 answers. Figures: the engine time from turn 1 to turn 2 (the
   server finishing root answer 1 to receiving root request 2: running turn 1's code, the step's bookkeeping,
   the next prompt) with a ``--chunk-small-mb`` and a ``--context-mb`` context, and the peak RSS of the process
   tree on the ``--context-mb`` run (a separate run: sampling /proc costs CPU that would blur the gap).

Figures (before and after, with where the time and memory go): docs/guide/performance.md.

Latencies and step gaps are read from the server's clock only; the contenders' own stamps (perf_counter is
CLOCK_MONOTONIC, shared by all processes; rlm's trajectory ``ts`` is mapped from the wall clock) only split wall.

    .venv/bin/python benchmarks/vs_rlms.py [--scenarios 1,2,3,4,5] [--sandboxes monty,process] [--repeat 1]
        [--context-mb 100] [--chunk-small-mb 1] [--no-rlms] [--batch-concurrency N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isolated_env import benchmark_python  # noqa: E402
from loopback_llm import ROOT_MODEL, SUB_MODEL, LoopbackLLM  # noqa: E402

RLM_CLI = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "rlm"
BARE_PYTHON = RLM_CLI.with_name("python")  # the project's interpreter has httpx, the openai SDK's transport
RLMS_REQUIREMENTS = ["rlms==0.1.3"]
QUESTION = "What is the magic number?"
NEEDLE = "The magic number is 4217."
BATCH, BATCH_LATENCY = 16, 0.2
STEP_TURNS = 20
CHUNK = 200_000  # characters per chunk in the chunking policy
CHUNKING_TURN_1 = "print(type(context))\nprint(len(context))"
CHUNKING_TURN_2 = f"""chunk_size = {CHUNK}
chunks = [context[i:i + chunk_size + 100] for i in range(0, len(context), chunk_size)]
hit = ''
for chunk in chunks:
    if 'The magic number is' in chunk:
        hit = chunk
        break
at = hit.find('The magic number is')
needle = hit[at:at + 40]
reply = llm_query('What is the magic number in this text? ' + hit[max(0, at - 2000):at + 2000])
print(needle, reply)"""
RUN_TIMEOUT = 600

# -- the contenders' command lines ---------------------------------------------------------------------------------

RLMS_DRIVER = """
import json, sys, time
started = time.perf_counter()
from rlm import RLM
args = json.loads(sys.argv[1])
imported = time.perf_counter()
context = open(args["context"]).read()
read = time.perf_counter()
backend = {"base_url": args["base_url"], "api_key": "sk-loopback"}
rlm = RLM(backend="openai", backend_kwargs={**backend, "model_name": args["root"]}, environment="local",
          other_backends=["openai"], other_backend_kwargs=[{**backend, "model_name": args["sub"]}],
          max_iterations=args["max_iterations"])
called = time.perf_counter()
result = rlm.completion(prompt=context, root_prompt=args["question"])
done = time.perf_counter()
print(json.dumps({"answer": str(result.response), "started": started, "imported": imported, "read": read,
                  "called": called, "done": done}))
"""

BARE_DRIVER = """
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
started = time.perf_counter()
import httpx
args = json.loads(sys.argv[1])
context = open(args["context"]).read()
client = httpx.Client(base_url=args["base_url"], headers={"Authorization": "Bearer sk-loopback"},
                      limits=httpx.Limits(max_connections=64))
def ask(model, messages):
    reply = client.post("/chat/completions", json={"model": model, "messages": messages})
    return reply.raise_for_status().json()["choices"][0]["message"]["content"]
messages = [{"role": "system", "content": "You answer with code."},
            {"role": "user", "content": f"context: str of {len(context)} chars. " + args["question"]}]
called = time.perf_counter()
for turn in range(args["turns"]):
    reply = ask(args["root"], messages)
    output = ""
    if turn == 0 and args["batch"]:
        prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(args["batch"])]
        with ThreadPoolExecutor(args["batch"]) as pool:
            output = " ".join(pool.map(lambda m: ask(args["sub"], m), prompts))
    if turn == 0 and args["needle"]:
        at = context.find(args["needle"])
        output = context[at:at + 40]
    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": output or "No output"}]
done = time.perf_counter()
print(json.dumps({"answer": output, "started": started, "called": called, "done": done}))
"""


@dataclass
class Case:
    """One scripted run: the code of the root turns before the answer, the variable answered, the context."""

    name: str
    code: list[str]
    final: str
    context: Path
    expect: str
    sub_latency: float = 0.0
    batch: int = 0  # sub-calls the bare loop makes after turn 1
    needle: bool = False  # the bare loop searches the context after turn 1

    def turns(self, dialect: str) -> list[str]:
        """The root model's replies, in the answering convention of ``dialect`` ("rlm", "rlms", "bare")."""
        blocks = [f"```repl\n{code}\n```" for code in self.code]
        if dialect == "rlms":  # rlms 0.1.3 ends a run when the REPL sets answer["ready"]
            return blocks + [f"```repl\nanswer['content'] = str({self.final})\nanswer['ready'] = True\n```"]
        return blocks + [f"FINAL_VAR({self.final})"]


@dataclass
class Outcome:
    """What one run gave: its answer, launch and exit times (perf_counter, the server's clock), peak tree RSS,
    and whatever the contender reported about itself."""

    answer: str
    launched: float
    exited: float
    peak_mb: float = 0.0
    report: dict = field(default_factory=dict)

    @property
    def wall(self) -> float:
        return self.exited - self.launched


@dataclass
class Contender:
    label: str
    dialect: str
    command: Callable[[Case, LoopbackLLM], tuple[list[str], dict[str, str]]]
    parse: Callable[[str], tuple[str, dict]]


def clean_environ(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_"))}
    return {**env, "RLM_HOME": str(workdir / "rlm-home")}


def rlm_contender(sandbox: str, workdir: Path, batch_concurrency: int | None) -> Contender:
    def command(case: Case, llm: LoopbackLLM) -> tuple[list[str], dict[str, str]]:
        argv = [str(RLM_CLI), "run", QUESTION, "--context", str(case.context), "--model", f"vllm:{ROOT_MODEL}",
                "--sub-model", f"vllm:{SUB_MODEL}", "--base-url", llm.base_url, "--sandbox", sandbox,
                "--max-steps", str(len(case.code) + 5), "--json", "--quiet"]
        env = clean_environ(workdir)
        if batch_concurrency:
            env["RLM_ENVIRONMENT__PURE_RLM__BATCH_CONCURRENCY"] = str(batch_concurrency)
        return argv, env

    def parse(stdout: str) -> tuple[str, dict]:
        result = json.loads(stdout)
        if not result.get("completed"):
            raise RuntimeError(f"run not completed: {result.get('termination_reason')}: {result.get('error')}")
        return str(result.get("final_response")), result

    return Contender(f"rlm ({sandbox})", "rlm", command, parse)


def driver_contender(label: str, dialect: str, python: Path, driver: str, workdir: Path) -> Contender:
    def command(case: Case, llm: LoopbackLLM) -> tuple[list[str], dict[str, str]]:
        args = {"base_url": llm.base_url, "root": ROOT_MODEL, "sub": SUB_MODEL, "context": str(case.context),
                "question": QUESTION, "max_iterations": len(case.code) + 5, "turns": len(case.code) + 1,
                "batch": case.batch, "needle": NEEDLE[:19] if case.needle else ""}
        return [str(python), "-c", driver, json.dumps(args)], clean_environ(workdir)

    def parse(stdout: str) -> tuple[str, dict]:
        report = json.loads(stdout.strip().splitlines()[-1])
        return report["answer"], report

    return Contender(label, dialect, command, parse)


# -- running one contender on one case -----------------------------------------------------------------------------


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and all its descendants, MB (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    parents[int(entry.name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    pages = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as f:
                pages += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def sample_peak(process: subprocess.Popen, peak: list[float]) -> None:
    while process.poll() is None:
        peak[0] = max(peak[0], tree_rss_mb(process.pid))
        time.sleep(0.02)


def run(contender: Contender, case: Case, llm: LoopbackLLM, workdir: Path, *, memory: bool = False) -> Outcome:
    """Script the server for ``case``, run the contender to completion, check its answer."""
    llm.script(case.turns(contender.dialect), root_latency=0.0, sub_latency=case.sub_latency)
    argv, env = contender.command(case, llm)
    peak = [0.0]
    launched = time.perf_counter()
    process = subprocess.Popen(argv, env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    sampler = threading.Thread(target=sample_peak, args=(process, peak), daemon=True)
    if memory:
        sampler.start()
    stdout, stderr = process.communicate(timeout=RUN_TIMEOUT)
    exited = time.perf_counter()
    if memory:
        sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"{contender.label} exited {process.returncode}: {stderr.strip()[-2000:]}")
    answer, report = contender.parse(stdout)
    if contender.dialect != "bare" and case.expect not in answer:  # the bare loop runs no code: nothing to check
        raise RuntimeError(f"{contender.label}: wrong answer {answer[:200]!r} (expected {case.expect!r})")
    return Outcome(answer, launched, exited, peak[0], report)


# -- the scenarios' figures: each reads one run (its outcome and the server's records) ------------------------

Figure = Callable[[Contender, Outcome, LoopbackLLM], float]
CLOCK_OFFSET = time.time() - time.perf_counter()  # maps the trajectory's wall-clock stamps onto perf_counter


def batch_window(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """Seconds from the first sub-call's arrival to the last sub-call's answer, at the server."""
    subs = llm.of_kind("sub")
    if len(subs) != BATCH:
        raise RuntimeError(f"{contender.label}: {len(subs)} sub-calls reached the server, expected {BATCH}")
    return max(r.finish for r in subs) - min(r.arrival for r in subs)


def first_gap_ms(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """Ms between the server finishing root answer 1 and receiving root request 2 (turn 1's code and bookkeeping)."""
    roots = llm.of_kind("root")
    return (roots[1].arrival - roots[0].finish) * 1000


def median_gap_ms(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """Median ms between the server finishing a root answer and receiving the next root request."""
    roots = llm.of_kind("root")
    return statistics.median((b.arrival - a.finish) * 1000 for a, b in zip(roots, roots[1:]))


def peak_mb(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    return outcome.peak_mb


def total_wall(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    return outcome.wall


def run_start(outcome: Outcome) -> float:
    """When the run itself began: the trajectory's ``run_start`` event for rlm (after the interpreter's start,
    the imports and the settings), the ``completion()`` call for rlms, the first call for the bare loop."""
    report = outcome.report
    if "trajectory_path" in report:
        with open(report["trajectory_path"]) as f:
            return json.loads(f.readline())["ts"] - CLOCK_OFFSET
    return report["called"]


def before_run(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """Process launch to the run's start (for rlms and the bare loop this includes reading the context file)."""
    return run_start(outcome) - outcome.launched


def in_process(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """The run itself: the JSON's ``duration_s`` for rlm, ``completion()`` for rlms, the loop for the bare loop."""
    report = outcome.report
    return report["duration_s"] if "duration_s" in report else report["done"] - report["called"]


def loading(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """The run's start to the first root request: context in, sandbox up, first prompt built, client ready."""
    return llm.of_kind("root")[0].arrival - run_start(outcome)


def after_last_answer(contender: Contender, outcome: Outcome, llm: LoopbackLLM) -> float:
    """The server's last root answer to the process's exit: ending the run, writing results, shutting down."""
    return outcome.exited - llm.of_kind("root")[-1].finish


@dataclass
class Row:
    """A line of the final table: a figure, its target and the value each contender got."""

    label: str
    target: str
    figure: Figure
    unit: str
    results: dict[str, str] = field(default_factory=dict)

    def show(self, value: float) -> str:
        shown = f"{value:.1f}" if self.unit in ("ms", "MB") else f"{value:.3f}"
        return shown + (f" ({value / BATCH_LATENCY:.2f}x)" if self.figure is batch_window else "")


@dataclass
class Measure:
    """A case run by every contender (``repeat`` times), and the rows read from those runs."""

    title: str
    case: Case
    rows: list[Row]
    memory: bool = False  # sample the process tree's RSS
    details: dict[str, Figure] = field(default_factory=dict)  # printed under the measure, not in the table


def scenarios(selected: set[int], small: Path, big: Path, mb: int, chunk_small: Path, chunk_mb: int) -> list[Measure]:
    prompts = ", ".join(repr(f"question {i}") for i in range(BATCH))
    batched = Case("batched", [f"answers = llm_query_batched([{prompts}])\nsummary = ' '.join(answers)"],
                   "summary", small, "ok", sub_latency=BATCH_LATENCY, batch=BATCH)
    steps = lambda path: Case("steps", ["x = 1"] * STEP_TURNS, "x", path, "1")  # noqa: E731
    niah = Case("s-niah", ["idx = context.find('The magic number is')\nneedle = context[idx:idx + 40]",
                           "print(needle)"], "needle", big, "4217", needle=True)
    chunking = lambda path: Case("chunking", [CHUNKING_TURN_1, CHUNKING_TURN_2], "needle", path, "4217",  # noqa: E731
                                 needle=True)
    ideal = f"<= {1.1 * BATCH_LATENCY:.2f} (1.1x)"
    measures = {
        1: [Measure(f"1. {BATCH} batched sub-calls of {BATCH_LATENCY * 1000:.0f} ms", batched,
                    [Row("1. batched sub-calls: window s", ideal, batch_window, "s")])],
        2: [Measure(f"2. {STEP_TURNS} trivial steps, {label} context", steps(path),
                    [Row(f"2. step gap, {label}: median ms", "<= 3", median_gap_ms, "ms")])
            for label, path in (("1 KB", small), (f"{mb} MB", big))],
        3: [Measure(f"3. 3-turn S-NIAH, {mb} MB context, RSS sampled every 20 ms", niah,
                    [Row(f"3. peak RSS of the tree, {mb} MB: MB", f"<= {2.5 * mb:.0f} (2.5x)", peak_mb, "MB")],
                    memory=True)],
        4: [Measure(f"4. 3-turn S-NIAH, {mb} MB context", niah,
                    [Row(f"4. S-NIAH {mb} MB: wall s", "-", total_wall, "s"),
                     Row(f"4. S-NIAH {mb} MB: in-process s", "<= 0.8", in_process, "s")],
                    details={"before run": before_run, "loading": loading, "after last answer": after_last_answer})],
        5: [*(Measure(f"5. chunking policy, {label} context: turn 1 type/len, turn 2 chunks + llm_query",
                      chunking(path),
                      [Row(f"5. chunking, {label}: engine ms turn 1 -> 2", "<= 3", first_gap_ms, "ms")])
              for label, path in ((f"{chunk_mb} MB", chunk_small), (f"{mb} MB", big))),
            Measure(f"5. chunking policy, {mb} MB context, RSS sampled every 20 ms", chunking(big),
                    [Row(f"5. chunking, {mb} MB: peak RSS of the tree MB", "<= 0.8x rlms", peak_mb, "MB")],
                    memory=True)],
    }
    return [m for number in sorted(selected) for m in measures.get(number, [])]


# -- main ----------------------------------------------------------------------------------------------------------


def haystack(path: Path, chars: int) -> Path:
    filler = "the quick brown fox jumps over the lazy dog. " * 1000
    body = (filler * (chars // len(filler) + 1))[: max(0, chars - len(NEEDLE))]
    middle = len(body) // 2
    path.write_text(body[:middle] + NEEDLE + body[middle:])
    return path


def run_measure(measure: Measure, contenders: list[Contender], llm: LoopbackLLM, workdir: Path,
                repeat: int) -> None:
    """Run the measure's case with every contender, fill its rows, print a line per contender."""
    print(f"\n{measure.title}")
    figures = {row.label: row.figure for row in measure.rows} | measure.details
    for contender in contenders:
        values: dict[str, list[float]] = {name: [] for name in figures}
        try:
            for _ in range(repeat):
                outcome = run(contender, measure.case, llm, workdir, memory=measure.memory)
                for name, figure in figures.items():
                    values[name].append(figure(contender, outcome, llm))
        except Exception as exc:  # one contender failing must not hide the others' figures
            for row in measure.rows:
                row.results[contender.label] = "failed"
            print(f"  {contender.label:<15} FAILED: {exc}")
            continue
        medians = {name: statistics.median(v) for name, v in values.items()}
        shown = []
        for row in measure.rows:
            row.results[contender.label] = row.show(medians[row.label])
            shown.append(f"{row.results[contender.label]} {row.unit}")
        shown += [f"{name} {medians[name]:.3f} s" for name in measure.details]
        print(f"  {contender.label:<15} " + " | ".join(shown))


def print_table(rows: list[Row], contenders: list[Contender]) -> None:
    labels = [c.label for c in contenders]
    width = max(len(row.label) for row in rows) + 2
    print(f"\n{'measure':<{width}}{'target':>16}" + "".join(f"{label:>16}" for label in labels))
    for row in rows:
        cells = "".join(f"{row.results.get(label, '-'):>16}" for label in labels)
        print(f"{row.label:<{width}}{row.target:>16}{cells}")


def build_contenders(args: argparse.Namespace, workdir: Path) -> list[Contender]:
    contenders = [rlm_contender(s, workdir, args.batch_concurrency) for s in args.sandboxes.split(",") if s]
    if not args.no_rlms:
        try:
            python = benchmark_python("rlms", RLMS_REQUIREMENTS)
            contenders.append(driver_contender("rlms", "rlms", python, RLMS_DRIVER, workdir))
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"rlms skipped: its environment could not be built ({exc})")
    contenders.append(driver_contender("bare loop", "bare", BARE_PYTHON, BARE_DRIVER, workdir))
    return contenders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="1,2,3,4,5")
    parser.add_argument("--sandboxes", default="monty,process")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--context-mb", type=int, default=100)
    parser.add_argument("--chunk-small-mb", type=int, default=1, help="the small context of the chunking policy")
    parser.add_argument("--no-rlms", action="store_true", help="skip rlms (when its environment cannot be built)")
    parser.add_argument("--batch-concurrency", type=int, default=None,
                        help="[environment.pure_rlm] batch_concurrency for rlm (default: the engine's own)")
    args = parser.parse_args()
    selected = {int(s) for s in args.scenarios.split(",") if s}
    with tempfile.TemporaryDirectory(prefix="vs-rlms-") as tmp, LoopbackLLM() as llm:
        workdir = Path(tmp)
        small = haystack(workdir / "context-1kb.txt", 1_000)
        big = haystack(workdir / f"context-{args.context_mb}mb.txt", args.context_mb * 1_000_000)
        chunk_small = haystack(workdir / f"context-{args.chunk_small_mb}mb.txt", args.chunk_small_mb * 1_000_000)
        contenders = build_contenders(args, workdir)
        measures = scenarios(selected, small, big, args.context_mb, chunk_small, args.chunk_small_mb)
        print(f"loopback server {llm.base_url}; contexts {small.stat().st_size} B and "
              f"{big.stat().st_size / 1e6:.0f} MB; {args.repeat} run(s) each, median shown")
        for measure in measures:
            run_measure(measure, contenders, llm, workdir, args.repeat)
        print_table([row for measure in measures for row in measure.rows], contenders)


if __name__ == "__main__":
    main()
