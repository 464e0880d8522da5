"""Hidden tests of the exact_match_eval case: run offline from the project folder (no LM, or DummyLM)."""

import importlib
import os
import sys

import dspy
import pytest
from dspy.utils import DummyLM

sys.path.insert(0, os.getcwd())

ANSWERS = {"capital of France": "Paris", "2 + 2": "4", "largest ocean": "Pacific", "author of Hamlet": "Marlowe"}


@pytest.fixture(scope="module")
def ev():
    return importlib.import_module("evaluation")


@pytest.fixture
def no_dspy_evaluate(monkeypatch):
    """dspy.Evaluate must not be used: any use of it fails the test."""

    class Forbidden:
        def __init__(self, *args, **kwargs):
            raise AssertionError("dspy.Evaluate was used; the task asks for a hand-written loop")

    monkeypatch.setattr(dspy, "Evaluate", Forbidden)
    monkeypatch.setattr(dspy.evaluate, "Evaluate", Forbidden)


class LookupProgram(dspy.Module):
    """A deterministic program without an LM: answers from ANSWERS by question substring."""

    def forward(self, question):
        for key, answer in ANSWERS.items():
            if key in question:
                return dspy.Prediction(answer=answer)
        raise ValueError("unknown question: " + question)


def make_devset():
    return [
        dspy.Example(question="What is the capital of France?", answer=" paris. ").with_inputs("question"),
        dspy.Example(question="What is 2 + 2?", answer="4").with_inputs("question"),
        dspy.Example(question="What is the largest ocean?", answer="The Pacific").with_inputs("question"),
        dspy.Example(question="Who is the author of Hamlet?", answer="Shakespeare").with_inputs("question"),
    ]


@pytest.mark.parametrize("raw, expected", [
    ("  The  Eiffel Tower. ", "the eiffel tower"), ("Yes?!", "yes"), ("PARIS", "paris"),
    ("a\tb\n c", "a b c"), ("3.5", "3.5"), ("", ""),
])
def test_normalize(ev, raw, expected):
    assert ev.normalize(raw) == expected


def test_exact_match(ev):
    example = dspy.Example(question="q", answer="Paris.").with_inputs("question")
    assert ev.exact_match(example, dspy.Prediction(answer="  paris")) is True
    assert ev.exact_match(example, dspy.Prediction(answer="Lyon")) is False
    assert ev.exact_match(example, dspy.Prediction(answer="paris"), trace=[]) is True


def test_evaluate_counts_every_example(ev, no_dspy_evaluate):
    # right: 1st (normalised), 2nd; wrong: 3rd ("pacific" vs "the pacific"), 4th
    assert ev.evaluate(LookupProgram(), make_devset()) == pytest.approx(0.5)


def test_evaluate_first_example_counts(ev, no_dspy_evaluate):
    devset = make_devset()[:1] + make_devset()[3:]  # right, wrong
    assert ev.evaluate(LookupProgram(), devset) == pytest.approx(0.5)
    assert ev.evaluate(LookupProgram(), make_devset()[:1]) == pytest.approx(1.0)


def test_evaluate_empty_devset(ev, no_dspy_evaluate):
    assert ev.evaluate(LookupProgram(), []) == 0.0


def test_evaluate_counts_a_raising_program_as_wrong(ev, no_dspy_evaluate):
    devset = make_devset()[:2] + [dspy.Example(question="Unknown?", answer="x").with_inputs("question")]
    assert ev.evaluate(LookupProgram(), devset) == pytest.approx(2 / 3)


def test_evaluate_uses_the_given_metric(ev, no_dspy_evaluate):
    calls = []

    def always(example, prediction, trace=None):
        calls.append(example.question)
        return True

    assert ev.evaluate(LookupProgram(), make_devset(), metric=always) == pytest.approx(1.0)
    assert len(calls) == 4


def test_evaluate_a_dspy_predictor_with_dummy_lm(ev, no_dspy_evaluate):
    lm = DummyLM({"capital of France": {"answer": "Paris"}, "2 + 2": {"answer": "5"}})
    devset = make_devset()[:2]
    with dspy.context(lm=lm):
        score = ev.evaluate(dspy.Predict("question -> answer"), devset)
    assert score == pytest.approx(0.5)


def test_devset(ev):
    assert len(ev.DEVSET) >= 3
    for example in ev.DEVSET:
        assert isinstance(example, dspy.Example)
        assert set(example.inputs().keys()) == {"question"}
        assert example.answer and example.question
