"""The authors' records (``rlm.core.types``) and logger as this layer makes them: the dict forms their code and
their visualiser read, round trips, and what is left out."""

from __future__ import annotations

import json

import pytest

from rlm_compat_rlms.core.types import (
    CodeBlock,
    ModelUsageSummary,
    QueryMetadata,
    REPLResult,
    RLMChatCompletion,
    RLMIteration,
    RLMMetadata,
    UsageSummary,
)
from rlm_compat_rlms.logger import RLMLogger


def test_usage_round_trips_and_totals_count_only_known_costs():
    usage = UsageSummary({"a": ModelUsageSummary(2, 10, 4, 0.5), "b": ModelUsageSummary(1, 3, 1)})
    data = usage.to_dict()
    assert data == {"model_usage_summaries": {"a": {"total_calls": 2, "total_input_tokens": 10,
                                                    "total_output_tokens": 4, "total_cost": 0.5},
                                              "b": {"total_calls": 1, "total_input_tokens": 3,
                                                    "total_output_tokens": 1}},
                    "total_cost": 0.5}
    assert UsageSummary.from_dict(data) == usage
    assert (usage.total_input_tokens, usage.total_output_tokens) == (13, 5)
    assert UsageSummary({"b": ModelUsageSummary(1, 3, 1)}).total_cost is None


def test_a_completion_dict_holds_metadata_and_error_only_when_set_and_never_the_run():
    usage = UsageSummary({"m": ModelUsageSummary(1, 1, 1)})
    plain = RLMChatCompletion("m", "p", "r", usage, 0.5, run=object())
    assert set(plain.to_dict()) == {"root_model", "prompt", "response", "usage_summary", "execution_time"}
    full = RLMChatCompletion("m", "p", "r", usage, 0.5, metadata={"iterations": []}, error="boom")
    again = RLMChatCompletion.from_dict(json.loads(json.dumps(full.to_dict())))
    assert again == full and again.metadata == {"iterations": []} and again.error == "boom"


def test_blocks_and_iterations_serialise_their_values_for_a_log():
    result = REPLResult("out", "", {"n": 3, "f": len, "mod": json}, 0.25, final_answer="3")
    iteration = RLMIteration([{"role": "user", "content": "q"}], "reply", [CodeBlock("n = 3", result)], "3", 1.5)
    data = json.loads(json.dumps(iteration.to_dict()))
    assert data["code_blocks"][0]["result"]["locals"] == {"n": 3, "f": "<builtin_function_or_method 'len'>",
                                                           "mod": "<module 'json'>"}
    assert data["final_answer"] == "3" and data["iteration_time"] == 1.5 and "stdout=out" in str(result)


@pytest.mark.parametrize(("prompt", "kind", "lengths"), [
    ("hello", "str", [5]), (["ab", "cde"], "list", [2, 3]), ({"a": "xy", "b": [1]}, "dict", [2, 3]),
    ([{"role": "user", "content": "hey"}], "list", [3]), ([], "list", [0]),
])
def test_query_metadata_measures_each_part(prompt, kind, lengths):
    meta = QueryMetadata(prompt)
    assert (meta.context_type, meta.context_lengths, meta.context_total_length) == (kind, lengths, sum(lengths))


def test_query_metadata_refuses_what_is_no_prompt():
    with pytest.raises(ValueError, match="Invalid prompt type"):
        QueryMetadata(3.5)


def test_the_logger_keeps_one_configuration_and_each_completions_iterations(tmp_path):
    logger = RLMLogger()
    assert logger.get_trajectory() is None and logger.log_file_path is None
    meta = RLMMetadata("m", 1, 30, "openai", {"model_name": "m"}, "local", {})
    logger.log_metadata(meta)
    logger.log_metadata(RLMMetadata("other", 2, 5, "anthropic", {}, "docker", {}))  # the first one stays
    logger.log(RLMIteration("p", "r", []))
    assert logger.get_trajectory()["run_metadata"]["root_model"] == "m" and logger.iteration_count == 1
    logger.clear_iterations()
    assert logger.get_trajectory()["iterations"] == []

    on_disk = RLMLogger(log_dir=str(tmp_path / "logs"), file_name="run")
    on_disk.log_metadata(meta)
    on_disk.log(RLMIteration("p", "r", []))
    path = on_disk.log_file_path
    assert path.startswith(str(tmp_path / "logs" / "run_")) and path.endswith(".jsonl")
    lines = [json.loads(line) for line in open(on_disk.log_file_path, encoding="utf-8")]
    assert [(line["type"], line.get("iteration")) for line in lines] == [("metadata", None), ("iteration", 1)]
