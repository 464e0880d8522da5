"""Hidden tests of the qa_chain_of_thought case: run offline from the project folder (DummyLM, no network)."""

import importlib
import os
import sys

import dspy
import pytest
from dspy.utils import DummyLM

sys.path.insert(0, os.getcwd())

CONTEXT = "Paris is the capital and largest city of France."
QUESTION = "What is the capital of France?"


@pytest.fixture(scope="module")
def qa():
    return importlib.import_module("qa")


def test_signature_has_exactly_the_asked_fields(qa):
    assert issubclass(qa.AnswerQuestion, dspy.Signature)
    assert list(qa.AnswerQuestion.input_fields) == ["context", "question"]
    assert list(qa.AnswerQuestion.output_fields) == ["answer"]


def test_fields_are_typed_str_and_described(qa):
    fields = {**qa.AnswerQuestion.input_fields, **qa.AnswerQuestion.output_fields}
    for name, field in fields.items():
        assert field.annotation is str, name
        desc = (field.json_schema_extra or {}).get("desc", "")
        assert desc and desc != "${" + name + "}", f"{name} has no desc="


def test_signature_has_a_docstring(qa):
    assert (qa.AnswerQuestion.__doc__ or "").strip()
    assert not qa.AnswerQuestion.instructions.startswith("Given the fields")


def test_program_is_a_module_with_forward(qa):
    program = qa.QAProgram()
    assert isinstance(program, dspy.Module)
    assert "forward" in vars(qa.QAProgram)


def test_program_uses_chain_of_thought(qa):
    program = qa.QAProgram()
    assert isinstance(program.generate, dspy.ChainOfThought)
    predictors = [predictor for _, predictor in program.named_predictors()]
    assert len(predictors) == 1
    outputs = list(predictors[0].signature.output_fields)
    assert outputs == ["reasoning", "answer"]
    assert list(predictors[0].signature.input_fields) == ["context", "question"]


def test_forward_returns_a_prediction_with_reasoning_and_answer(qa):
    lm = DummyLM([{"reasoning": "The context says Paris is the capital.", "answer": "Paris"}])
    with dspy.context(lm=lm):
        prediction = qa.QAProgram()(context=CONTEXT, question=QUESTION)
    assert isinstance(prediction, dspy.Prediction)
    assert prediction.answer == "Paris"
    assert prediction.reasoning == "The context says Paris is the capital."
    prompt = lm.history[-1]["messages"][-1]["content"]
    assert CONTEXT in prompt and QUESTION in prompt


def test_importing_qa_configures_no_lm(qa):
    assert dspy.settings.lm is None
