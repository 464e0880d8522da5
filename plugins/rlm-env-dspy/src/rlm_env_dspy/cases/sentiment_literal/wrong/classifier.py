"""Sentiment classification with DSPy: a Literal-typed label and a confidence threshold."""

import dspy


class ClassifySentiment(dspy.Signature):
    """Classify the sentiment expressed by the text."""

    text: str = dspy.InputField(desc="a short review or message")
    sentiment: str = dspy.OutputField(desc="the overall sentiment: positive, negative or neutral")
    confidence: float = dspy.OutputField(desc="how sure the label is, between 0 and 1")


class SentimentClassifier(dspy.Module):
    """Predicts a sentiment label; labels below the confidence threshold become 'neutral'."""

    def __init__(self, threshold=0.5):
        super().__init__()
        self.threshold = threshold
        self.classify = dspy.Predict(ClassifySentiment)

    def forward(self, text):
        result = self.classify(text=text)
        sentiment = result.sentiment if result.confidence >= self.threshold else "neutral"
        return dspy.Prediction(sentiment=sentiment, confidence=result.confidence)
