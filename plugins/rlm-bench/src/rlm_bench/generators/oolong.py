"""OOLONG-style aggregation over labelled records (after OOLONG's trec_coarse split, with invented content).

The context is one record a line::

    Date: Mar 03, 2023 || User: 48213 || Instance: Where is the Kalomir museum located?

Each instance is a question of one of six categories (:data:`LABELS`, TREC's coarse classes); the category is
not written (``show_labels=True`` writes it, for an easier variant), so answering needs every line classified —
the work an RLM spreads over ``llm_query`` calls. Question kinds (``question=``):

- ``count``: how many instances have ``label`` (a number: scored 0.75^|error|, as in the RLM paper);
- ``count_after``: the same, among instances dated after ``date`` (``YYYY-MM-DD``);
- ``most_common`` / ``least_common``: a category name (exact match);
- ``compare``: ``label`` is "more common than", "less common than" or "same frequency as" ``other``.

Answers are computed from the records actually generated. :func:`build_records` is shared with
``oolong_pairs``, whose users each ask about a fixed profile of categories.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

from rlm_bench.generators import Generated
from rlm_bench.generators._text import make_rng, tokens_to_chars, unique_words

LABELS = ("abbreviation", "description and abstract concept", "entity", "human being", "location", "numeric value")
SHARES = (0.27, 0.21, 0.17, 0.14, 0.12, 0.09)  # distinct shares, dealt to labels by the seed
START = dt.date(2022, 1, 1)
DAYS = 1096

TEMPLATES: dict[str, tuple[str, ...]] = {
    "abbreviation": (
        "What does {A} stand for?", "What is the full form of {A}?", "What does the acronym {A} mean in {X} law?",
        "What is the abbreviation of the {X} {Y} Institute?", "{A} is short for what?",
    ),
    "description and abstract concept": (
        "How does a {x} {noun} work?", "Why do {x} {plural} change colour in winter?",
        "What is the meaning of the word {x}?",
        "What is the difference between a {x} and a {y}?", "How can I clean a {x} {noun}?",
        "What is {x} philosophy about?",
    ),
    "entity": (
        "What kind of animal is a {x}?", "What instrument does the {X} band play?", "What is {X}'s favourite dish?",
        "Which breed of dog is {X}?", "What sport is played in the {X} league?", "What currency is used in {X}?",
    ),
    "human being": (
        "Who invented the {X} engine?", "Who wrote the novel {X} {Y}?", "Who was the first mayor of {X}?",
        "Which architect designed the {X} Tower?", "Who discovered the {x} comet?", "Who founded the {X} company?",
    ),
    "location": (
        "Where is the {X} museum located?", "What city is the capital of {X}?",
        "In which country does the {X} river flow?",
        "Where can I find the {X} market?", "Which island is home to the {X} lighthouse?",
        "Where was the {X} treaty signed?",
    ),
    "numeric value": (
        "How many {plural} live in {X}?", "When was {X} founded?", "How far is {X} from {Y}?",
        "What year did the {X} festival begin?", "How much does a {x} {noun} cost?", "How tall is the {X} Tower?",
    ),
}
_NOUNS = ("lamp", "pump", "clock", "loom", "kettle", "compass", "sail", "press", "valve", "drum")
_PLURALS = ("foxes", "herons", "beetles", "otters", "moths", "sparrows", "lizards", "hares", "crabs", "owls")


@dataclass
class RecordSet:
    """Generated records: the text lines, and for each the day index, user id and label index."""

    lines: list[str]
    days: list[int]
    users: list[int]
    labels: list[int]

    def counts(self, day_after: int = -1) -> Counter[str]:
        counts: Counter[str] = Counter({label: 0 for label in LABELS})
        for day, label in zip(self.days, self.labels):
            if day > day_after:
                counts[LABELS[label]] += 1
        return counts


def format_day(day: int) -> str:
    return (START + dt.timedelta(days=day)).strftime("%b %d, %Y")


def build_records(seed: int | str, chars: int, *, users: int, profiles: Optional[Sequence[Sequence[int]]] = None,
                  show_labels: bool = False, family: str = "oolong") -> RecordSet:
    """Records up to ``chars`` characters in total (whole lines only, counted without the labels).

    Without ``profiles`` a record's label follows the seed's shares of :data:`SHARES`; with them, user ``i``
    asks only about the label indices in ``profiles[i]``.
    """
    rng = make_rng(seed, family, "records")
    taken: set[str] = set()
    words = unique_words(rng, 600, taken=taken)
    acronyms = ["".join(rng.choice("ABCDEFGHJKLMNPRSTVW") for _ in range(rng.randint(3, 4))) for _ in range(200)]
    user_ids = sorted(rng.sample(range(10_000, 100_000), users))
    shares = list(SHARES)
    rng.shuffle(shares)
    dates = [format_day(d) for d in range(DAYS)]
    out = RecordSet([], [], [], [])
    total = 0
    choice, random, randrange = rng.choice, rng.random, rng.randrange
    cumulative = [sum(shares[: i + 1]) for i in range(len(shares))]
    while True:
        user_index = randrange(users)
        if profiles is None:
            r = random()
            label = next((i for i, c in enumerate(cumulative) if r < c), len(LABELS) - 1)
        else:
            label = choice(profiles[user_index])
        day = randrange(DAYS)
        text = choice(TEMPLATES[LABELS[label]]).format(
            A=choice(acronyms), X=choice(words), Y=choice(words), x=choice(words).lower(), y=choice(words).lower(),
            noun=choice(_NOUNS), plural=choice(_PLURALS),
        )
        line = f"Date: {dates[day]} || User: {user_ids[user_index]} || Instance: {text}"
        if total + len(line) + 1 > chars and out.lines:
            return out
        total += len(line) + 1  # sized without labels: show_labels adds them to the very same records
        out.lines.append(f"{line} || Label: {LABELS[label]}" if show_labels else line)
        out.days.append(day)
        out.users.append(user_ids[user_index])
        out.labels.append(label)


def preamble(show_labels: bool) -> str:
    where = "written after it" if show_labels else "not written: infer it from the question"
    return (
        "The context lists questions, one a line, each with a date and a user id. Every question belongs to "
        f"exactly one of these categories: {', '.join(LABELS)} (the category is {where})."
    )


def _check_label(name: str, value: Optional[str]) -> str:
    if value not in LABELS:
        raise ValueError(f"{name} must be one of: {', '.join(LABELS)} (got {value!r})")
    return value


def generate(tokens: int = 8192, question: str = "count", label: Optional[str] = "location",
             other: Optional[str] = None, date: Optional[str] = None, seed: int | str = 0, users: int = 200,
             show_labels: bool = False) -> Generated:
    if tokens < 256:
        raise ValueError("tokens must be at least 256")
    records = build_records(seed, tokens_to_chars(tokens), users=users, show_labels=show_labels)
    counts = records.counts()
    ask, scorer = "", "normalized_exact"
    answer: object
    if question in ("count", "count_after"):
        label = _check_label("label", label)
        scorer = "numeric"
        if question == "count":
            answer = counts[label]
            ask = f"How many questions are in the category '{label}'? Answer with a number."
        else:
            try:
                day = (dt.date.fromisoformat(str(date)) - START).days
            except ValueError:
                raise ValueError(f"date must be YYYY-MM-DD (got {date!r})") from None
            answer = records.counts(day_after=day)[label]
            shown = format_day(day) if 0 <= day < DAYS else str(date)
            ask = f"How many questions in the category '{label}' are dated after {shown}? Answer with a number."
    elif question in ("most_common", "least_common"):
        ranked = counts.most_common()
        first, second = (ranked[0], ranked[1]) if question == "most_common" else (ranked[-1], ranked[-2])
        if first[1] == second[1]:
            raise ValueError(f"seed {seed!r} gives a tie for {question}: choose another seed")
        answer = first[0]
        word = "most" if question == "most_common" else "least"
        ask = f"Which category is the {word} common? Answer with the category name only."
    elif question == "compare":
        label, other = _check_label("label", label), _check_label("other", other)
        a, b = counts[label], counts[other]
        answer = "more common than" if a > b else "less common than" if a < b else "same frequency as"
        ask = (
            f"Is the category '{label}' more common than, less common than, or the same frequency as the category "
            f"'{other}'? Answer with exactly one of: more common than, less common than, same frequency as."
        )
    else:
        raise ValueError("question must be count, count_after, most_common, least_common or compare")
    context = "\n".join(records.lines)
    return Generated(
        context=context, answer=answer, question=f"{preamble(show_labels)} {ask}", scorer=scorer,
        meta={"chars": len(context), "records": len(records.lines), "counts": dict(counts)},
    )
