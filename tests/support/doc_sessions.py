"""The sessions behind the documented commands (``tests/test_docs_commands.py``): for each page whose commands run
in the docs check, the files its session uses and the variables it sets, so its commands run as printed, in page
order, in a folder of the page's own.

A file is the page's own where the page shows it whole (``FromPage``: the body of its fenced block that starts
with a given text; ``FromCat``: what follows ``$ cat NAME`` in a session), else written here to what the page
says of it (a script whose replies produce the session the page shows, a context of the size it names).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```+(\w*)[^\n]*\n(.*?)^```+\s*$", re.S | re.M)


@dataclass(frozen=True)
class FromPage:
    """The body of the page's fenced block whose body starts with ``start`` (the ``nth`` such, from 0): the page's
    own file."""

    start: str
    nth: int = 0

    def text(self, page: str) -> str:
        bodies = [body for _, body in FENCE.findall(page) if body.startswith(self.start)]
        if len(bodies) <= self.nth:
            raise LookupError(f"the page has no fenced block {self.nth + 1} starting with {self.start!r}")
        return bodies[self.nth]


@dataclass(frozen=True)
class FromEcho:
    """What ``$ echo '…' > NAME`` writes in one of the page's sessions."""

    name: str

    def text(self, page: str) -> str:
        found = re.search(rf"^\$ echo '(.*)' > {re.escape(self.name)}$", page, re.M)
        if found is None:
            raise LookupError(f"the page shows no `$ echo '…' > {self.name}`")
        return found.group(1) + "\n"


@dataclass(frozen=True)
class FromCat:
    """The lines that follow ``$ cat NAME`` in one of the page's sessions, up to its next ``$`` line."""

    name: str

    def text(self, page: str) -> str:
        found = re.search(rf"^\$ cat {re.escape(self.name)}\n(.*?)(?=^\$ |^```)", page, re.S | re.M)
        if found is None:
            raise LookupError(f"the page shows no `$ cat {self.name}`")
        return found.group(1)


Content = Union[str, bytes, FromPage, FromCat, FromEcho, Callable[[Path], None]]
#: a server the page's session talks to: started with the page's folder, it returns the variables pointing at it
#: and the call that stops it
Server = Callable[[Path], tuple[dict[str, str], Callable[[], None]]]


@dataclass
class Session:
    """A page's session: ``files`` (name → content, or a writer called with the path), ``env`` (what the page
    exports before its commands) and ``servers`` (loopback stand-ins for the backends the page talks to)."""

    files: dict[str, Content] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    servers: tuple[Server, ...] = ()

    def prepare(self, folder: Path, page: str) -> None:
        write_files(self.files, folder, page)


def write_files(files: dict[str, Content], folder: Path, page: str) -> None:
    """Write ``files`` into ``folder`` (a page's own file taken from ``page``)."""
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, (FromPage, FromCat, FromEcho)):
            path.write_text(content.text(page), encoding="utf-8")
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            content(path)


def repl(code: str) -> str:
    """A pure_rlm reply that runs ``code``."""
    return f"```repl\n{code}\n```"


def script(replies: list[Any], rules: list[dict[str, Any]] = ()) -> str:
    """A ``scripted:`` file: replies in order, rules matched against the last user message."""
    return json.dumps({"responses": replies, "rules": list(rules)}, indent=1)


def copy_of(relative: str) -> Callable[[Path], None]:
    """A file of the repository, copied (``samples/station_log.txt``)."""
    return lambda path: shutil.copyfile(ROOT / relative, path)


def haystack(chars: int, needle: str = "The magic number is 4217.") -> Callable[[Path], None]:
    """``chars`` characters of filler words with ``needle`` in the middle, as the README's hay.txt."""

    def write(path: Path) -> None:
        words = ("beta", "alpha", "gamma", "delta")
        filler = " ".join(words[(i * 7 + i // 3) % 4] for i in range(chars // 5 + 10))
        half = (chars - len(needle)) // 2
        path.write_text(filler[:half] + needle + filler[half:chars - len(needle)], encoding="utf-8")

    return write


#: The README's magic number: 1.1 MB of words, three root turns, the sub-model reading the number out.
MAGIC = {
    "hay.txt": haystack(1_149_845),
    "script.json": script([
        repl("print(len(context))\nprint(context[:50])"),
        repl("idx = context.find('magic number')\nsnippet = context[idx-20: idx+60]\n"
             "answer = llm_query('Extract the magic number from: ' + snippet)\nprint(answer)"),
        "FINAL_VAR(answer)",
    ]),
    "sub.json": script([], [{"match": "Extract the magic number", "text": "4217"}]),
}


def report_pdf(path: Path) -> None:
    """A 500-page report with the thermistor's incident on page 312 (rlm-context-documents' writer)."""
    from rlm_context_documents.testing import write_pdf

    write_pdf(path, 500, fact="Thermistor T4 at Halley failed at -41.7 C on day 117 and was replaced on day 119.",
              fact_page=312)


#: A report read as one document per page: find the page, ask the sub-model about it.
REPORT = {
    "report.pdf": report_pdf,
    "script.json": script([
        repl("print(len(context), list_files()[:2])\nhits = [n for n in list_files() if 'Thermistor T4' in "
             "load_file(n)]\nprint(hits)"),
        repl("answer = llm_query('What happened to thermistor T4? ' + load_file(hits[0])) + ' (' + hits[0] + ')'\n"
             "print(answer)"),
        "FINAL_VAR(answer)",
    ]),
    "sub.json": script([], [{"match": "thermistor T4", "text": "Thermistor T4 at Halley failed at -41.7 C on day 117 "
                                                               "and was replaced on day 119."}]),
}

STATION = {"samples/station_log.txt": copy_of("samples/station_log.txt")}
INCIDENT = {"type": "object", "properties": {"sensor": {"type": "string"}, "reading": {"type": "number"}},
            "required": ["sensor", "reading"]}
FIND_INCIDENT = repl("i = context.find('INCIDENT', context.find('Day 117.'))\nprint(context[i:i + 120])")

TOOLS = script([repl("print(lookup('bolt'), lookup('nut'), lookup('washer'))"), "FINAL(nuts: none left in stock)"])
TYPED = script([repl("import re\ni = context.find('INCIDENT', context.find('Day 117.'))\nline = context[i:i + 160]\n"
                     "m = re.search(r'thermistor (\\w+) failed .*?reading (-?[\\d.]+)', line)\n"
                     "incident = {'sensor': m.group(1), 'reading': float(m.group(2))}\nprint(incident)"),
                "FINAL_VAR(incident)"])


def otlp_receiver(ingestion: str = "") -> Server:
    """A loopback OTLP/HTTP receiver (rlm-sink-otel's test server); ``ingestion``: also a Langfuse ingestion path
    answered 207, as the sink pages' sessions stand one in for a backend."""

    def start(folder: Path) -> tuple[dict[str, str], Callable[[], None]]:
        from rlm_sink_otel.testing import OTLPReceiver

        receiver = OTLPReceiver()
        if ingestion:
            receiver.respond(ingestion, 207, json={"successes": [], "errors": []})
        receiver.start()
        return {"RECEIVER_URL": receiver.url}, receiver.stop

    return start


def with_url(variable: str, server: Server) -> Server:
    """``server``, with its URL given to the page's commands as ``variable`` (LANGFUSE_BASE_URL…)."""

    def start(folder: Path) -> tuple[dict[str, str], Callable[[], None]]:
        env, stop = server(folder)
        return {variable: env["RECEIVER_URL"]}, stop

    return start


#: The station log's incident, found by code and read by a sub-model (the framework READMEs' sessions)
SUB_RULES = [{"match": "^Read this log line", "text": "The thermistor T4 failed; it read -41.7 C before failing."}]
WORDS = "The quick brown fox jumps over the lazy dog. " * 16 + "Here the notes end, thank you.\n"  # 150 words
COUNT_WORDS = script([repl("n = len(context.split())\nprint(n)"), "FINAL_VAR(n)"])
DSPY_NOTES = ("Meeting notes, 12 March.\nAttendees: Ana, Bo, Chen.\nBo will ship the parser fix on Friday.\n"
              "The launch code word is PAPAYA; do not share it.\nChen owns the release checklist.\n")


def dspy_reply(reasoning: str, code: str) -> str:
    return f"[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## code ## ]]\n```python\n{code}\n```\n\n[[ ## completed ## ]]"


DSPY_SCRIPT = script([
    dspy_reply("Look at the notes first: their size and the lines about the parser.",
               "print(len(context), 'characters')\nhits = [l for l in context.splitlines() if 'parser' in l]\n"
               "print(hits)"),
    dspy_reply("One line. Let the sub-model phrase who and when.",
               "who = llm_query('Who ships the parser fix, and when? Answer in five words. ' + hits[0])\nprint(who)"),
    dspy_reply("The sub-model answered.", "SUBMIT(who)"),
], [{"match": "^Who ships the parser fix", "text": "Bo, on Friday."}])
#: The framework READMEs' sessions with the user's function and a typed answer (stationtools.py, incident.json)
SPARES_INCIDENT = {"type": "object", "properties": {"sensor": {"type": "string"}, "reading": {"type": "number"},
                                                    "spares_left": {"type": "integer"}},
                   "required": ["sensor", "reading", "spares_left"]}
TOOL_FILES = {"stationtools.py": FromPage("# stationtools.py"), "incident.json": json.dumps(SPARES_INCIDENT)}
DSPY_TOOLS_SCRIPT = script([
    dspy_reply("Find day 117's incident, then ask the station's records for spares.",
               "day = context[context.find('Day 117.'):context.find('Day 118.')]\n"
               "print([l for l in day.splitlines() if l.startswith('INCIDENT')])\ntry:\n"
               "    print(spares('thermistor T4'))\nexcept Exception as exc:\n    print('no such part:', exc)\n"
               "print('T4 spares:', spares('T4'))"),
    dspy_reply("T4 failed at -41.7 C.", "SUBMIT(answer={'sensor': 'T4', 'reading': -41.7})"),
    dspy_reply("Add the spares.", "SUBMIT(answer={'sensor': 'T4', 'reading': -41.7, 'spares_left': spares('T4')})"),
])
SMOKE = [{"match": "How many characters", "text": repl("FINAL(len(context))")},
         {"match": "first word", "text": repl("FINAL(context.split()[0])")},
         {"match": "lantern", "text": repl("import re\nFINAL(len(re.findall(r'\\blantern\\b', context, re.I)))")}]
WORSE = [{**SMOKE[0], "text": repl("FINAL(len(context) + 1)")}, *SMOKE[1:]]
TEMPLATE_QA = [
    {"match": "Which valve", "text": repl("import re\nFINAL(re.search(r'valve (V-\\d+) replaced', context).group(1))")},
    {"match": "How many inspections", "text": repl("FINAL(context.count('inspected'))")},
    {"match": "What pressure", "text": repl("import re\nFINAL(float(re.search(r'P-2 inspected, pressure ([\\d.]+)', "
                                            "context).group(1)))")},
]
TRACES_SCRIPT = script([
    json.dumps({"action": "count_traces", "has_errors": True}),
    json.dumps({"action": "query_traces", "has_errors": True, "agent": "researcher", "limit": 3}),
    json.dumps({"action": "search_trace", "trace_id": "6513270e269e0d37f2a74de452e6b438", "pattern": "timeout"}),
    json.dumps({"action": "count_traces", "has_errors": True, "agent": "support"}),
    json.dumps({"action": "export_evidence_corpus", "directory": "web-search-timeouts", "has_errors": True,
                "agent": "researcher"}),
    json.dumps({"action": "final", "final_response": "Systemic: the researcher agent's web_search tool times out."}),
])
TRACES_REPL = script([repl(
    'errors = query_traces(has_errors=True, agent="researcher", limit=50)\n'
    'ids = [t["trace_id"] for t in errors["traces"]]\nhits = [search_trace(i, "timeout")["match_count"] for i in ids]\n'
    'print(context["traces"], "traces;", len(ids), "researcher error traces;", sum(hits), '
    '"with a web_search timeout")'),
    "FINAL(web_search times out in 10 of 30 researcher traces)"])


def generated_traces(path: Path) -> None:
    """The traces README's demo file, as ``rlm traces generate`` writes it."""
    from rlm_env_traces.generate import generate

    generate(path)


def document(kind: str) -> Callable[[Path], None]:
    """A document the documents README's session reads: written by rlm-context-documents' own test writers."""

    def write(path: Path) -> None:
        from rlm_context_documents import testing

        if kind == "locked":
            testing.write_encrypted_pdf(path)
        elif kind == "scan":
            testing.write_pdf(path, 4, text=False)
        elif kind == "half":
            whole = path.with_suffix(".whole.pdf")
            testing.write_pdf(whole, 3, fact="the middle of a report")
            data = whole.read_bytes()
            path.write_bytes(data[: len(data) // 2])
            whole.unlink()

    return write


SESSIONS: dict[str, Session] = {
    "README.md": Session(MAGIC),
    "docs/guide/run.md": Session({
        **REPORT, **STATION, "tools.json": TOOLS, "typed.json": TYPED,
        "orders.txt": "order 1: 40 bolts\norder 2: 200 nuts\norder 3: 10 washers\n",
        "mytools.py": FromPage("# mytools.py"), "incident.json": json.dumps(INCIDENT),
        "notes_server.py": FromPage("# notes_server.py"), "mcp.json": FromPage('{"mcpServers": {"notes"'),
        "notes.json": script([repl("note = mcp__notes__lookup(topic='billing')\nprint(note)"), "FINAL_VAR(note)"]),
        "find.json": script([FIND_INCIDENT, "FINAL(T4)"]),
        "branch.json": script([repl("print(context[:40])"), FIND_INCIDENT, repl("x = 1/0"), "FINAL(T4)",
                               "FINAL(T4)", "FINAL(T4)"]),
    }),
    "docs/guide/configuration.md": Session({  # a cloned project's rlm.toml, not trusted
        "rlm.toml": '[run]\nbase_url = "http://127.0.0.1:9/v1"\nsandbox = "process"\nmodel = "scripted:q.json"\n',
        "q.json": script([repl("print(len(context))"), "FINAL(done)"]), "notes.txt": WORDS,
    }),
    "docs/guide/models.md": Session({**STATION, "summary.json": script([FIND_INCIDENT, "FINAL(one incident: T4)"])},
                                    env={"RLM_RUN__MODEL": "scripted:summary.json"}),
    "docs/guide/observability.md": Session({
        "notes.txt": "the quick brown fox jumps over the lazy dog\n",
        "script.json": script([repl("print(len(context.split()))"), "FINAL(9)"]),
    }, env={"RLM_SINK__OTEL__EXPORTER": "file"}),
    "docs/guide/python-api.md": Session({
        "nums.txt": "20 22\n",
        "chat.json": script([repl("total = sum(int(x) for x in context.split())\nanswer = total\nprint(answer)"),
                             "FINAL_VAR(answer)", repl("answer = total + 1\nprint(answer)"), "FINAL_VAR(answer)"]),
    }),
    "docs/guide/benchmarks.md": Session({"sweep.toml": FromPage("[sweep]"), "guidance.txt": "Answer in one line.\n",
                                         "six.json": script([repl("print(6 * 7)"), "FINAL(42)"])}),
    "plugins/_template/README.md": Session({
        "log.txt": "2026-03-01 pump P-1 inspected\n2026-03-04 pump P-2 inspected\n2026-03-09 valve V-7 inspected\n",
        "lines.json": FromEcho("lines.json"), "six.json": FromEcho("six.json"),
        "agent.json": script(["TOOL run_code\nprint([line for line in context.splitlines() if 'valve' in line])",
                              "FINAL valve V-7, on 2026-03-09"]),
        "qa.json": script([], TEMPLATE_QA),
    }, env={"PYTHONPATH": "{plugin_site}", "RLM_PLUGINS": "rlm-plugin-template,rlm-bench"}),
    "plugins/rlm-adapter-adk/README.md": Session({
        **STATION, "station_log.txt": copy_of("samples/station_log.txt"), "script.json": FromPage('{"responses": ['),
        **TOOL_FILES, "agent.json": FromPage('{"responses": [', 1),
    }),
    "plugins/rlm-adapter-deepagents/README.md": Session({
        **STATION, "station_log.txt": copy_of("samples/station_log.txt"), "script.json": FromPage('{"responses": ['),
        **TOOL_FILES, "agent.json": FromPage('{"responses": [', 1),
    }),
    "plugins/rlm-adapter-pydantic-ai/README.md": Session({
        **STATION, "station_log.txt": copy_of("samples/station_log.txt"), "script.json": FromPage('{"responses": ['),
        **TOOL_FILES, "agent.json": FromPage('{"responses": [', 1),
    }),
    "plugins/rlm-adapter-dspy/README.md": Session({"notes.txt": FromCat("notes.txt"), "script.json": DSPY_SCRIPT,
                                                   "station_log.txt": copy_of("samples/station_log.txt"),
                                                   **TOOL_FILES, "dspy.json": DSPY_TOOLS_SCRIPT},
                                                  env={"RLM_PLUGINS": "rlm-adapter-dspy,rlm-sandbox-monty,rlm-runs"}),
    "plugins/rlm-bench/README.md": Session({"smoke.json": script([], SMOKE), "worse.json": script([], WORSE)}),
    "plugins/rlm-compat-rlms/README.md": Session({"notes.txt": "hello world\n", "script.json": FromCat("script.json")}),
    "plugins/rlm-context-documents/README.md": Session({
        **REPORT, "locked.pdf": document("locked"), "scan.pdf": document("scan"), "half.pdf": document("half"),
    }),
    "plugins/rlm-env-generic/README.md": Session({name: FromCat(name) for name in ("log.txt", "actions.json",
                                                                                   "delegate.json")}),
    "plugins/rlm-env-traces/README.md": Session({
        "script.json": TRACES_SCRIPT, "repl.json": TRACES_REPL, "traces.jsonl": generated_traces,
    }),
    "plugins/rlm-sink-local/README.md": Session({"six.json": FromCat("six.json")}),
    "plugins/rlm-export-html/README.md": Session({"half.json": FromCat("half.json")}),
    "plugins/rlm-runs/README.md": Session({"notes.txt": FromCat("notes.txt"), "find.json": FromCat("find.json"),
                                           "guess.json": FromCat("guess.json")}),
    "plugins/rlm-sink-otel/README.md": Session({
        "notes.txt": "What is 6 times 7? Reply.\n",
        "script.json": script([repl("answer = llm_query('What is 6 times 7? Reply with the number.')\nprint(answer)"),
                               "FINAL(42)"], [{"match": "^What is 6 times 7\\? Reply with the number", "text": "42"}]),
    }, servers=(with_url("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver()),)),  # the sink adds /v1/traces to it
    "plugins/rlm-sink-langfuse/README.md": Session(
        {"notes.txt": WORDS, "script.json": COUNT_WORDS},
        env={"LANGFUSE_PUBLIC_KEY": "pk-lf-docs", "LANGFUSE_SECRET_KEY": "sk-lf-docs"},
        servers=(with_url("LANGFUSE_BASE_URL", otlp_receiver("/api/public/ingestion")),)),
    "plugins/rlm-sink-langsmith/README.md": Session(
        {"notes.txt": WORDS, "script.json": COUNT_WORDS}, env={"LANGSMITH_API_KEY": "lsv2_docs"},
        servers=(with_url("LANGSMITH_ENDPOINT", otlp_receiver()),)),
    "plugins/rlm-sink-logfire/README.md": Session(
        {"notes.txt": WORDS, "script.json": COUNT_WORDS}, env={"LOGFIRE_TOKEN": "pylf_v1_us_docs"},
        servers=(with_url("LOGFIRE_BASE_URL", otlp_receiver()),)),
    "plugins/rlm-sink-mlflow/README.md": Session({
        "context.txt": "a context of a few words",
        "root.json": script([repl("kind = llm_query('Classify: ' + context)\nnote = rlm_query('Summarise the context', "
                                  "context)\nprint(kind, note)"), repl("print(context[:10])"),
                             "FINAL('a few words of context')", "FINAL(a few words of context)"]),
        "sub.json": script([], [{"match": "Classify", "text": "prose"}]),
    }),
}
