"""Multi-document QA (BrowseComp-Plus style): a multi-hop question over a list of web-page-like documents.

The corpus holds ``chains`` of three facts each — product → manufacturer, manufacturer → founder, founder →
birthplace — scattered one fact per document among filler prose, every chain written with the same sentences,
so finding the answer means following the hops across documents. ``hops`` (1–3) says how far the question goes
(manufacturer, founder, or the founder's birthplace). With ``domain`` set, the true chain is published only on
that site and a contradicting chain about the same product on others: the question asks to trust that site
alone (the ``dynamic_web_filtering`` preset). The context is a list of documents, each
``Title: …\\nURL: https://<domain>/<slug>\\n\\n<text>``.
"""

from __future__ import annotations

from typing import Optional

from rlm_bench.generators import Generated
from rlm_bench.generators._text import filler, insert_at, make_rng, tokens_to_chars, unique_words

DOMAINS = ("archive.example.org", "citynews.example.net", "forum.example.com", "wiki.example.org",
           "shopping.example.com", "blog.example.net")
_NOUNS = ("lamp", "kettle", "compass", "bicycle", "loom", "telescope", "radio", "clock", "stove", "camera")
_SUFFIXES = ("Works", "Industries", "Company", "Foundry", "Manufacturing")
QUESTIONS = {
    1: "Which company manufactures the {product}?",
    2: "Who founded the company that manufactures the {product}?",
    3: "In which city was the founder of the company that manufactures the {product} born?",
}


def _chain(names: list[str], index: int, product: str, year: int) -> dict[str, str]:
    first, last, company, city = names[4 * index: 4 * index + 4]
    return {"product": product, "company": f"{company} {_SUFFIXES[index % len(_SUFFIXES)]}",
            "person": f"{first} {last}", "city": city, "year": str(year)}


def _facts(chain: dict[str, str]) -> list[str]:
    return [
        f"The {chain['product']} is manufactured by {chain['company']}.",
        f"{chain['company']} was founded in {chain['year']} by {chain['person']}.",
        f"{chain['person']} was born in {chain['city']}.",
    ]


def generate(tokens: int = 32768, docs: int = 64, hops: int = 3, subject: Optional[str] = None,
             domain: Optional[str] = None, chains: Optional[int] = None, seed: int | str = 0) -> Generated:
    if hops not in QUESTIONS:
        raise ValueError("hops must be 1, 2 or 3")
    if domain is not None and domain not in DOMAINS:
        raise ValueError(f"domain must be one of: {', '.join(DOMAINS)}")
    chains = chains or max(2, docs // 4)
    needed = 3 * chains + (3 if domain else 0)
    if docs < needed:
        raise ValueError(f"docs must be at least {needed} (three facts per chain, one a document)")
    rng = make_rng(seed, "multidoc")
    names = unique_words(rng, 4 * (chains + 1))
    words = unique_words(rng, chains + docs, taken=set(names))
    products = [f"{w} {_NOUNS[i % len(_NOUNS)]}" for i, w in enumerate(words[:chains])]
    if subject:
        products[0] = subject.removeprefix("the ").strip()
    real = [_chain(names, i, products[i], rng.randint(1850, 1990)) for i in range(chains)]
    placed: list[tuple[str, Optional[str]]] = []  # (fact, required domain)
    for index, chain in enumerate(real):
        placed += [(fact, domain if index == 0 else None) for fact in _facts(chain)]
    if domain:
        fake = _chain(names, chains, products[0], rng.randint(1850, 1990))
        placed += [(fact, "elsewhere") for fact in _facts(fake)]
    slots = rng.sample(range(docs), len(placed))
    others = [d for d in DOMAINS if d != domain]
    per_doc = max(200, tokens_to_chars(tokens) // docs)
    out: list[str] = []
    facts_at = dict(zip(slots, placed))
    for index in range(docs):
        fact = facts_at.get(index)
        site = rng.choice(DOMAINS)
        if fact is not None and fact[1] == "elsewhere":
            site = rng.choice(others)
        elif fact is not None and fact[1] is not None:
            site = fact[1]
        elif domain and site == domain and fact is None:
            site = rng.choice(others)  # the trusted site publishes only the true chain and filler elsewhere
        title = f"Notes on {words[chains + index]}"
        head = f"Title: {title}\nURL: https://{site}/{words[chains + index].lower()}-{index}\n\n"
        body = filler(rng, per_doc - len(head) - (len(fact[0]) + 2 if fact else 0))
        if fact is not None:
            body, _ = insert_at(body, fact[0], rng.random())
        out.append(head + body)
    keys = {1: "company", 2: "person", 3: "city"}
    answer = real[0][keys[hops]]
    question = QUESTIONS[hops].format(product=real[0]["product"])
    if domain:
        question = f"Using only pages published on {domain}, answer: {question}"
    return Generated(
        context=out, answer=answer, question=question + " Answer with the name only.", scorer="normalized_exact",
        meta={"chars": sum(map(len, out)), "documents": docs, "chain": real[0], "fact_documents": sorted(slots)},
    )
