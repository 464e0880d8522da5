"""Scorers: how a prediction is compared with a case's expected answer. Every score is a float in [0, 1].

| name (aliases) | score |
| --- | --- |
| ``exact`` | 1 when the stripped texts are equal |
| ``normalized_exact`` (``normalised_exact``, ``em``) | 1 when equal once lower-cased, without punctuation, articles |
| ``contains`` | 1 when the normalised expected text occurs, on word boundaries, in the normalised prediction |
| ``numeric`` | 0.75 ** \\|prediction − expected\\| (the RLM paper's OOLONG scoring); 0 without a number |
| ``set_f1`` (``f1``) | F1 of the predicted items against the expected list (``(3, 5)`` pairs when it holds pairs) |
| ``multiple_choice`` (``choice``, ``mcq``) | 1 when the option letter picked is the expected letter |
| ``oolong`` | ``numeric`` when the expected answer is a number, else ``normalized_exact`` |
| ``judge`` | an LLM judge's yes/no (see ``rlm_bench.judge``; run by the benchmark runner, which has a model) |

An expected answer given as a list means "any of these" for every scorer except ``set_f1``, where it is the
set itself. A prediction of None scores 0.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any, Callable, Optional

from pydantic import BaseModel, Field

from rlm_host import RlmError


class Score(BaseModel):
    """One scored prediction: ``value`` in [0, 1], ``correct`` when it is 1, and how it was reached."""

    value: float
    correct: bool
    detail: dict[str, Any] = Field(default_factory=dict)


class ScorerError(RlmError):
    exit_code = 2


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_PAIR = re.compile(r"[\(\[]?\s*(-?\d+)\s*[,;:/&-]\s*(-?\d+)\s*[\)\]]?")


def normalize(text: Any) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (SQuAD-style)."""
    value = text if isinstance(text, str) else json.dumps(text) if not isinstance(text, (int, float)) else str(text)
    value = _ARTICLES.sub(" ", value.lower().translate(_PUNCT))
    return " ".join(value.split())


def _alternatives(expected: Any) -> list[Any]:
    return list(expected) if isinstance(expected, (list, tuple)) and expected else [expected]


def _binary(ok: bool, **detail: Any) -> Score:
    return Score(value=1.0 if ok else 0.0, correct=ok, detail=detail)


def exact(prediction: Optional[str], expected: Any) -> Score:
    text = (prediction or "").strip()
    return _binary(any(text == str(e).strip() for e in _alternatives(expected)))


def normalized_exact(prediction: Optional[str], expected: Any) -> Score:
    text = normalize(prediction or "")
    return _binary(any(text == normalize(e) for e in _alternatives(expected)), normalized=text)


def contains(prediction: Optional[str], expected: Any) -> Score:
    text = f" {normalize(prediction or '')} "
    return _binary(any(normalize(e) and f" {normalize(e)} " in text for e in _alternatives(expected)))


def parse_number(text: Any) -> Optional[float]:
    """The number a prediction gives: the whole text if it is one, else the one after "answer", else the last."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    raw = str(text or "").strip().rstrip(".")
    candidates = [raw.replace(",", "")]
    after = re.search(r"answer\s*(?:is|:|=)?\s*\**\s*(-?[\d.,]+)", raw, re.IGNORECASE)
    if after:
        candidates.append(after.group(1).replace(",", "").rstrip(".,"))
    found = _NUMBER.findall(raw)
    if found:
        candidates.append(found[-1].replace(",", ""))
    for candidate in candidates:
        try:
            return float(candidate)
        except ValueError:
            continue
    return None


def numeric(prediction: Optional[str], expected: Any) -> Score:
    got = parse_number(prediction)
    if got is None:
        return Score(value=0.0, correct=False, detail={"parsed": None})
    best = max(0.75 ** abs(got - float(e)) for e in _alternatives(expected))
    return Score(value=round(best, 12), correct=best == 1.0, detail={"parsed": got})


def _items(prediction: Any, pairs: bool) -> set[Any]:
    if isinstance(prediction, str):
        stripped = prediction.strip()
        if stripped.startswith("[") and not pairs:
            try:
                prediction = json.loads(stripped)
            except json.JSONDecodeError:
                pass
    if pairs:
        text = prediction if isinstance(prediction, str) else json.dumps(prediction)
        return {tuple(sorted((int(a), int(b)))) for a, b in _PAIR.findall(text or "")}
    if isinstance(prediction, (list, tuple, set)):
        return {_item(item) for item in prediction} - {""}
    return {_item(part) for part in re.split(r"[,;\n]", str(prediction or ""))} - {""}


def _item(value: Any) -> str:
    """A set item compared loosely: lower case, punctuation dropped, whitespace collapsed (articles kept)."""
    return " ".join(str(value).lower().translate(_PUNCT).split())


def _is_pair(item: Any) -> bool:
    return isinstance(item, (list, tuple)) and len(item) == 2 and all(str(v).lstrip("-").isdigit() for v in item)


def set_f1(prediction: Optional[str], expected: Any) -> Score:
    items = list(expected) if isinstance(expected, (list, tuple, set)) else [expected]
    pairs = bool(items) and all(_is_pair(item) for item in items)
    gold = {tuple(sorted((int(a), int(b)))) for a, b in items} if pairs else {_item(i) for i in items} - {""}
    got = _items(prediction, pairs)
    if not gold and not got:
        return Score(value=1.0, correct=True, detail={"precision": 1.0, "recall": 1.0})
    hits = len(gold & got)
    precision = hits / len(got) if got else 0.0
    recall = hits / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    detail = {"precision": round(precision, 6), "recall": round(recall, 6), "predicted": len(got),
              "expected": len(gold)}
    return Score(value=round(f1, 12), correct=f1 == 1.0, detail=detail)


def choice_letter(prediction: Any, letters: str = "ABCDEFGH") -> Optional[str]:
    """The option letter a prediction picks: "B", "(b)", "B) 177", "Answer: B", "option B", "… so it is C."."""
    text = str(prediction or "").strip()
    group = f"[{letters}]"
    for pattern, flags in (
        (rf"^\(?({group})\)?[.)]?$", re.IGNORECASE),
        (rf"(?i:answer)\s*(?:(?i:is)|:)?\s*(?:(?i:option)\s*)?\(?({group})\)?(?![\w])", 0),
        (rf"\b(?i:option)\s*\(?({group})\)?(?![\w])", 0),
        (rf"^\(?({group})\)?[.):]", 0),
        (rf"^({group})\s+(?![a-z])", 0),
        (rf"(?:^|\s)\(?({group})\)?\.?$", 0),
    ):
        match = re.search(pattern, text, flags)
        if match:
            return match.group(1).upper()
    return None


def multiple_choice(prediction: Optional[str], expected: Any) -> Score:
    picked = choice_letter(prediction)
    wanted = {str(e).strip().upper().strip("()") for e in _alternatives(expected)}
    return _binary(picked is not None and picked in wanted, picked=picked)


def oolong(prediction: Optional[str], expected: Any) -> Score:
    first = _alternatives(expected)[0]
    is_number = isinstance(first, (int, float)) and not isinstance(first, bool)
    return numeric(prediction, expected) if is_number else normalized_exact(prediction, expected)


Scorer = Callable[[Optional[str], Any], Score]

SCORERS: dict[str, Scorer] = {
    "exact": exact,
    "normalized_exact": normalized_exact,
    "contains": contains,
    "numeric": numeric,
    "set_f1": set_f1,
    "multiple_choice": multiple_choice,
    "oolong": oolong,
}
ALIASES = {"normalised_exact": "normalized_exact", "em": "normalized_exact", "f1": "set_f1",
           "choice": "multiple_choice", "mcq": "multiple_choice", "llm_judge": "judge"}
NAMES = (*SCORERS, "judge")


def canonical(name: str) -> str:
    """The scorer's canonical name; ScorerError for an unknown one."""
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    if key not in NAMES:
        raise ScorerError(f"unknown scorer {name!r}", hint="choose one of: " + ", ".join(NAMES))
    return key


def score(name: str, prediction: Optional[str], expected: Any) -> Score:
    """Score ``prediction`` with the scorer ``name`` (not ``judge``: that one needs a model, see judge.py)."""
    key = canonical(name)
    if key == "judge":
        raise ScorerError("the judge scorer needs a model: use rlm_bench.judge")
    return SCORERS[key](prediction, expected)
