"""The MCP trust boundary, attacked the way a hostile MCP client would, through the
official MCP Python client against the real ``rlm mcp serve`` over stdio and streamable HTTP.

What the operator passed to ``rlm mcp serve`` is a ceiling: a client cannot pick a sandbox weaker than the
server's (``process`` only with ``--allow-client-sandbox process``), a model off the operator's allow-list (file
spellings such as ``scripted//abs/file`` included), or a limit above the operator's. Roots hold on what is
actually read: a folder holding a link out of the roots is refused unread, and a FIFO at the top or inside a
folder is refused at once instead of hanging the call. The secret outside the roots never reaches a result or a
trajectory.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("rlm_mcp")
pytest.importorskip("rlm_sandbox_monty")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parents[2] / "plugins" / "rlm-mcp" / "tests"))
from mcp_support import RLM, start_http_server, stop  # noqa: E402

SECRET = "TOPSECRET-7f3a9c"
TOKEN = "boundary-test-token"
DUMP = ["```repl\nprint(context)\n```", "FINAL(done)"]  # prints the whole context into the trajectory
#: Seconds a call on a FIFO may take: refused at once, never a blocked read.
QUICK_REFUSAL = 5.0


@dataclass(frozen=True)
class Tree:
    work: Path  # the server's working directory (its run home is work/.rlm)
    root: Path  # the only --root
    outside: Path  # holds the secret, a script answering it and a run file
    model: str  # --model: dumps the context
    sub: str  # --sub-model
    steps: str  # --allow-model: code steps only, never final
    pong: str  # --allow-model: answers "pong" to "ping"
    caller: str  # --allow-model: code calling sub-models by name


def _script(path: Path, replies: list[Any] = (), rules: list[dict] = ()) -> str:
    path.write_text(json.dumps({"responses": list(replies), "rules": list(rules)}))
    return f"scripted:{path}"


@pytest.fixture
def tree(rlm_isolated, tmp_path) -> Tree:
    work, root, outside = rlm_isolated.work, rlm_isolated.work / "root", tmp_path / "outside"
    for folder in (root / "docs", root / "linked" / "sub", root / "hidden", root / "piped", outside):
        folder.mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    _script(outside / "secret.json", [f"FINAL({SECRET})"] * 5, [{"match": ".", "text": SECRET}])
    (outside / "run.jsonl").write_text(json.dumps({"type": "final", "data": {"final_response": SECRET}}) + "\n")
    _script(work.parent / "outside.json", [f"FINAL({SECRET})"] * 5)  # what scripted:../outside.json names
    (root / "notes.txt").write_text("hello world")
    for folder in ("docs", "linked", "hidden", "piped"):
        (root / folder / "a.txt").write_text("alpha")
    os.symlink(outside / "secret.txt", root / "docs" / "leak.txt")  # a file link out of the root
    os.symlink(outside, root / "linked" / "sub" / "out")  # a folder link out, one level down
    os.symlink(outside / "secret.txt", root / "hidden" / ".leak.txt")  # hidden: never read, so allowed
    os.mkfifo(root / "pipe")
    os.mkfifo(root / "piped" / "pipe")
    calls = ["```repl\nprint(llm_query('ping', model=%r))\n```", "```repl\nprint(llm_query('ping', model=%r))\n```",
             "FINAL(called)"]
    pong = _script(work / "pong.json", rules=[{"match": "ping", "text": "pong"}])
    caller = [calls[0] % pong, calls[1] % f"scripted:{outside / 'secret.json'}", calls[2]]
    return Tree(work=work, root=root, outside=outside, model=_script(work / "dump.json", DUMP * 20),
                sub=_script(work / "sub.json", rules=[{"match": ".", "text": "sub"}]),
                steps=_script(work / "steps.json", [f"```repl\nprint({i})\n```" for i in range(40)]),
                pong=pong, caller=_script(work / "caller.json", caller * 5))


def serve_args(tree: Tree, *extra: str) -> list[str]:
    return ["--root", str(tree.root), "--sandbox", "monty", "--model", tree.model, "--sub-model", tree.sub,
            "--allow-model", tree.steps, "--allow-model", tree.pong, "--allow-model", tree.caller,
            "--max-steps", "3", *extra]


def with_server(transport: str, tree: Tree, args: list[str], calls) -> Any:
    """``calls(session)`` against ``rlm mcp serve ARGS`` over ``transport``, the server in ``tree.work``."""
    if transport == "stdio":
        server = StdioServerParameters(command=RLM, args=["mcp", "serve", *args], cwd=str(tree.work),
                                       env={"HOME": os.environ["HOME"]})

        async def over_stdio():
            async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await calls(session)

        return anyio.run(over_stdio)
    process, url = start_http_server(tree.work, Path(os.environ["HOME"]), TOKEN, *args)

    async def over_http():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            async with streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                return await calls(s)

    try:
        return anyio.run(over_http)
    finally:
        stop(process)


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def run_start(result: Any) -> dict:
    path = Path(result.structured_content["trajectory_path"])
    return json.loads(path.read_text().splitlines()[0])["data"]


def assert_secret_kept(tree: Tree, *results: Any) -> None:
    for result in results:
        assert SECRET not in text_of(result) and SECRET not in json.dumps(result.structured_content or {})
    for path in (tree.work / ".rlm").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


@TRANSPORTS
def test_a_client_cannot_pick_a_weaker_sandbox(transport, tree):
    async def calls(session):
        weaker = [await session.call_tool("rlm_run", {"query": "q", "path": "notes.txt", "sandbox": name})
                  for name in ("process", "local", "PROCESS", "nonsense")]
        same = await session.call_tool("rlm_run", {"query": "q", "path": "notes.txt", "sandbox": "monty"})
        auto = await session.call_tool("rlm_run", {"query": "q", "path": "notes.txt", "sandbox": "auto"})
        return weaker, same, auto

    weaker, same, auto = with_server(transport, tree, serve_args(tree), calls)
    for result in weaker:
        message = text_of(result)
        assert result.is_error and "this server allows: auto" in message and "monty" in message, message
        assert "process" not in message.split("this server allows:")[1].split("(")[0], message
    assert "not a security boundary" in text_of(weaker[0])
    for result in (same, auto):
        assert not result.is_error, text_of(result)
        assert run_start(result)["sandbox"] == "monty"


def test_process_only_when_the_operator_opts_in(tree):
    async def ask_process(session):
        return await session.call_tool("rlm_run", {"query": "q", "path": "notes.txt", "sandbox": "process"})

    opted = with_server("stdio", tree, serve_args(tree, "--allow-client-sandbox", "process"), ask_process)
    assert not opted.is_error, text_of(opted)
    assert run_start(opted)["sandbox"] == "process"
    own = with_server("stdio", tree, [*serve_args(tree), "--sandbox", "process"], ask_process)
    assert not own.is_error and run_start(own)["sandbox"] == "process", text_of(own)

    async def ask_model(session):
        return await session.call_tool("rlm_run", {"query": "q", "text": "x", "model": tree.model})

    no_models = with_server("stdio", tree, ["--root", str(tree.root), "--sandbox", "monty"], ask_model)
    assert no_models.is_error and "lets clients choose no model" in text_of(no_models)


@TRANSPORTS
def test_client_models_come_from_the_operators_allow_list(transport, tree):
    attacks = [f"scripted/{tree.outside / 'secret.json'}", f"replay/{tree.outside / 'run.jsonl'}",
               "scripted:../outside.json", f"scripted:{tree.outside / 'secret.json'}",
               f"replay:{tree.outside / 'run.jsonl'}", f"scripted:{tree.outside}/../outside/secret.json",
               "openai:gpt-4o-mini", f" {tree.model}"]
    progress: list[tuple] = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    async def calls(session):
        refused = [await session.call_tool("rlm_run", {"query": "q", "text": "x", "model": m}) for m in attacks]
        bench = [await session.call_tool("rlm_bench_run", {"preset": "pure_rlm_smoke", "limit": 1, "model": m})
                 for m in attacks[:3]]
        listed = await session.call_tool("rlm_runs_list", {})
        clamped = await session.call_tool("rlm_run", {"query": "q", "text": "x", "model": tree.steps,
                                                      "max_steps": 50}, progress_callback=on_progress)
        caller = await session.call_tool("rlm_run", {"query": "q", "text": "x", "model": tree.caller})
        return refused, bench, listed, clamped, caller

    refused, bench, listed, clamped, caller = with_server(transport, tree, serve_args(tree), calls)
    allowed = ", ".join([tree.model, tree.sub, tree.steps, tree.pong, tree.caller])
    for model, result in zip(attacks + attacks[:3], refused + bench):
        assert result.is_error and f"this server allows: {allowed}" in text_of(result), (model, text_of(result))
    assert listed.structured_content["total"] == 0  # nothing ran
    run = clamped.structured_content
    assert not clamped.is_error and run["termination_reason"] == "max_steps" and run["steps"] == 3, run
    assert progress and all(total == 3 for _, total in progress)
    assert run_start(clamped)["settings"]["max_steps"] == 3
    assert not caller.is_error and caller.structured_content["final_response"] == "called", text_of(caller)
    trajectory = Path(caller.structured_content["trajectory_path"]).read_text()
    assert "pong" in trajectory  # an --allow-model reached the run's code as a sub-model
    assert "is not allowed in this run" in trajectory  # a file-naming one did not
    assert set(run_start(caller)["settings"]["allowed_sub_models"]) >= {tree.pong, tree.steps}
    assert_secret_kept(tree, *refused, *bench, clamped, caller)


@TRANSPORTS
def test_roots_hold_on_what_is_read(transport, tree):
    timings: dict[str, float] = {}

    async def timed(session, name, arguments):
        started = time.monotonic()
        with anyio.fail_after(30):  # a hang fails here instead of blocking the suite
            result = await session.call_tool("rlm_run", {"query": "q", **arguments})
        timings[name] = time.monotonic() - started
        return result

    async def calls(session):
        names = {"docs": {"path": "docs"}, "linked": {"path": "linked"}, "pipe": {"path": "pipe"},
                 "piped": {"path": "piped"}, "pipe_abs": {"path": str(tree.root / "pipe")},
                 "hidden": {"path": "hidden"}, "after": {"path": "notes.txt"}}
        return {name: await timed(session, name, arguments) for name, arguments in names.items()}

    results = with_server(transport, tree, serve_args(tree), calls)
    for name in ("docs", "linked"):
        message = text_of(results[name])
        assert results[name].is_error and "a link out of the allowed roots" in message, message
        assert str(tree.outside) not in message  # where the link points is not told
    for name in ("pipe", "piped", "pipe_abs"):
        assert results[name].is_error and "a FIFO" in text_of(results[name]), text_of(results[name])
        assert timings[name] < QUICK_REFUSAL, timings
    hidden = results["hidden"]
    assert not hidden.is_error, text_of(hidden)
    assert "alpha" in Path(hidden.structured_content["trajectory_path"]).read_text()  # the context was dumped
    assert not results["after"].is_error and "hello world" in Path(
        results["after"].structured_content["trajectory_path"]).read_text()  # the server still serves
    assert_secret_kept(tree, *results.values())


@pytest.mark.slow
def test_a_hostile_document_is_one_clean_error_while_the_server_keeps_serving(tree):
    """A crafted PDF (nested form XObjects: gigabytes when parsed unbounded) handed to a long-lived server: its
    extraction runs in a bounded child, the call ends in one error naming the limit, and other calls are answered
    meanwhile."""
    pytest.importorskip("rlm_context_documents")
    sys.path.append(str(Path(__file__).resolve().parents[2] / "plugins" / "rlm-context-documents" / "tests"))
    import documents_hostile as hostile

    hostile.nested_xobject_pdf(tree.root / "bomb.pdf")

    async def calls(session):
        answered: list[float] = []
        outcome: dict[str, Any] = {}

        async def hostile_call():
            outcome["bomb"] = await session.call_tool("rlm_run", {"query": "q", "path": "bomb.pdf"})

        async def other_calls():
            while "bomb" not in outcome:
                started = time.monotonic()
                await session.call_tool("rlm_runs_list", {})
                answered.append(time.monotonic() - started)
                await anyio.sleep(0.1)

        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                group.start_soon(hostile_call)
                group.start_soon(other_calls)
        return outcome["bomb"], answered

    bomb, answered = with_server("stdio", tree, serve_args(tree), calls)
    assert bomb.is_error and "bomb.pdf" in text_of(bomb) and "limit" in text_of(bomb), text_of(bomb)
    assert answered and max(answered) < 5.0, answered
