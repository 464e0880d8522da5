"""The run options have one declaration (``RunSettings``) and one front door (``RLM``): every front door offers
them under the same name, type, limits and help, a value's source is the flag or keyword it came from, and
``rlm run`` reaches the model through the public API in a handful of calls."""

from __future__ import annotations

import json
import sys
import traceback
import typing
from pathlib import Path

import pytest

from rlm_host import RLM, ConfigError
from rlm_host.config import run_options
from rlm_host.config.schema import RunSettings

FIELDS = tuple(RunSettings.model_fields)


def _options_of(command) -> dict[str, object]:
    return {p.name: p for p in command.params if p.param_type_name == "option"}


@pytest.mark.parametrize("command, own", [("rlm_host.cli.run_cmd:run", {"context", "as_json", "quiet"}),
                                          ("rlm_host.cli.chat_cmd:chat", {"context", "resume", "list_", "quiet"})])
def test_every_run_setting_is_an_rlm_run_flag_named_and_described_by_its_declaration(command, own):
    """``rlm run`` and ``rlm chat`` (one kit) offer every run option as its declared flag."""
    import importlib

    module, _, name = command.partition(":")
    options = _options_of(getattr(importlib.import_module(module), name))
    assert set(FIELDS) <= set(options), set(FIELDS) - set(options)
    for name in FIELDS:
        flag = run_options.flag_of(name)
        assert flag in options[name].opts, (name, options[name].opts)
        description = RunSettings.model_fields[name].description
        assert description[1:] in options[name].help, name  # the declaration's words (capitalised)
    assert set(options) - set(FIELDS) == own  # the command's own, nothing else


@pytest.mark.parametrize("name", FIELDS)
def test_every_run_setting_is_an_rlm_keyword(tmp_path, name):
    """What ``rlm run`` takes, ``RLM(...)`` takes: the review found ``instructions`` and ``allow_any_workdir``
    refused by the API while the CLI took them."""
    value = RunSettings().model_dump()[name]
    samples = {"instructions": "be brief", "allow_any_workdir": True, "workdir": tmp_path, "strict": True,
               "labels": {"k": "v"}, "sub_model": "scripted:x.json", "max_tokens": 100, "max_cost": 0.5,
               "base_url": "http://127.0.0.1:9", "max_reply_tokens": 64, "allowed_sub_models": ["scripted:y.json"],
               "sinks": [], "temperature": 0.2, "top_p": 0.9, "seed": 7, "sub_sampling": {"temperature": 0.1},
               "tools": ["json:dumps"], "sub_tools": ["json:loads"], "output_type": {"type": "string"},
               "max_errors": 3, "mcp_servers": {"fs": {"command": "true"}}}
    value = samples.get(name, value)
    rlm = RLM(home=tmp_path, **{name: value})
    assert getattr(rlm.loaded.settings.run, name) == value
    assert rlm.loaded.source_of(f"run.{name}") == f"RLM({name}=…)"


def test_a_bad_keyword_value_is_a_config_error_naming_the_keyword(tmp_path):
    with pytest.raises(ConfigError, match=r"RLM\(max_steps=…\): Input should be greater than or equal to 1"):
        RLM(home=tmp_path, max_steps=0)
    with pytest.raises(TypeError, match="unknown run option"):
        RLM(home=tmp_path).completion("text", "q", max_stepz=3)


def _annotation_matches(annotation, field) -> bool:
    """A typer parameter ``Optional[X]`` / ``Optional[List[X]]`` declares the field's type ``X`` / ``list[X]``."""
    inner = [a for a in typing.get_args(annotation) if a is not type(None)][0]
    declared = field.annotation
    declared_args = [a for a in typing.get_args(declared) if a is not type(None)]
    if typing.get_origin(declared) in (typing.Union, __import__("types").UnionType):
        declared = declared_args[0]
    if typing.get_origin(declared) in (list, dict):
        return typing.get_origin(inner) is list
    if typing.get_origin(declared) is typing.Literal:
        return inner is str
    return inner is declared


@pytest.mark.parametrize("module, function, run_names", [
    ("rlm_bench.bench_cmd", "run", {"env": "environment", "model": "model", "sub_model": "sub_model",
                                    "sandbox": "sandbox", "instructions": "instructions", "sink": "sinks"}),
])
def test_other_commands_derive_their_run_flags_from_the_declaration(module, function, run_names):
    import importlib
    import inspect

    command = getattr(importlib.import_module(module), function)
    hints = typing.get_type_hints(command)
    for parameter, name in run_names.items():
        info = inspect.signature(command).parameters[parameter].default
        assert info.param_decls[0].split("/")[0] == run_options.flag_of(name), parameter
        assert RunSettings.model_fields[name].description[1:] in info.help, parameter
        assert _annotation_matches(hints[parameter], RunSettings.model_fields[name]), (parameter, hints[parameter])


def test_the_mcp_tool_schema_carries_each_run_option_s_type_limits_and_description(tmp_path):
    import asyncio

    pytest.importorskip("rlm_mcp")
    from rlm_mcp.ceilings import LIMITS, Ceilings
    from rlm_mcp.roots import Roots
    from rlm_mcp.server import build_server

    server = build_server(RLM(home=tmp_path), Roots([str(tmp_path)]), Ceilings("auto", frozenset()))
    tool = next(t for t in asyncio.run(server.list_tools()) if t.name == "rlm_run")
    schema = RunSettings.model_json_schema()["properties"]
    for name in ("model", "sandbox", *LIMITS):
        prop = tool.input_schema["properties"][name]
        assert prop["description"] == RunSettings.model_fields[name].description
        typed = next(option for option in prop["anyOf"] if option.get("type") != "null")
        declared = next((o for o in schema[name].get("anyOf", [schema[name]]) if o.get("type") != "null"))
        assert typed == {k: v for k, v in declared.items() if k not in ("title", "default", "description", "flag")}


def test_provenance_names_the_flag_a_value_came_from(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    (work / "s.json").write_text(json.dumps({"responses": ["FINAL(42)"]}))
    (work / "rlm.toml").write_text("[run]\nmax_llm_calls = 7\n")
    result = rlm("run", "q", "--model", "scripted:s.json", "--sandbox", "process", "--max-steps", "3",
                 "--label", "team=a", "--json", "-q", plugins=[])
    assert result.returncode == 0, result.stderr
    path = work / json.loads(result.stdout)["trajectory_path"]
    start = json.loads(path.read_text().splitlines()[0])["data"]
    sources = start["settings_sources"]
    assert sources["max_steps"] == "--max-steps" and sources["labels"] == "--label"
    assert sources["model"] == "--model" and sources["sandbox"] == "--sandbox"
    assert sources["max_llm_calls"].startswith("project file") and "max_timeout" not in sources
    assert start["settings"]["max_steps"] == 3 and start["settings"]["labels"] == {"team": "a"}


def test_rlm_run_reaches_the_model_through_the_public_api_in_at_most_10_calls(tmp_path, monkeypatch):
    """From the ``rlm run`` command (its ``run_and_show``, which every run command shares) to the model connector:
    the CLI is a thin client of ``RLM``. The connector
    itself is called from a thread of ``Budget.unless_cancelled`` (so a cancelled run abandons the call): the chain
    is counted to that hop, plus the one call in the thread."""
    from rlm_host.engine.budget import Budget

    chains = []
    original = Budget.unless_cancelled

    def unless_cancelled(self, call):
        frames = traceback.extract_stack()
        start = next(i for i, f in enumerate(frames) if f.name == "run_and_show" and f.filename.endswith("run_cmd.py"))
        chains.append([f"{Path(f.filename).stem}.{f.name}" for f in frames[start:]] + ["connector.complete"])
        return original(self, call)

    monkeypatch.setattr(Budget, "unless_cancelled", unless_cancelled)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLM_HOME", str(tmp_path / "home"))
    (tmp_path / "s.json").write_text(json.dumps({"responses": ["FINAL(1)"]}))
    from rlm_host.cli.main import run

    monkeypatch.setattr(sys, "argv", ["rlm", "run", "q", "--model", "scripted:s.json", "--sandbox", "process", "-q"])
    with pytest.raises(SystemExit) as exit_:
        run()
    assert exit_.value.code in (0, None)
    assert chains and "client.completion" in chains[0], chains
    assert len(chains[0]) <= 10, chains[0]
