"""Summarise a document in a bounded number of sentences with DSPy."""

import re

import dspy


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``: it is split after '.', '!' or '?' followed by whitespace."""
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part.strip()]


class Summarize(dspy.Signature):
    """Summarize the document in at most `max_sentences` sentences."""

    document: str = dspy.InputField(desc="the text to summarize")
    max_sentences: int = dspy.InputField(desc="the largest number of sentences the summary may have")
    summary: str = dspy.OutputField(desc="the summary, in plain sentences")


class Summarizer(dspy.Module):
    """Summarizes a document, then enforces the sentence budget."""

    def __init__(self, max_sentences: int = 2):
        super().__init__()
        self.max_sentences = max_sentences
        self.summarize = dspy.ChainOfThought(Summarize)

    def forward(self, document: str) -> dspy.Prediction:
        result = self.summarize(document=document, max_sentences=self.max_sentences)
        sentences = split_sentences(result.summary)
        kept = sentences[: self.max_sentences - 1]
        return dspy.Prediction(summary=" ".join(kept), reasoning=result.reasoning)
