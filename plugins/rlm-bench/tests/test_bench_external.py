"""External pack files (presets blocks, pydantic-evals, Google ADK eval sets, plain records) keep their expected
answers; the built-in presets carry data and answers that agree with their generators."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rlm_host

from bench_data import DATA
from rlm_bench import packs
from rlm_bench.cases import BenchmarkCase, CaseError, ContextSpec, length_bucket
from rlm_bench.external import PackFileError, load_pack_file

SEEDS_PRESETS = ["dspy_reading_quick", "dspy_reading_extended", "generic_smoke", "pure_rlm_smoke", "pure_rlm_context",
                 "deep_recursion", "paradigm_comparison", "oolong_style", "browsecomp_style", "token_efficiency",
                 "dynamic_web_filtering"]


def by_id(preset):
    return {case.case_id: case for case in preset.cases}


def test_presets_block_with_files_generators_and_inline_values():
    presets = {p.name: p for p in load_pack_file(DATA / "presets.yaml")}
    assert set(presets) == {"station_quick", "second"}
    assert presets["station_quick"].description == "Questions about a station log"
    cases = by_id(presets["station_quick"])
    sensor = cases["sensor_day"]
    assert sensor.expected == "humidity probe" and sensor.scorer == "contains" and sensor.max_steps == 3
    assert sensor.context.kind == "file" and Path(sensor.context.path).is_absolute()
    ready = sensor.materialize()
    assert "humidity probe failed" in ready.context and ready.expected == "humidity probe"
    needle = cases["needle"].materialize()
    assert needle.scorer == "contains" and needle.expected.isdigit() and needle.task.startswith("What is the special")
    assert cases["readings"].expected == 9 and cases["readings"].context.value == [3, 9, 4]
    assert by_id(presets["second"])["just_one"].expected == "4"


def test_pydantic_evals_cases_keep_expected_output_and_evaluators():
    (preset,) = load_pack_file(DATA / "evals.yaml")
    assert preset.name == "capitals"
    cases = by_id(preset)
    first = cases["capital_velmora"]
    assert first.task == "What is the capital of Velmora?" and first.expected == "Kasrin"
    assert first.context.value.startswith("Velmora's capital") and first.scorer == "exact"
    assert first.tags == {"difficulty": "easy"}
    assert cases["capital_plain"].expected == "Delmar" and cases["capital_plain"].scorer == "contains"
    structured = cases["structured"]
    assert structured.expected == {"population": 1200}
    assert json.loads(structured.task) == {"city": "Corfi", "field": "population"}


def test_google_adk_eval_set_keeps_the_final_responses():
    (preset,) = load_pack_file(DATA / "adk.evalset.json")
    assert preset.name == "home_automation"
    cases = by_id(preset)
    multi = cases["turn_off_light"]
    assert multi.task == "Turn off the kitchen one. Which are still on?" and multi.expected == "Only the hall light."
    assert multi.context.value["history"] == ["user: Which lights are on?\nassistant: The kitchen and the hall lights."]
    assert multi.context.value["session_state"] == {"rooms": 4} and multi.tags == {"expected_tools": "set_device_info"}
    assert cases["single_turn"].expected == "Yes" and cases["single_turn"].context.kind == "none"


def test_plain_records_in_jsonl_and_items():
    (preset,) = load_pack_file(DATA / "records.jsonl")
    assert preset.name == "records"
    cases = by_id(preset)
    assert cases["lme_1"].expected == "19 days" and cases["lme_1"].scorer == "judge"
    assert cases["lme_1"].tags == {"question_type": "temporal-reasoning"}
    assert cases["lme_2"].task == "What colour is the bike now?" and cases["lme_2"].expected == "blue"
    assert cases["lme_2"].context.value.startswith("First the bike")
    assert cases["records_3"].expected == "hi" and cases["records_3"].task == "Say hi"
    (items,) = load_pack_file(DATA / "items.json")
    assert [(c.case_id, c.task, c.expected) for c in items.cases] == [("a", "1+1?", 2), ("b", "Spell cat", "cat")]


def test_every_expected_answer_survives(tmp_path):
    """Whatever the answer field is called, it is never dropped."""
    for key in ("expected", "expected_answer", "expected_output", "answer", "answers", "reference", "target", "label",
                "gold", "ground_truth"):
        path = tmp_path / f"{key}.jsonl"
        path.write_text(json.dumps({"id": "x", "question": "q?", key: ["v", 1]}) + "\n")
        assert load_pack_file(path)[0].cases[0].expected == ["v", 1], key


def test_bad_pack_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("presets:\n  p:\n    - case_id: a\n      max_steps: 0\n      task: t\n")
    with pytest.raises(PackFileError, match=r"preset 'p', case 1 \(a\): max_steps"):
        load_pack_file(bad)
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "task": "t"}\n{"id": "a", "task": "u"}\n')
    with pytest.raises(PackFileError, match="appears twice"):
        load_pack_file(dup)
    notask = tmp_path / "notask.json"
    notask.write_text('[{"id": "a", "answer": 1}]')
    with pytest.raises(PackFileError, match="needs a task"):
        load_pack_file(notask)
    with pytest.raises(PackFileError, match="cannot read pack file"):
        load_pack_file(tmp_path / "missing.yaml")


# ---------------------------------------------------------------- cases and the built-in presets


def test_case_model_is_frozen_and_validated():
    case = BenchmarkCase(case_id="c", task="t", expected=1, scorer="Numeric", options={"max_depth": 3})
    assert case.scorer == "numeric"
    with pytest.raises(Exception):
        case.task = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown run option"):
        BenchmarkCase(case_id="c", task="t", options={"model": "x"})
    with pytest.raises(ValueError, match="generator must be one of"):
        ContextSpec(kind="generator", generator="haystack")


def test_a_pinned_answer_that_disagrees_with_the_generator_is_refused():
    case = BenchmarkCase(case_id="c", context=ContextSpec.generated("niah", tokens=256, seed=1), expected="0000000")
    with pytest.raises(CaseError, match="differs from the generator"):
        case.materialize()


def test_length_buckets():
    assert [length_bucket(t) for t in (100, 8191, 8300, 32768, 131072, 1_048_576, 1_100_000)] == \
        ["8K", "8K", "16K", "32K", "128K", "1M", ">1M"]


def test_builtin_presets_have_the_seeds_names_and_register_as_pack_specs():
    specs = packs.builtin_pack_specs()
    assert [s.name for s in specs] == SEEDS_PRESETS
    assert all(s.kind == "benchmark" and s.load() is getattr(packs, s.name) for s in specs)
    sizes = {name: len(getattr(packs, name)()) for name in SEEDS_PRESETS}
    assert sizes == {"dspy_reading_quick": 3, "dspy_reading_extended": 5, "generic_smoke": 2, "pure_rlm_smoke": 3,
                     "pure_rlm_context": 4,
                     "deep_recursion": 3, "paradigm_comparison": 8, "oolong_style": 4, "browsecomp_style": 3,
                     "token_efficiency": 3, "dynamic_web_filtering": 3}


PACKS_UNDER_TEST = """
from rlm_host import BenchmarkPackSpec, hookimpl


@hookimpl
def rlm_register_benchmark_packs():
    return [BenchmarkPackSpec("dict-pack", "cases given as dicts", lambda settings, services: [{"case_id": "a", "task": "t", "expected": 1}]),
            BenchmarkPackSpec("typo-pack", "a case with a wrong field", lambda settings, services: [{"case_id": "a", "task": "t", "answr": 1}]),
            BenchmarkPackSpec("bad-pack", "a factory that raises", lambda settings, services: 1 / 0)]
"""  # noqa: E501


def test_plugin_packs_may_return_dicts_and_a_failing_one_is_listed_as_broken(tmp_path, rlm_plugin_host, monkeypatch):
    from rlm_bench.catalog import find_preset, list_presets

    (tmp_path / "packs_under_test.py").write_text(PACKS_UNDER_TEST)
    monkeypatch.syspath_prepend(str(tmp_path))
    host = rlm_plugin_host(modules=["packs_under_test"])  # an unpackaged hook module, loaded by name
    presets = {p.name: p for p in list_presets(host, [DATA / "records.jsonl"])}
    assert set(presets) == {"dict-pack", "typo-pack", "bad-pack", "records"}
    assert presets["bad-pack"].source == "error" and "ZeroDivisionError" in presets["bad-pack"].description
    assert find_preset("dict-pack", host).cases[0].expected == 1
    with pytest.raises(rlm_host.PluginError, match="returned an invalid case"):
        find_preset("typo-pack", host)
    with pytest.raises(rlm_host.PluginError, match="failed to build its cases"):
        find_preset("bad_pack", host)
    assert find_preset("records", host, [DATA / "records.jsonl"]).source.endswith("records.jsonl")
