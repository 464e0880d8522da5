"""Hidden tests of the query_then_answer case: run offline from the project folder (DummyLM, fake search)."""

import importlib
import os
import sys
import typing

import dspy
import pytest
from dspy.utils import DummyLM

sys.path.insert(0, os.getcwd())

QUESTION = "Which city is the capital of the country whose national anthem is La Marseillaise?"
PASSAGES = ["La Marseillaise is the national anthem of France.", "Paris is the capital of France."]


class FakeSearch:
    """Records every call; returns fixed passages (at most k)."""

    def __init__(self):
        self.calls = []

    def __call__(self, query, k):
        self.calls.append((query, k))
        return PASSAGES[:k]


@pytest.fixture(scope="module")
def pipeline():
    return importlib.import_module("pipeline")


def answers():
    return [{"query": "La Marseillaise anthem country capital"},
            {"reasoning": "The anthem is French; the capital of France is Paris.", "answer": "Paris"}]


def test_signatures(pipeline):
    assert list(pipeline.GenerateSearchQuery.input_fields) == ["question"]
    assert list(pipeline.GenerateSearchQuery.output_fields) == ["query"]
    assert list(pipeline.AnswerFromPassages.input_fields) == ["question", "passages"]
    assert list(pipeline.AnswerFromPassages.output_fields) == ["answer"]
    passages = pipeline.AnswerFromPassages.input_fields["passages"].annotation
    assert typing.get_origin(passages) is list and typing.get_args(passages) == (str,)  # list[str] or List[str]
    for signature in (pipeline.GenerateSearchQuery, pipeline.AnswerFromPassages):
        assert (signature.__doc__ or "").strip()
        for name, field in {**signature.input_fields, **signature.output_fields}.items():
            desc = (field.json_schema_extra or {}).get("desc", "")
            assert desc and desc != "${" + name + "}", f"{signature.__name__}.{name} has no desc="


def test_sub_modules(pipeline):
    program = pipeline.SearchThenAnswer(FakeSearch())
    assert isinstance(program, dspy.Module)
    assert isinstance(program.generate_query, dspy.Predict)
    assert isinstance(program.generate_answer, dspy.ChainOfThought)
    names = dict(program.named_predictors())
    assert len(names) == 2
    outputs = sorted(tuple(p.signature.output_fields) for p in names.values())
    assert outputs == [("query",), ("reasoning", "answer")]


def test_forward_searches_with_the_generated_query(pipeline):
    search = FakeSearch()
    with dspy.context(lm=DummyLM(answers())):
        prediction = pipeline.SearchThenAnswer(search)(question=QUESTION)
    assert search.calls == [("La Marseillaise anthem country capital", 3)]
    assert isinstance(prediction, dspy.Prediction)
    assert prediction.query == "La Marseillaise anthem country capital"


def test_forward_answers_from_the_passages(pipeline):
    lm = DummyLM(answers())
    with dspy.context(lm=lm):
        prediction = pipeline.SearchThenAnswer(FakeSearch())(question=QUESTION)
    assert prediction.passages == PASSAGES
    assert prediction.answer == "Paris"
    assert prediction.reasoning.startswith("The anthem is French")
    assert len(lm.history) == 2
    answer_prompt = lm.history[-1]["messages"][-1]["content"]
    assert PASSAGES[1] in answer_prompt and QUESTION in answer_prompt


def test_k_is_passed_to_the_search(pipeline):
    search = FakeSearch()
    with dspy.context(lm=DummyLM(answers())):
        prediction = pipeline.SearchThenAnswer(search, k=1)(question=QUESTION)
    assert [k for _, k in search.calls] == [1]
    assert prediction.passages == PASSAGES[:1]
