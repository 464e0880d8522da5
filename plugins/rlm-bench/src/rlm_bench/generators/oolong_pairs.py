"""OOLONG-Pairs-style pairwise questions over the OOLONG records (answers are sets of user-id pairs, scored F1).

The records are those of :mod:`oolong`, but each of ``users`` users asks only about a fixed profile of
``profile_size`` categories drawn from the seed, so a condition on a user ("has at least one question about a
location") holds for some users and not others — and the answer, every pair of users meeting a pairwise
condition, grows quadratically with them, as in the RLM paper's OOLONG-Pairs. Question kinds:

- ``both``: both users have at least one instance of ``label``;
- ``both_two``: both users have at least one instance of ``label`` and at least one of ``other``;
- ``one_each``: one user has at least one ``label`` instance and the other at least one ``other`` instance.

Pairs are unordered, written with the lower id first; the expected answer is a sorted list of ``[low, high]``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterator, Optional

from rlm_bench.generators import Generated
from rlm_bench.generators._text import make_rng, tokens_to_chars
from rlm_bench.generators.oolong import LABELS, build_records, preamble

FORMAT = "List every such pair as (lower id, higher id), separated by commas, with no duplicate pairs."


def generate(tokens: int = 8192, question: str = "both", label: str = "location", other: Optional[str] = None,
             seed: int | str = 0, users: int = 30, profile_size: int = 2,
             show_labels: bool = False) -> Generated:
    if tokens < 256:
        raise ValueError("tokens must be at least 256")
    if not 1 <= profile_size <= len(LABELS):
        raise ValueError(f"profile_size must be between 1 and {len(LABELS)}")
    for name, value in (("label", label), ("other", other if question != "both" else label)):
        if value not in LABELS:
            raise ValueError(f"{name} must be one of: {', '.join(LABELS)} (got {value!r})")
    rng = make_rng(seed, "pairs-profiles")
    profiles = [sorted(rng.sample(range(len(LABELS)), profile_size)) for _ in range(users)]
    records = build_records(seed, tokens_to_chars(tokens), users=users, profiles=profiles, show_labels=show_labels,
                            family="oolong_pairs")
    asked: dict[int, set[str]] = {}
    for user, index in zip(records.users, records.labels):
        asked.setdefault(user, set()).add(LABELS[index])
    ids = sorted(asked)
    has = {name: {u for u in ids if name in asked[u]} for name in LABELS}
    pairs: Iterator[tuple[int, ...]]
    if question == "both":
        pairs = combinations(sorted(has[label]), 2)
        ask = f"List all pairs of user ids where both users have at least one question in the category '{label}'."
    elif question == "both_two":
        pairs = combinations(sorted(has[label] & has[other]), 2)  # type: ignore[index]
        ask = (
            f"List all pairs of user ids where both users have at least one question in the category '{label}' and "
            f"at least one in the category '{other}'."
        )
    elif question == "one_each":
        found = {tuple(sorted((a, b))) for a in has[label] for b in has[other] if a != b}  # type: ignore[index]
        pairs = iter(sorted(found))
        ask = (
            f"List all pairs of user ids where one user has at least one question in the category '{label}' and the "
            f"other has at least one question in the category '{other}'."
        )
    else:
        raise ValueError("question must be both, both_two or one_each")
    answer = sorted([a, b] for a, b in pairs)
    context = "\n".join(records.lines)
    return Generated(
        context=context, answer=answer, question=f"{preamble(show_labels)} {ask} {FORMAT}", scorer="set_f1",
        meta={"chars": len(context), "records": len(records.lines), "users": len(ids), "pairs": len(answer)},
    )
