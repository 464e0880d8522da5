"""Hidden tests of the fix_summarizer case: run offline from the project folder (DummyLM, no network)."""

import importlib
import os
import sys

import dspy
import pytest
from dspy.utils import DummyLM

sys.path.insert(0, os.getcwd())

DOCUMENT = "DSPy is a framework for programming language models. " * 5


@pytest.fixture(scope="module")
def summarizer():
    return importlib.import_module("summarizer")


def run(summarizer, lm_summary, max_sentences=2, reasoning="It is about DSPy."):
    lm = DummyLM([{"reasoning": reasoning, "summary": lm_summary}])
    with dspy.context(lm=lm):
        return summarizer.Summarizer(max_sentences=max_sentences)(document=DOCUMENT)


def test_signature_fields(summarizer):
    signature = summarizer.Summarize
    assert list(signature.input_fields) == ["document", "max_sentences"]
    assert list(signature.output_fields) == ["summary"]
    assert signature.input_fields["max_sentences"].annotation is int
    assert signature.output_fields["summary"].annotation is str
    assert (signature.__doc__ or "").strip()


def test_module_structure(summarizer):
    program = summarizer.Summarizer(max_sentences=3)
    assert isinstance(program, dspy.Module)
    assert program.max_sentences == 3
    assert isinstance(program.summarize, dspy.ChainOfThought)


def test_summary_keeps_max_sentences(summarizer):
    prediction = run(summarizer, "One is first. Two follows! Three ends? Four is extra.", max_sentences=2)
    assert isinstance(prediction, dspy.Prediction)
    assert prediction.summary == "One is first. Two follows!"


def test_summary_of_one_sentence(summarizer):
    assert run(summarizer, "Alpha. Beta. Gamma.", max_sentences=1).summary == "Alpha."


def test_short_summary_is_kept_whole(summarizer):
    assert run(summarizer, "Only  one sentence here.", max_sentences=3).summary == "Only  one sentence here."
    assert run(summarizer, "First. Second.", max_sentences=2).summary == "First. Second."


def test_reasoning_is_passed_through(summarizer):
    assert run(summarizer, "A. B.", reasoning="Because of the text.").reasoning == "Because of the text."


def test_default_budget_is_two(summarizer):
    lm = DummyLM([{"reasoning": "r", "summary": "A. B. C."}])
    with dspy.context(lm=lm):
        assert summarizer.Summarizer()(document=DOCUMENT).summary == "A. B."
    prompt = lm.history[-1]["messages"][-1]["content"]
    assert "DSPy is a framework" in prompt


def test_split_sentences_unchanged(summarizer):
    assert summarizer.split_sentences(" A b. C d! E f? G ") == ["A b.", "C d!", "E f?", "G"]
    assert summarizer.split_sentences("3.5 is a number. Yes.") == ["3.5 is a number.", "Yes."]
