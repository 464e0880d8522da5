"""Hidden tests of the sentiment_literal case: run offline from the project folder (DummyLM, no network)."""

import importlib
import os
import sys
import typing

import dspy
import pytest
from dspy.utils import DummyLM

sys.path.insert(0, os.getcwd())


@pytest.fixture(scope="module")
def classifier():
    return importlib.import_module("classifier")


def classify(classifier, sentiment, confidence, **options):
    # the same answer several times: when a reply does not parse, DSPy retries with its JSON adapter
    lm = DummyLM([{"sentiment": sentiment, "confidence": confidence}] * 3)
    with dspy.context(lm=lm):
        return classifier.SentimentClassifier(**options)(text="The service was fine, the food superb.")


def test_signature_fields(classifier):
    signature = classifier.ClassifySentiment
    assert list(signature.input_fields) == ["text"]
    assert list(signature.output_fields) == ["sentiment", "confidence"]
    assert signature.output_fields["confidence"].annotation is float
    assert (signature.__doc__ or "").strip()


def test_sentiment_is_a_literal(classifier):
    annotation = classifier.ClassifySentiment.output_fields["sentiment"].annotation
    assert typing.get_origin(annotation) is typing.Literal
    assert sorted(typing.get_args(annotation)) == ["negative", "neutral", "positive"]


def test_module_structure(classifier):
    program = classifier.SentimentClassifier()
    assert isinstance(program, dspy.Module)
    assert program.threshold == 0.5
    assert isinstance(program.classify, dspy.Predict)


def test_confident_label_is_kept(classifier):
    prediction = classify(classifier, "positive", "0.9")
    assert isinstance(prediction, dspy.Prediction)
    assert prediction.sentiment == "positive"
    assert prediction.confidence == pytest.approx(0.9)


def test_low_confidence_becomes_neutral(classifier):
    assert classify(classifier, "negative", "0.2").sentiment == "neutral"


def test_threshold_is_configurable_and_inclusive(classifier):
    assert classify(classifier, "negative", "0.2", threshold=0.1).sentiment == "negative"
    assert classify(classifier, "negative", "0.5").sentiment == "negative"  # equal to the threshold: kept


def test_an_unknown_label_is_rejected(classifier):
    # DSPy raises (AdapterParseError) on a label outside the Literal; a module may also catch that itself,
    # but it must never pass the unknown label on
    try:
        prediction = classify(classifier, "ecstatic", "0.95")
    except Exception:
        return
    assert prediction.sentiment in ("positive", "negative", "neutral")
