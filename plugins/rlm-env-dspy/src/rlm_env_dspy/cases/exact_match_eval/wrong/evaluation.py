"""An exact-match metric and a hand-written evaluation loop for DSPy programs."""

import dspy


def normalize(text: str) -> str:
    """Lower-case, collapse whitespace, strip, then drop trailing '.', '!' and '?'."""
    return " ".join(str(text).lower().split()).rstrip(".!?")


def exact_match(example, prediction, trace=None) -> bool:
    """Whether the prediction's answer equals the example's answer once both are normalised."""
    return normalize(example.answer) == normalize(prediction.answer)


def evaluate(program, devset, metric=exact_match) -> float:
    """The fraction (0.0-1.0) of ``devset`` examples for which ``metric`` holds; a raising example is wrong."""
    if not devset:
        return 0.0
    correct = 0
    for index in range(1, len(devset)):
        example = devset[index]
        try:
            prediction = program(**example.inputs())
            if metric(example, prediction):
                correct += 1
        except Exception:
            continue
    return correct / len(devset)


DEVSET = [
    dspy.Example(question="What is the capital of France?", answer="Paris").with_inputs("question"),
    dspy.Example(question="How many legs does a spider have?", answer="8").with_inputs("question"),
    dspy.Example(question="Which planet is known as the Red Planet?", answer="Mars").with_inputs("question"),
]
