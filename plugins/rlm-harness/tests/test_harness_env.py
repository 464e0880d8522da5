"""The harness end to end through ``rlm harness run`` with a scripted model, in the ``process`` runtime (fast, no
engine; NOT a security boundary, chosen explicitly; the Docker runs are ``test_harness_docker.py``). The attacks
come first: paths out of the folder, symlinks, metadata, a hostile regex, a command that outlives its step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness_support import PLUGIN, call, final, harness
from rlm_harness import sandbox_ops
from rlm_harness.environment import searchable_files
from rlm_host.sdk.environments import ProjectFiles
from rlm_host.testing import EnvironmentContract

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def project(rlm_isolated):
    folder = rlm_isolated.work / "project"
    folder.mkdir()
    return folder


# ---------------------------------------------------------------------------------------------- attacks


def test_paths_out_of_the_folder_symlinks_and_metadata_are_refused_steps(rlm_cli, rlm_script, rlm_isolated, project):
    outside = rlm_isolated.work / "outside.txt"
    outside.write_text("SECRET-OUTSIDE")
    (project / "link.txt").symlink_to(outside)
    (project / "linkdir").symlink_to(rlm_isolated.work)
    (project / ".git").mkdir()
    replies = [call("write_file", path="../escape.txt", content="x"),
               call("write_file", path=str(rlm_isolated.work / "escape.txt"), content="x"),
               call("read_file", path="/etc/passwd"),
               call("read_file", path="link.txt"),
               call("write_file", path="linkdir/escape.txt", content="x"),
               call("write_file", path=".git/config", content="[core]\n"),
               call("patch_file", path="link.txt", search="SECRET", replace="x"),
               call("list_files", path=".."),
               call("run_tests", selection=["--rootdir=/"]),
               final("refused")]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    errors = [s["observation"].get("error", "") for s in steps[:9]]
    assert "'..' is not allowed" in errors[0] and "outside the project folder" in errors[1]
    assert "outside the project folder" in errors[2] and "outside the project folder" in errors[3]
    assert "outside" in errors[4] and ".git" in errors[5] and "outside" in errors[6] and "'..'" in errors[7]
    assert "no options" in errors[8]
    assert all(s["observation"]["success"] is False for s in steps[:9])
    assert not (rlm_isolated.work / "escape.txt").exists() and outside.read_text() == "SECRET-OUTSIDE"
    assert "SECRET-OUTSIDE" not in result.out and "root:" not in result.out
    assert run["completed"] and run["final_response"] == "refused"


def test_a_hostile_regex_is_stopped_in_the_sandbox_and_the_run_goes_on(rlm_cli, rlm_script, rlm_isolated, project):
    (rlm_isolated.work / "rlm.toml").write_text("[environment.harness]\nsearch_timeout = 2\n")
    (project / "data.txt").write_text("a" * 40 + "!\n")
    (project / "code.py").write_text("def forward(self):\n    return 1\n")
    replies = [call("search", pattern="(a+)+$"), call("search", pattern="(unclosed"),
               call("search", pattern=r"def \w+\("), call("search", pattern="RETURN", ignore_case=True, path="code.py"),
               final()]
    started = time.monotonic()
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    assert time.monotonic() - started < 30
    catastrophic, bad, found, folded = (s["observation"] for s in steps[:4])
    assert catastrophic["success"] is False and "stopped" in catastrophic["error"]
    assert bad["success"] is False and "bad regex" in bad["error"]
    assert found["matches"] == [{"path": "code.py", "line": 1, "text": "def forward(self):"}]
    assert folded["matches"][0]["line"] == 2


def test_a_command_is_bounded_and_leaves_nothing_running(rlm_cli, rlm_script, rlm_isolated, project):
    marker = rlm_isolated.work / "late.txt"
    replies = [call("run_command", command=f"(sleep 2; echo late > {marker}) & echo started"),
               call("run_command", command="sleep 30", timeout=1),
               call("run_command", command="python3 -c \"print('x' * 100000)\""),
               call("run_command", command="exit 7"),
               final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    background, slow, loud, failing = (s["observation"] for s in steps[:4])
    assert background["success"] and background["stdout"] == "started\n"
    assert slow["timed_out"] is True and slow["success"] is False and slow["seconds"] < 10
    assert len(loud["stdout"]) < 8000 and "bytes cut" in loud["stdout"]
    assert failing["exit_code"] == 7 and failing["success"] is False
    time.sleep(2.5)
    assert not marker.exists(), "the command's process group is killed when it returns"


def test_search_never_reads_through_a_link_out_of_the_folder(rlm_cli, rlm_script, rlm_isolated, project):
    """Two layers, each tested: the host lists no linked file or folder for the search (``searchable_files``), and
    the search child in the sandbox opens nothing through a link (``SEARCH_SCRIPT``, run here on a list naming
    a linked file and a file under a linked folder)."""
    outside = rlm_isolated.work / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE\n")
    (project / "inside.txt").write_text("SECRET-INSIDE\n")
    (project / "link.txt").symlink_to(outside / "secret.txt")
    (project / "linkdir").symlink_to(outside)
    replies = [call("search", pattern="SECRET"), call("search", pattern="SECRET", path="link.txt"),
               call("search", pattern="SECRET", path="linkdir"),
               call("search", pattern="SECRET", path="linkdir/secret.txt"), final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    assert steps[0]["observation"]["matches"] == [{"path": "inside.txt", "line": 1, "text": "SECRET-INSIDE"}]
    assert all(not s["observation"]["success"] and "outside" in s["observation"]["error"] for s in steps[1:4])
    assert "SECRET-OUTSIDE" not in result.out + Path(run["trajectory_path"]).read_text()
    assert searchable_files(ProjectFiles(project), ".") == ["inside.txt"], "the host listed a link for the search"
    request = json.dumps({"pattern": "SECRET", "files": ["link.txt", "linkdir/secret.txt", "inside.txt"],
                          "limit": 10})
    child = subprocess.run([sys.executable, "-c", sandbox_ops.SEARCH_SCRIPT], input=request, capture_output=True,
                           text=True, cwd=project, timeout=60)
    paths = [match["path"] for match in json.loads(child.stdout)["matches"]]
    assert paths == ["inside.txt"], "the search child read through a final link"


def test_a_command_that_leaves_its_session_does_not_outlive_the_run(rlm_cli, rlm_script, project):
    """``setsid`` puts the process out of the command's group and session: the whole process tree of the sandbox
    session is killed when the run ends, wherever its processes moved."""
    seconds = str(1000 + os.getpid() % 997)  # a command line no other process has
    detach = f"setsid sleep {seconds} & setsid sh -c 'sleep {seconds}; true' & sleep 0.5; echo started"
    replies = [call("run_command", command=detach),
               call("run_command", command=f"ps -eo args | grep -c '^sleep {seconds}$'"), final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    assert steps[0]["observation"]["stdout"] == "started\n"
    assert steps[1]["observation"]["stdout"] == "2\n", "the detached processes outlive their step (their group)"
    deadline = time.monotonic() + 10
    while _running(f"sleep {seconds}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(f"sleep {seconds}"), "a process of the run's sandbox session is still running"


def _running(command_line: str) -> list[int]:
    """The processes (not zombies) whose command line is ``command_line``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b" ".join(w for w in words if w).decode(errors="replace").endswith(command_line) and state != b"Z":
            found.append(int(entry.name))
    return found


# ---------------------------------------------------------------------------------------------- the work


def test_list_write_patch_command_tests_and_final(rlm_cli, rlm_script, project):
    replies = [call("list_files"),
               call("write_file", path="calc.py", content=BUGGY),
               call("write_file", path="tests/test_calc.py", content=TESTS),
               call("run_tests"),
               call("read_file", path="calc.py", start_line=2),
               call("patch_file", path="calc.py", search="a - b", replace="a + b"),
               call("run_command", command="ls -R && python3 -c 'import calc; print(calc.add(2, 3))'"),
               call("run_tests", selection=["tests/test_calc.py"]),
               json.dumps({"final": "calc.add fixed; tests pass"})]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    assert run["completed"] and run["environment"] == "harness" and run["sandbox"] == "process"
    assert [s["action"] for s in steps] == ["list_files", "write_file", "write_file", "run_tests", "read_file",
                                            "patch_file", "run_command", "run_tests", "final"]
    obs = [s["observation"] for s in steps]
    assert obs[0]["entries"] == [] and obs[1]["created"] is True
    assert obs[3]["passed"] is False and "assert -1 == 5" in obs[3]["stdout"]
    assert obs[4]["content"] == "    2      return a - b"
    assert obs[6]["stdout"].rstrip().endswith("5") and obs[7]["passed"] is True
    rewards = [s["reward"] for s in steps]
    assert rewards[3] == pytest.approx(0.1 - 0.3) and rewards[7] == pytest.approx(0.1 + 0.7) and rewards[8] == 1.0
    assert (project / "calc.py").read_text().endswith("return a + b\n")
    assert run["final_response"] == "calc.add fixed; tests pass"


def test_malformed_replies_unknown_tools_and_bad_arguments_are_steps(rlm_cli, rlm_script, project):
    replies = ['{"tool": ', call("teleport", to="mars"), json.dumps({"tool": "read_file", "args": [1, 2]}),
               call("read_file"), final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies)
    assert result.code == 0, result.out + result.err
    assert [s["action"] for s in steps] == ["malformed_reply", "unsupported_action", "read_file", "read_file", "final"]
    assert "unknown tool 'teleport'" in steps[1]["observation"]["error"]
    assert "JSON object" in steps[2]["observation"]["error"] and "no path given" in steps[3]["observation"]["error"]


def test_llm_query_is_a_sub_call_counted_in_the_budget(rlm_cli, rlm_script, project):
    model = rlm_script([call("llm_query", prompt="What is 6 * 7?"), final("42")],
                       rules=[{"match": "6 \\* 7", "text": "42"}])
    result = rlm_cli("harness", "run", "Ask.", "--workdir", str(project), "--model", model, "--sandbox", "process",
                     "--json", plugins=PLUGIN)
    assert result.code == 0, result.err
    run = json.loads(result.out)
    from harness_support import steps_of

    steps = steps_of(run)
    assert steps[0]["observation"] == {"success": True, "response": "42"}
    assert run["usage"]["sub"]["calls"] == 1


def test_the_live_step_lines_show_each_step_without_control_characters(rlm_cli, rlm_script, project):
    model = rlm_script([call("write_file", path="a.txt", content="x"), call("read_file", path="\x1b[2Jnope"),
                        final()])
    result = rlm_cli("harness", "run", "Go.", "--workdir", str(project), "--model", model, "--sandbox", "process",
                     plugins=PLUGIN)
    assert result.code == 0, result.err
    assert result.out.strip() == "done"
    assert "── step 1 · write_file · reward +0.10" in result.err and "│ path: a.txt" in result.err
    assert "── step 2 · read_file · reward -0.20" in result.err and "✗ " in result.err
    assert "\x1b" not in result.err and "✓ final after 3 steps" in result.err


def test_the_answer_and_step_lines_reach_the_terminal_without_control_characters(rlm_cli, rlm_script, project):
    controls = "\x9b2J\x9d0;title\x07\x1b[31m\x7f\x85"  # C1 CSI and OSC, BEL, ESC, DEL, NEL
    model = rlm_script([call("read_file", path=f"x{controls}"), final(f"done {controls}")])
    result = rlm_cli("harness", "run", f"Go {controls}", "--workdir", str(project), "--model", model, "--sandbox",
                     "process", plugins=PLUGIN)
    assert result.code == 0, result.err
    assert result.out.startswith("done ") and "── step 1 · read_file" in result.err
    raw = [c for c in result.err if c not in "\n\t" and not c.isprintable()]  # stdout is the product: as it is
    assert not raw, result.err  # into a pipe, its controls shown on a terminal (rlm run's rule, tests/test_run_cli)
    as_json = rlm_cli("harness", "run", "Go", "--workdir", str(project), "--model", model, "--sandbox", "process",
                      "--json", plugins=PLUGIN)
    assert "\\u009b" in as_json.out and "\x9b" not in as_json.out


# ---------------------------------------------------------------------------------------------- refusals


def test_monty_cannot_serve_the_harness_and_bad_input_is_exit_2(rlm_cli, rlm_script, project):
    model = rlm_script([final()])
    monty = rlm_cli("harness", "run", "x", "--workdir", str(project), "--model", model, "--sandbox", "monty",
                    plugins=f"{PLUGIN},rlm-sandbox-monty")
    assert monty.code == 2 and "the harness environment edits a project folder, and the monty sandbox cannot " \
                                "mount one" in monty.err and "Traceback" not in monty.err
    bad = rlm_cli("harness", "run", "x", "--workdir", str(project), "--approve", "sometimes", plugins=PLUGIN)
    assert bad.code == 2 and "--approve" in bad.err
    (project / "bad.json").write_text("{not json")
    broken = rlm_cli("harness", "run", "x", "--workdir", str(project), "--mcp-config", str(project / "bad.json"),
                     plugins=PLUGIN)
    assert broken.code == 2 and "is not JSON" in broken.err and "Traceback" not in broken.err
    (project / "sse.json").write_text(json.dumps({"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"}}}))
    sse = rlm_cli("harness", "tools", "--mcp-config", str(project / "sse.json"), plugins=PLUGIN)
    assert sse.code == 2 and "streamable HTTP" in sse.err


def test_a_home_folder_is_refused_as_the_workdir(rlm_cli, rlm_script, rlm_isolated):
    model = rlm_script([final()])
    result = rlm_cli("harness", "run", "x", "--workdir", str(rlm_isolated.home), "--model", model, "--sandbox",
                     "process", plugins=PLUGIN)
    assert result.code == 2 and "refusing to let the model edit files" in result.err


def test_a_read_only_run_refuses_writes_commands_and_tests_as_steps(rlm_cli, rlm_script, project):
    (project / "calc.py").write_text(BUGGY)
    replies = [call("write_file", path="calc.py", content="x = 1\n"),
               call("patch_file", path="calc.py", search="a - b", replace="a + b"),
               call("run_command", command="touch made.txt"), call("run_tests"),
               call("read_file", path="calc.py"), call("search", pattern="return"), final("read only")]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies, "--approve", "read-only")
    assert result.code == 0, result.out + result.err
    assert all(s["observation"]["refused"] and "read-only run" in s["observation"]["error"] for s in steps[:4])
    assert all(s["reward"] == 0.0 for s in steps[:4])
    assert steps[4]["observation"]["success"] and steps[5]["observation"]["success"]
    assert (project / "calc.py").read_text() == BUGGY and not (project / "made.txt").exists()
    opened, _, steps = harness(rlm_cli, rlm_script, project, replies[:1] + replies[-1:], "--approve", "read-only",
                               "--approval-rule", "write_file=allow")
    assert "refused" not in steps[0]["observation"] and (project / "calc.py").read_text() == "x = 1\n"


def test_the_rlm_front_door_runs_the_harness(rlm_isolated, rlm_script, project):
    from rlm_host import RLM

    model = rlm_script([call("write_file", path="hello.txt", content="hi"), final("wrote it")])
    rlm = RLM(model=model, environment="harness", workdir=str(project), sandbox="process")
    result = rlm.completion(None, "Write hello.txt")
    assert result.completed and result.final_response == "wrote it" and result.environment == "harness"
    assert (project / "hello.txt").read_text() == "hi"


class TestHarnessEnvironment(EnvironmentContract):
    """The whole environment protocol suite (a project folder under tmp_path, the process runtime)."""

    environment = "harness"
    distribution = PLUGIN
    final_reply = '{"tool": "final", "args": {"answer": "42"}}'
    final_answer = "42"
    working_reply = '{"tool": "list_files", "args": {}}'


def test_a_model_that_cannot_be_set_up_is_bad_input(rlm_cli, project, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = rlm_cli("harness", "run", "x", "--workdir", str(project), "--model", "openai:gpt-4o-mini", "--sandbox",
                     "process", plugins=PLUGIN)
    assert result.code == 2 and "no API key for openai" in result.err and "Traceback" not in result.err


def test_the_reply_format_is_one_tool_call_of_a_listed_tool():
    """The host's tool protocol format, without a free-text answer (``final`` is a tool): a grammar naming each
    tool, ``read_file``'s required ``path`` first; an MCP tool listed too; llama.cpp compiles the grammar."""
    from rlm_harness import tools
    from rlm_harness.mcp_client import McpTool

    mcp = McpTool("files", "read", "mcp__files__read", "Read.", {"type": "object"}, True, False)
    shape = tools.reply_format(tools.tool_specs([mcp]))
    names = shape.json_schema["oneOf"][0]["properties"]["tool"]["enum"]
    assert names[-2:] == ["mcp__files__read", "final"] and len(shape.json_schema["oneOf"]) == 1
    assert '"\\"read_file\\"" ws "," ws "\\"args\\"" ws ":" ws "{" ws "\\"path\\""' in shape.gbnf
    llama_cpp = pytest.importorskip("llama_cpp")
    llama_cpp.LlamaGrammar.from_string(shape.gbnf, verbose=False)


def test_a_run_in_a_runtime_that_is_no_boundary_says_so_first(rlm_cli, rlm_script, rlm_isolated):
    """``--sandbox process`` lets model commands write beside the workdir: the run's first lines say so, and an
    approval names the runtime for what it is, never "the sandbox" (issue 47)."""
    project = rlm_isolated.work / "project"
    project.mkdir()
    model = rlm_script([call("run_command", command="echo hi"), final()])
    result = rlm_cli("harness", "run", "Do the task.", "--workdir", str(project), "--model", model, "--max-steps", "2",
                     "--sandbox", "process", plugins=PLUGIN)
    lines = result.err.splitlines()
    assert lines[1].startswith("! sandbox process is NOT a security boundary"), result.err
    assert str(project.resolve()) in lines[1] or str(project) in lines[1]
    from rlm_harness.environment import HarnessEnvironment

    class Info:
        name, security_boundary = "process", False

    env = HarnessEnvironment.__new__(HarnessEnvironment)
    env.session = type("Session", (), {"info": Info()})()
    assert env.sandbox_label().startswith("process runtime (NOT a security boundary")
