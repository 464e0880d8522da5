"""A two-step DSPy program: write a search query, search, then answer from the passages found."""

import dspy


class GenerateSearchQuery(dspy.Signature):
    """Write a short search query that would find the facts needed to answer the question."""

    question: str = dspy.InputField(desc="the user's question")
    query: str = dspy.OutputField(desc="a short keyword search query")


class AnswerFromPassages(dspy.Signature):
    """Answer the question using only the passages."""

    question: str = dspy.InputField(desc="the user's question")
    passages: list[str] = dspy.InputField(desc="passages returned by the search, most relevant first")
    answer: str = dspy.OutputField(desc="a short factual answer")


class SearchThenAnswer(dspy.Module):
    """Generates a query, searches with it, answers from the passages."""

    def __init__(self, search, k=3):
        super().__init__()
        self.search = search
        self.k = k
        self.generate_query = dspy.Predict(GenerateSearchQuery)
        self.generate_answer = dspy.ChainOfThought(AnswerFromPassages)

    def forward(self, question):
        query = self.generate_query(question=question).query
        passages = self.search(query, self.k)
        answered = self.generate_answer(question=question, passages=passages)
        return dspy.Prediction(query=query, passages=passages, answer=answered.answer, reasoning=answered.reasoning)
