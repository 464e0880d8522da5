"""``RLM.completion(..., carry=VariableCarrier(...))``: a front door keeps the REPL's JSON variables from one run
to the next (what chat sessions do), through the real engine, a scripted model and the process sandbox."""

from __future__ import annotations

import json
from pathlib import Path

from rlm_host import RLM
from rlm_host.sdk.embedding import VariableCarrier


def script(path: Path, replies: list) -> str:
    path.write_text(json.dumps({"responses": replies}))
    return f"scripted:{path}"


def test_a_carrier_binds_its_variables_and_reads_the_new_ones_back(rlm_isolated):
    here = rlm_isolated.work
    carrier = VariableCarrier({"total": 41})
    first = RLM(script(here / "a.json", ["```repl\nanswer = total + 1\nlabels = ['a', 'b']\nhelper = len\n```",
                                         "FINAL_VAR('answer')"]), sandbox="process")
    result = first.completion("some context", "Add one.", carry=carrier)
    assert result.final_response == "42", result.error
    assert carrier.saved == {"total": 41, "answer": 42, "labels": ["a", "b"]}
    assert carrier.dropped == ["helper (builtin_function_or_method)"]  # not JSON data: named, not carried

    second = RLM(script(here / "b.json", ["```repl\nprint(answer * 2, labels)\n```", "FINAL(done)"]),
                 sandbox="process")
    carried = VariableCarrier(carrier.saved)
    result = second.completion("some context", "Double it.", carry=carried)
    step = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()
            if json.loads(line)["type"] == "step"][0]
    assert step["data"]["observation"]["blocks"][0]["stdout"].strip() == "84 ['a', 'b']"


def test_without_a_carrier_nothing_is_kept(rlm_isolated):
    here = rlm_isolated.work
    rlm = RLM(script(here / "c.json", ["```repl\nprint(total)\n```", "FINAL(none)"]), sandbox="process")
    result = rlm.completion("some context", "Is total there?")
    step = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()
            if json.loads(line)["type"] == "step"][0]
    assert "NameError" in step["data"]["observation"]["blocks"][0]["error"]
