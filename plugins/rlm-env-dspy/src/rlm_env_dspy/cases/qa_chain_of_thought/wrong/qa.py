"""Question answering over a given context with DSPy: a typed signature and a predictor module."""

import dspy


class AnswerQuestion(dspy.Signature):
    """Answer the question using only the information in the context."""

    context: str = dspy.InputField(desc="the text that contains the answer")
    question: str = dspy.InputField(desc="the question to answer")
    answer: str = dspy.OutputField(desc="a short factual answer, a few words at most")


class QAProgram(dspy.Module):
    """Answers from the context."""

    def __init__(self):
        super().__init__()
        self.generate = dspy.Predict(AnswerQuestion)

    def forward(self, context: str, question: str) -> dspy.Prediction:
        return self.generate(context=context, question=question)
