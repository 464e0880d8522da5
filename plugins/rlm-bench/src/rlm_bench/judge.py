"""An LLM judge: a yes/no verdict on whether a response answers a question, with question-type prompts.

The prompts follow the reference system's question types (LongMemEval's): ``temporal-reasoning`` (off-by-one
day counts tolerated), ``knowledge-update`` (the latest value must be the one given), ``single-session-preference``
(a rubric of what a personalised answer needs), ``abstention`` (the right answer is to decline), and ``generic``.

:func:`judge_predictions` judges a predictions file against a reference file by ``question_id`` and appends each
prediction with ``autoeval_label: {model, label, raw}`` to a results file as it goes; run again, it skips the
ids already judged, so an interrupted judging resumes. The benchmark runner uses :func:`judge_answer` for cases
whose scorer is ``judge``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional

from pydantic import BaseModel, Field

from rlm_host import RlmError
from rlm_host.sdk.models import ModelConnector

_HEAD = (
    "I will give you a question, the correct answer, and a response from a model. Answer yes if the response "
    "contains the correct answer or an equivalent of it, otherwise answer no. A response that gives only part of "
    "what the correct answer requires is not correct."
)
_TAIL = "\n\nQuestion: {question}\n\nCorrect answer: {answer}\n\nModel response: {response}\n\n{ask}"
_ASK = "Is the model response correct? Answer yes or no only."

PROMPTS: dict[str, str] = {
    "generic": _HEAD + _TAIL,
    "temporal-reasoning": _HEAD + (
        " Do not penalise an off-by-one error in a number of days, weeks or months: 18 days where 19 are "
        "expected is still correct."
    ) + _TAIL,
    "knowledge-update": _HEAD + (
        " The information in the question changed over time and the correct answer is the latest value. A response "
        "that mentions older values as well is correct as long as the answer it gives is the updated one."
    ) + _TAIL,
    "single-session-preference": (
        "I will give you a question, a rubric describing the personalised response the user wants, and a response "
        "from a model. Answer yes if the response satisfies the rubric, recalling and using the user's own "
        "information correctly; it does not need to cover every point of the rubric. Otherwise answer no."
        "\n\nQuestion: {question}\n\nRubric: {answer}\n\nModel response: {response}\n\n"
        "Does the model response satisfy the rubric? Answer yes or no only."
    ),
    "abstention": (
        "I will give you a question that cannot be answered from the information available, an explanation of why, "
        "and a response from a model. Answer yes if the model says it cannot answer or that the information is "
        "missing, and no if it gives an answer anyway."
        "\n\nQuestion: {question}\n\nExplanation: {answer}\n\nModel response: {response}\n\n"
        "Does the model correctly decline to answer? Answer yes or no only."
    ),
}
_TYPE_ALIASES = {"temporal": "temporal-reasoning", "preference": "single-session-preference",
                 "update": "knowledge-update"}
PREDICTION_KEYS = ("hypothesis", "prediction", "response", "final_response", "output", "answer")


class JudgeError(RlmError):
    exit_code = 2


class Verdict(BaseModel):
    """A judge's answer: ``label`` True for yes; ``parsed`` False when the reply held neither yes nor no."""

    model: str
    label: bool
    raw: str
    question_type: str = "generic"
    parsed: bool = True


class JudgeReport(BaseModel):
    output: str
    judged: int = 0
    skipped: int = 0
    missing_reference: list[str] = Field(default_factory=list)
    total: int = 0
    accuracy: Optional[float] = None
    by_type: dict[str, float] = Field(default_factory=dict)


def question_type(value: Optional[str]) -> str:
    """The prompt key for a question type: LongMemEval names, ``snake_case`` or short forms; else ``generic``."""
    key = (value or "generic").strip().lower().replace("_", "-")
    key = _TYPE_ALIASES.get(key, key)
    return key if key in PROMPTS else "generic"


def build_prompt(kind: Optional[str], question: str, answer: Any, response: Any) -> str:
    answer_text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return PROMPTS[question_type(kind)].format(question=question, answer=answer_text, response=response or "", ask=_ASK)


def parse_label(text: Optional[str]) -> Optional[bool]:
    """yes → True, no → False, from the reply's first word or its first yes/no; None when neither is there."""
    words = re.findall(r"[a-z]+", (text or "").lower())
    if words and words[0] in ("yes", "no"):
        return words[0] == "yes"
    for word in words:
        if word in ("yes", "no"):
            return word == "yes"
    return None


def judge_answer(connector: ModelConnector, question: str, answer: Any, response: Any,
                 kind: Optional[str] = None) -> Verdict:
    """One verdict from ``connector`` (ModelError propagates)."""
    prompt = build_prompt(kind, question, answer, response)
    completion = connector.complete([{"role": "user", "content": prompt}])
    label = parse_label(completion.text)
    return Verdict(model=connector.name, label=bool(label), raw=completion.text or "",
                   question_type=question_type(kind),
                   parsed=label is not None)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file, or of a JSON file holding a list (or ``{"data": [...]}``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise JudgeError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
        if isinstance(data, dict):  # {"data": [...]}, {"records": [...]}, or a JSONL file of one row
            data = next((data[k] for k in ("data", "records") if isinstance(data.get(k), list)), [data])
        rows = data
    except json.JSONDecodeError:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    if number == len(text.splitlines()):  # a last line cut short by a kill: judged again
                        break
                    raise JudgeError(f"{path}: line {number} is not JSON") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise JudgeError(f"{path}: expected JSON objects with a question_id")
    return rows


def _prediction(row: dict[str, Any]) -> Any:
    return next((row[k] for k in PREDICTION_KEYS if k in row), None)


def judge_predictions(predictions: Path, reference: Path, output: Path, connector: ModelConnector,
                      on_judged: Optional[Any] = None) -> JudgeReport:
    """Judge every prediction not judged yet in ``output`` (JSONL, appended to); returns the whole file's tally."""
    refs = {str(r.get("question_id")): r for r in read_rows(reference)}
    judged = read_rows(output) if Path(output).exists() else []
    done = {str(r.get("question_id")) for r in judged if "autoeval_label" in r}
    report = JudgeReport(output=str(output))
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with Path(output).open("a", encoding="utf-8") as handle:
        for row in read_rows(predictions):
            qid = str(row.get("question_id"))
            if qid in done:
                report.skipped += 1
                continue
            ref = refs.get(qid)
            if ref is None:
                report.missing_reference.append(qid)
                continue
            kind = ref.get("question_type") or row.get("question_type")
            verdict = judge_answer(connector, str(ref.get("question", "")), ref.get("answer"), _prediction(row), kind)
            label = {"model": verdict.model, "label": verdict.label, "raw": verdict.raw}
            handle.write(json.dumps({**row, "question_type": question_type(kind), "autoeval_label": label}) + "\n")
            handle.flush()
            done.add(qid)
            report.judged += 1
            if on_judged is not None:
                on_judged(qid, verdict)
    _tally(report, read_rows(output))
    return report


def _tally(report: JudgeReport, rows: Iterable[dict[str, Any]]) -> None:
    per_type: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        if "autoeval_label" in row:
            per_type[str(row.get("question_type", "generic"))].append(bool(row["autoeval_label"].get("label")))
    labels = [label for values in per_type.values() for label in values]
    report.total = len(labels)
    report.accuracy = round(sum(labels) / len(labels), 6) if labels else None
    report.by_type = {kind: round(sum(v) / len(v), 6) for kind, v in sorted(per_type.items())}
