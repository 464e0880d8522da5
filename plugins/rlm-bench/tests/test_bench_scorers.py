"""Every scorer, and the LLM judge: prompts per question type, verdict parsing, resumable judging of a file."""

from __future__ import annotations

import json

import pytest

from rlm_bench.judge import build_prompt, judge_answer, judge_predictions, parse_label, question_type
from rlm_bench.scorers import ScorerError, canonical, choice_letter, normalize, parse_number, score
from rlm_host.testing import ScriptedConnector


@pytest.mark.parametrize("name, prediction, expected, value", [
    ("exact", " Kasrin ", "Kasrin", 1.0),
    ("exact", "kasrin", "Kasrin", 0.0),
    ("exact", "b", ["a", "b"], 1.0),
    ("normalized_exact", "The Elmorpe.", "elmorpe", 1.0),
    ("normalized_exact", "Elmorpe city", "Elmorpe", 0.0),
    ("normalised_exact", "dspy.Predict", "dspy.predict", 1.0),
    ("contains", "The number is 4217.", "4217", 1.0),
    ("contains", "The number is 42170.", "4217", 0.0),
    ("contains", "It was Lumgor Ithgallo, I think", ["nobody", "lumgor ithgallo"], 1.0),
    ("contains", None, "x", 0.0),
    ("numeric", "42", 42, 1.0),
    ("numeric", "There are 1,236 records.", 1234, 0.75 ** 2),
    ("numeric", "Out of 500 records, the answer is 40", 42, 0.75 ** 2),
    ("numeric", "none of them", 3, 0.0),
    ("numeric", "7", 10, 0.75 ** 3),
    ("set_f1", "(1, 2), (4,3)", [[1, 2], [3, 4]], 1.0),
    ("set_f1", "(1, 2), (3, 4), (5, 6)", [[1, 2], [3, 4]], 0.8),
    ("set_f1", "", [], 1.0),
    ("set_f1", "answer, confidence", ["answer", "confidence"], 1.0),
    ("set_f1", '["answer"]', ["answer", "confidence"], 2 / 3),
    ("f1", "x", ["answer"], 0.0),
    ("multiple_choice", "B) 177", "B", 1.0),
    ("mcq", "The answer is (c).", "C", 0.0),
    ("choice", "I think option C", "C", 1.0),
    ("multiple_choice", "no idea", "A", 0.0),
    ("oolong", "51", 51, 1.0),
    ("oolong", "49", 51, 0.75 ** 2),
    ("oolong", "Location", "location", 1.0),
])
def test_scorers(name, prediction, expected, value):
    result = score(name, prediction, expected)
    assert result.value == pytest.approx(value)
    assert result.correct == (value == 1.0)
    assert 0.0 <= result.value <= 1.0


def test_helpers():
    assert normalize("  The  Quick, brown FOX!") == "quick brown fox"
    assert parse_number("Answer: 1,204.") == 1204 and parse_number(12) == 12.0 and parse_number("n/a") is None
    assert [choice_letter(p) for p in ("B", "(b)", "Answer: D", "A good guess is C.", "b 17", "nothing")] == \
        ["B", "B", "D", "C", None, None]
    assert canonical("Normalised-Exact") == "normalized_exact" and canonical("llm_judge") == "judge"
    with pytest.raises(ScorerError, match="unknown scorer 'fuzzy'"):
        canonical("fuzzy")
    with pytest.raises(ScorerError, match="needs a model"):
        score("judge", "x", "y")


# ---------------------------------------------------------------- the judge


def test_question_type_prompts():
    assert question_type("temporal_reasoning") == "temporal-reasoning"
    assert question_type("single-session-preference") == "single-session-preference"
    assert question_type("multi-session") == "generic" and question_type(None) == "generic"
    temporal = build_prompt("temporal-reasoning", "How many days?", "19 days", "18 days")
    assert "off-by-one" in temporal and "Correct answer: 19 days" in temporal and "Model response: 18 days" in temporal
    assert "latest value" in build_prompt("knowledge-update", "q", "a", "r")
    assert "Rubric: likes tea" in build_prompt("single-session-preference", "q", "likes tea", "r")
    assert "decline" in build_prompt("abstention", "q", "a", "r")
    assert all(p.rstrip().endswith("Answer yes or no only.") for p in
               (build_prompt(k, "q", "a", "r") for k in ("generic", "temporal-reasoning",
                                                         "knowledge-update")))


def test_parse_label():
    assert parse_label("Yes.") is True and parse_label("no, it is wrong") is False
    assert parse_label("The response is correct: yes") is True and parse_label("unsure") is None


def test_judge_answer_asks_the_model():
    model = ScriptedConnector.from_responses([], rules=[{"match": "Correct answer: Paris", "text": "yes"}],
                                             name="scripted:judge")
    verdict = judge_answer(model, "Capital of France?", "Paris", "It is Paris.", "generic")
    assert verdict.label is True and verdict.model == "scripted:judge" and verdict.parsed
    assert "Question: Capital of France?" in model.calls[0][0]["content"]


def test_judge_predictions_resumes_and_tallies(tmp_path):
    reference = tmp_path / "ref.json"
    reference.write_text(json.dumps([
        {"question_id": "q1", "question": "Where?", "answer": "Paris", "question_type": "single-session-user"},
        {"question_id": "q2", "question": "How long?", "answer": "19 days", "question_type": "temporal-reasoning"},
        {"question_id": "q3", "question": "Now?", "answer": "blue", "question_type": "knowledge-update"},
    ]))
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text("\n".join(json.dumps(r) for r in [
        {"question_id": "q1", "hypothesis": "Paris"}, {"question_id": "q2", "hypothesis": "18 days"},
        {"question_id": "q3", "hypothesis": "red"}, {"question_id": "q9", "hypothesis": "?"},
    ]))
    output = tmp_path / "out.jsonl"
    rules = [{"match": "Model response: (Paris|18 days)", "text": "yes"}, {"match": "Model response:", "text": "no"}]
    # first attempt: the judge fails on the third question (as a crash would stop it)
    failing = ScriptedConnector.from_responses([], rules=rules[:1] + [{"match": "red", "error": "server down"}],
                                               name="scripted:j")
    with pytest.raises(Exception, match="server down"):
        judge_predictions(predictions, reference, output, failing)
    assert len(output.read_text().splitlines()) == 2
    judge = ScriptedConnector.from_responses([], rules=rules, name="scripted:j")
    report = judge_predictions(predictions, reference, output, judge)
    assert report.judged == 1 and report.skipped == 2 and report.missing_reference == ["q9"]
    assert len(judge.calls) == 1  # only q3 was judged again
    assert report.total == 3 and report.accuracy == pytest.approx(2 / 3)
    assert report.by_type == {"generic": 1.0, "knowledge-update": 0.0, "temporal-reasoning": 1.0}
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert rows[0]["autoeval_label"] == {"model": "scripted:j", "label": True, "raw": "yes"}
    assert rows[1]["hypothesis"] == "18 days"  # the prediction is kept with its label
