"""The long-context generators: deterministic from a seed, sized as asked (8K to over 1M tokens), and their
answers agree with the data they generate (checked by re-deriving them from the text itself)."""

from __future__ import annotations

import re
from collections import Counter
from itertools import combinations

import pytest

from rlm_bench.cases import length_bucket
from rlm_bench.generators import GeneratorError, generate
from rlm_bench.generators.oolong import LABELS
from rlm_host.sdk.models import estimate_tokens

LABEL_RE = re.compile(r"User: (\d+) \|\| Instance: .*? \|\| Label: (.+)$", re.MULTILINE)


def tokens(context) -> int:
    text = context if isinstance(context, str) else "".join(context)
    return estimate_tokens(text)


@pytest.mark.parametrize("name, params", [
    ("niah", {"tokens": 8192, "depth": 0.3}),
    ("oolong", {"tokens": 8192, "question": "count", "label": "entity"}),
    ("oolong_pairs", {"tokens": 8192}),
    ("multidoc", {"tokens": 8192, "docs": 16, "hops": 2}),
    ("code_mcq", {"tokens": 8192, "question": "caller"}),
])
def test_same_seed_same_case_other_seed_other_case(name, params):
    first, again = generate(name, {**params, "seed": 5}), generate(name, {**params, "seed": 5})
    other = generate(name, {**params, "seed": 6})
    assert first.context == again.context and first.answer == again.answer and first.question == again.question
    assert first.context != other.context
    assert abs(tokens(first.context) - 8192) <= 8192 * 0.03


@pytest.mark.parametrize("size", [8192, 1_100_000])
def test_niah_holds_exactly_one_needle_at_the_depth_asked(size):
    generated = generate("niah", {"tokens": size, "depth": 0.25, "seed": 3, "key": "the Harbor archive"})
    text = generated.context
    assert size - 2 <= tokens(text) <= size + 2
    assert text.count("special magic number") == 1 and text.count("magic") == 1
    assert len(re.findall(r"\d{7}", text)) == 1
    match = re.search(r"special magic number for the Harbor archive is (\d+)\.", text)
    assert match and match.group(1) == generated.answer
    assert abs(match.start() / len(text) - 0.25) < 0.01
    assert generated.scorer == "contains"
    if size > 1_048_576:
        assert length_bucket(tokens(text)) == ">1M"


@pytest.mark.parametrize("size", [8192, 1_100_000])
def test_oolong_counts_match_the_labels_written_out(size):
    hidden = generate("oolong", {"tokens": size, "question": "count", "label": "location", "seed": 9})
    shown = generate("oolong", {"tokens": size, "question": "count", "label": "location", "seed": 9,
                                "show_labels": True})
    assert "Label:" not in hidden.context
    labels = Counter(label for _, label in LABEL_RE.findall(shown.context))
    assert sum(labels.values()) == hidden.meta["records"] == len(hidden.context.splitlines())
    assert hidden.answer == labels["location"] and hidden.scorer == "numeric"
    assert abs(tokens(hidden.context) - size) <= size * 0.01
    most = labels.most_common()
    assert generate("oolong", {"tokens": size, "question": "most_common", "seed": 9}).answer == most[0][0]
    assert generate("oolong", {"tokens": size, "question": "least_common", "seed": 9}).answer == most[-1][0]


def test_oolong_compare_and_date_questions():
    shown = generate("oolong", {"tokens": 16384, "seed": 4, "show_labels": True})
    labels = Counter(label for _, label in LABEL_RE.findall(shown.context))
    compare = generate("oolong", {"tokens": 16384, "question": "compare", "label": "entity", "other": "location",
                                  "seed": 4})
    expected = "more common than" if labels["entity"] > labels["location"] else "less common than"
    assert compare.answer == expected and compare.scorer == "normalized_exact"
    after = generate("oolong", {"tokens": 16384, "question": "count_after", "label": "entity", "date": "2023-12-31",
                                "seed": 4})
    lines = [line for line in shown.context.splitlines() if line.endswith("Label: entity")]
    years = [int(re.search(r"Date: \w+ \d+, (\d{4})", line).group(1)) for line in lines]
    assert after.answer == sum(year >= 2024 for year in years)
    assert "after Dec 31, 2023" in after.question


def test_oolong_pairs_answers_every_qualifying_pair():
    params = {"tokens": 16384, "label": "location", "other": "human being", "seed": 2}
    shown = generate("oolong_pairs", {**params, "show_labels": True})
    asked: dict[int, set[str]] = {}
    for user, label in LABEL_RE.findall(shown.context):
        asked.setdefault(int(user), set()).add(label)
    has = {label: sorted(u for u in asked if label in asked[u]) for label in LABELS}
    both = generate("oolong_pairs", {**params, "question": "both"})
    assert both.answer == [list(p) for p in combinations(has["location"], 2)] and both.scorer == "set_f1"
    two = generate("oolong_pairs", {**params, "question": "both_two"})
    assert two.answer == [list(p) for p in combinations(sorted(set(has["location"]) & set(has["human being"])), 2)]
    each = generate("oolong_pairs", {**params, "question": "one_each"})
    found = {tuple(sorted((a, b))) for a in has["location"] for b in has["human being"] if a != b}
    assert each.answer == [list(p) for p in sorted(found)]
    assert 0 < len(both.answer) < 30 * 29 / 2  # some users qualify, not all


@pytest.mark.parametrize("hops, key", [(1, "company"), (2, "person"), (3, "city")])
def test_multidoc_facts_sit_once_each_in_separate_documents(hops, key):
    generated = generate("multidoc", {"tokens": 32768, "docs": 40, "hops": hops, "seed": 8})
    chain = generated.meta["chain"]
    assert generated.answer == chain[key]
    facts = [f"The {chain['product']} is manufactured by {chain['company']}.",
             f"{chain['company']} was founded in {chain['year']} by {chain['person']}.",
             f"{chain['person']} was born in {chain['city']}."]
    holders = [[i for i, doc in enumerate(generated.context) if fact in doc] for fact in facts]
    assert all(len(h) == 1 for h in holders) and len({h[0] for h in holders}) == 3
    assert len(generated.context) == 40 and abs(tokens(generated.context) - 32768) <= 32768 * 0.02


def test_multidoc_domain_filter_contradicts_the_answer_elsewhere():
    generated = generate("multidoc", {"tokens": 32768, "docs": 64, "hops": 1, "domain": "wiki.example.org", "seed": 61})
    product = generated.meta["chain"]["product"]
    claims = [(re.search(r"URL: https://([^/]+)/", d).group(1),
               re.search(rf"The {product} is manufactured by ([^.]+)\.", d))
              for d in generated.context]
    makers = {(site, m.group(1)) for site, m in claims if m}
    assert ("wiki.example.org", generated.answer) in makers
    assert any(site != "wiki.example.org" and maker != generated.answer for site, maker in makers)
    assert generated.question.startswith("Using only pages published on wiki.example.org")


@pytest.mark.parametrize("question", ["default", "defined_in", "caller"])
def test_code_mcq_answer_is_checkable_in_the_files(question):
    generated = generate("code_mcq", {"tokens": 16384, "question": question, "seed": 12})
    files = dict(zip(generated.context.names, generated.context))
    options = dict(re.findall(r"^([A-D])\) (.+)$", generated.question, re.MULTILINE))
    right = options[generated.answer]
    target = re.search(r"`(\w+)`\?", generated.question).group(1)
    if question == "default":
        param = re.search(r"parameter `(\w+)`", generated.question).group(1)
        definition = next(re.search(rf"def {target}\(([^)]*)\)", src)
                          for src in files.values() if f"def {target}(" in src)
        assert f"{param}={right}" in definition.group(1)
    elif question == "defined_in":
        assert f"def {target}(" in files[right]
        assert sum(f"def {target}(" in src for src in files.values()) == 1
    else:
        source = "".join(files.values())
        body = source.split(f"def {right}(")[1].split("\ndef ")[0]
        assert f".{target}(" in body
        for letter, name in options.items():
            if letter != generated.answer:
                assert f".{target}(" not in source.split(f"def {name}(")[1].split("\ndef ")[0]
    assert generated.scorer == "multiple_choice" and len(options) == 4


def test_code_mcq_and_multidoc_reach_a_million_tokens():
    code = generate("code_mcq", {"tokens": 1_050_000, "question": "defined_in", "seed": 1})
    docs = generate("multidoc", {"tokens": 1_050_000, "docs": 1000, "hops": 3, "seed": 1})
    assert tokens(code.context) > 1_000_000 and tokens(docs.context) > 1_000_000


def test_bad_parameters_are_clear_errors():
    with pytest.raises(GeneratorError, match="unknown context generator 'nope'"):
        generate("nope", {})
    with pytest.raises(GeneratorError, match="label must be one of"):
        generate("oolong", {"label": "colour"})
    with pytest.raises(GeneratorError, match="unexpected keyword"):
        generate("niah", {"size": 10})
    with pytest.raises(GeneratorError, match="depth must be between 0 and 1"):
        generate("niah", {"depth": 2})
