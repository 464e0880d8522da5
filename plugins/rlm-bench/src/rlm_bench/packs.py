"""The built-in benchmark presets, each case with its data and its expected answer.

Every preset is a pack factory, ``preset(settings, services)`` returning its cases; :func:`builtin_pack_specs`
gives one ``BenchmarkPackSpec`` per preset for the ``rlm_register_benchmark_packs`` hook. A factory returns a list
of ``BenchmarkCase`` (or of dicts validating as one) — the contract for every plugin's packs too.

Long-context cases name a generator and its parameters; their answers are pinned here and checked against what the
generator computes when the case runs. ``dspy_reading_quick`` / ``dspy_reading_extended`` are questions about DSPy
programs with answers, run by the native loop (``dspy_quick`` / ``dspy_extended`` are rlm-env-dspy's coding tasks,
scored by hidden tests). This module imports nothing heavy: cases are built only when a preset is asked for.
"""

from __future__ import annotations

import json
import re
from itertools import combinations
from typing import Any

from rlm_host import BenchmarkPackSpec

#: preset name → one-line description (what ``rlm bench list`` shows).
PRESETS: dict[str, str] = {
    "dspy_reading_quick": "DSPy program comprehension: signature fields, modules, a metric (3 cases)",
    "dspy_reading_extended": "dspy_reading_quick plus optimizer logs and compiled demos (5 cases)",
    "generic_smoke": "Generic environment sanity: run_python arithmetic and a context sum (2 cases)",
    "pure_rlm_smoke": "Pure RLM basics over small inline contexts (3 cases)",
    "pure_rlm_context": "Chunking, accumulation and map-reduce over 32K-64K generated contexts (4 cases)",
    "deep_recursion": "Multi-hop tasks for depth > 1 delegation with rlm_query (3 cases)",
    "paradigm_comparison": "A 32K needle through native, CodeAct, dspy-rlm, adk-rlm, three agents and direct (8 cases)",
    "oolong_style": "OOLONG-style aggregation and OOLONG-Pairs over 32K-128K labelled records (4 cases)",
    "browsecomp_style": "BrowseComp-style multi-hop QA over 100-1,000 web-like documents (3 cases)",
    "token_efficiency": "The same needle at 8K, 128K and over 1M tokens: tokens and cost against length (3 cases)",
    "dynamic_web_filtering": "Multi-hop QA trusting one web domain among contradicting ones (3 cases)",
}


def builtin_pack_specs() -> list[BenchmarkPackSpec]:
    """What ``rlm_bench.hooks.rlm_register_benchmark_packs`` returns: one record per preset of this module."""
    return [
        BenchmarkPackSpec(name, description, f"rlm_bench.packs:{name}", aliases=(name.replace("_", "-"),))
        for name, description in PRESETS.items()
    ]


def _case(case_id: str, description: str, task: str | None = None, **fields: Any) -> Any:
    from rlm_bench.cases import BenchmarkCase, ContextSpec

    context = fields.pop("context", None)
    if isinstance(context, tuple):  # (generator, params)
        fields["context"] = ContextSpec.generated(context[0], **context[1])
    elif context is not None:
        fields["context"] = ContextSpec.inline(context)
    return BenchmarkCase(case_id=case_id, description=description, task=task, **fields)


def _pairs_of(*users: int) -> list[list[int]]:
    """Every pair of the given user ids, lower id first: the answer of an OOLONG-Pairs "both users …" question."""
    return [list(pair) for pair in combinations(sorted(users), 2)]


# ---------------------------------------------------------------------------------------- inline data

_DSPY_PROGRAM = '''\
import dspy


class GenerateSearchQuery(dspy.Signature):
    """Write a simple search query that will help answer a complex question."""

    context: list[str] = dspy.InputField(desc="may contain relevant facts")
    question: str = dspy.InputField()
    query: str = dspy.OutputField()


class GenerateAnswer(dspy.Signature):
    """Answer questions with short factoid answers."""

    context: list[str] = dspy.InputField(desc="may contain relevant facts")
    question: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="often between 1 and 5 words")
    confidence: float = dspy.OutputField(desc="between 0 and 1")


class SimplifiedBaleen(dspy.Module):
    def __init__(self, passages_per_hop=3, max_hops=2):
        super().__init__()
        self.generate_query = [dspy.ChainOfThought(GenerateSearchQuery) for _ in range(max_hops)]
        self.retrieve = dspy.Retrieve(k=passages_per_hop)
        self.generate_answer = dspy.Predict(GenerateAnswer)
        self.max_hops = max_hops

    def forward(self, question):
        context = []
        for hop in range(self.max_hops):
            query = self.generate_query[hop](context=context, question=question).query
            context = deduplicate(context + self.retrieve(query).passages)
        pred = self.generate_answer(context=context, question=question)
        return dspy.Prediction(context=context, answer=pred.answer)
'''

_EVAL_RECORDS = [
    {"question": "Capital of Velmora?", "gold": "Kasrin", "pred": "kasrin"},
    {"question": "Founder of Rusa Works?", "gold": "Lumgor Ithgallo", "pred": "Lumgor Ithgallo "},
    {"question": "Year the Ostfen bridge opened?", "gold": "1911", "pred": "1912"},
    {"question": "River through Delmar?", "gold": "Wynash", "pred": "Wynash"},
    {"question": "Tallest tower in Corfi?", "gold": "Belqua Tower", "pred": "Belqua"},
    {"question": "Language of Isjor?", "gold": "Isjoran", "pred": "ISJORAN"},
    {"question": "Currency of Halnev?", "gold": "mark", "pred": "crown"},
]
_EM_MATCHES = sum(r["pred"].strip().lower() == r["gold"].strip().lower() for r in _EVAL_RECORDS)


def _optimizer_log() -> str:
    scores = [41.5, 44.0, 43.5, 47.0, 52.5, 49.0, 55.5, 51.0, 58.0, 54.5, 57.5, 61.0, 59.5, 60.5, 63.5, 62.0]
    lines = ["MIPROv2 optimisation of SimplifiedBaleen (metric: answer_exact_match, valset: 200 examples)"]
    for trial, score in enumerate(scores, 1):
        lines.append(f"Trial {trial:2d}/16: instruction candidate {trial % 5}, demo set {trial % 4}, score={score:.1f}")
    lines.append("Best program saved to compiled_baleen.json")
    return "\n".join(lines)


_COMPILED_STATE = {
    "generate_query[0]": {"signature": "GenerateSearchQuery",
                          "demos": [{"question": f"q{i}", "query": f"s{i}"} for i in range(3)]},
    "generate_query[1]": {"signature": "GenerateSearchQuery",
                          "demos": [{"question": f"q{i}", "query": f"t{i}"} for i in range(2)]},
    "generate_answer": {"signature": "GenerateAnswer",
                        "demos": [{"question": f"q{i}", "answer": f"a{i}"} for i in range(4)]},
}

_SMOKE_TEXT = (
    "Lighthouses along the northern coast were lit by hand until the lantern works closed. Each keeper carried a "
    "lantern up the stairs at dusk and set the lantern in its cradle. Ships counted the flashes; a lantern that "
    "failed meant a long night. The last keeper kept his Lantern on the mantel."
)


# ---------------------------------------------------------------------------------------- presets


def dspy_reading_quick(settings: Any = None, services: Any = None) -> list[Any]:
    tags = {"task_family": "dspy_program", "framework_target": "dspy"}
    return [
        _case("dspy_signature_outputs", "output fields of a DSPy signature",
              "The context is the source of a DSPy program. List the output field names of the signature "
              "`GenerateAnswer`, comma-separated.", context=_DSPY_PROGRAM, expected=["answer", "confidence"],
              scorer="set_f1", max_steps=4, tags=tags),
        _case("dspy_answer_module", "which DSPy module generates the answer",
              "The context is the source of a DSPy program. Which DSPy module class does `SimplifiedBaleen` use "
              "for `generate_answer`: dspy.Predict, dspy.ChainOfThought or dspy.ReAct? Answer with the class name.",
              context=_DSPY_PROGRAM, expected="dspy.Predict", scorer="normalized_exact", max_steps=4, tags=tags),
        _case("dspy_exact_match_count", "evaluate an exact-match metric over predictions",
              "The context is a JSON list of evaluation records with 'gold' and 'pred'. How many records does "
              "the metric exact match (after stripping spaces and lower-casing both) count as correct? Answer "
              "with a number.", context=json.dumps(_EVAL_RECORDS), expected=_EM_MATCHES, scorer="numeric",
              max_steps=4, tags=tags),
    ]


def dspy_reading_extended(settings: Any = None, services: Any = None) -> list[Any]:
    tags = {"task_family": "dspy_program", "framework_target": "dspy"}
    return dspy_reading_quick() + [
        _case("dspy_best_trial", "the best trial of an optimizer log",
              "The context is the log of a DSPy optimizer run. Which trial number reached the highest score? "
              "Answer with the number.", context=_optimizer_log(), expected=15, scorer="numeric", max_steps=4,
              tags=tags),
        _case("dspy_demo_count", "demos of a compiled program",
              "The context is the saved state of a compiled DSPy program (predictor name → state). How many demos "
              "do the predictors whose signature is GenerateSearchQuery hold in total? Answer with a number.",
              context=_COMPILED_STATE, expected=5, scorer="numeric", max_steps=4, tags=tags),
    ]


def generic_smoke(settings: Any = None, services: Any = None) -> list[Any]:
    numbers = [17, 42, 8, 99, 23, 61, 5, 74, 36, 12]
    tags = {"task_family": "smoke"}
    return [
        _case("generic_sum_of_squares", "run_python arithmetic",
              "Use run_python to compute the sum of the squares of the integers from 1 to 100, then give the "
              "number as your final response.", environment="generic", expected=338350, scorer="numeric",
              max_steps=4, tags=tags),
        _case("generic_context_sum", "sum a list held in the context",
              "The variable `context` holds a list of integers. What is their sum? Give the number as your final "
              "response.", context=numbers, environment="generic", expected=sum(numbers), scorer="numeric",
              max_steps=4, tags=tags),
    ]


def pure_rlm_smoke(settings: Any = None, services: Any = None) -> list[Any]:
    tags = {"task_family": "smoke"}
    return [
        _case("smoke_length", "the context's length",
              "How many characters does the context hold? Answer with the number only.", context=_SMOKE_TEXT,
              expected=len(_SMOKE_TEXT), scorer="numeric", max_steps=4, tags=tags),
        _case("smoke_first_word", "the context's first word", "What is the first word of the context?",
              context=_SMOKE_TEXT, expected="Lighthouses", scorer="normalized_exact", max_steps=4, tags=tags),
        _case("smoke_word_count", "count a word, any case",
              "How many times does the word 'lantern' occur in the context, in any letter case? Answer with a number.",
              context=_SMOKE_TEXT, expected=len(re.findall(r"\blantern\b", _SMOKE_TEXT, re.IGNORECASE)),
              scorer="numeric", max_steps=4, tags=tags),
    ]


def pure_rlm_context(settings: Any = None, services: Any = None) -> list[Any]:
    return [
        _case("ctx_niah_64k", "find one needle in 64K tokens (chunking)",
              context=("niah", {"tokens": 65536, "depth": 0.35, "seed": 11, "key": "the Ashgrove ledger"}),
              expected="3516507", tags={"task_family": "niah"}),
        _case("ctx_oolong_count_32k", "count a hidden category over records (map-reduce)",
              context=("oolong", {"tokens": 32768, "question": "count", "label": "human being", "seed": 3}),
              expected=229, tags={"task_family": "oolong"}),
        _case("ctx_multidoc_32k", "two hops across 48 documents (accumulation)",
              context=("multidoc", {"tokens": 32768, "docs": 48, "hops": 2, "seed": 5}),
              expected="Ithgorel Isdelbel", tags={"task_family": "multidoc"}),
        _case("ctx_code_default_32k", "a default value in a 32K-token repository",
              context=("code_mcq", {"tokens": 32768, "question": "default", "seed": 7}),
              expected="A", tags={"task_family": "code_mcq"}),
    ]


def deep_recursion(settings: Any = None, services: Any = None) -> list[Any]:
    options = {"max_depth": 3}
    return [
        _case("deep_multidoc_3hop", "three hops over 128 documents, one rlm_query per hop",
              context=("multidoc", {"tokens": 131072, "docs": 128, "hops": 3, "seed": 21}),
              expected="Ithdel", options=options, max_steps=12, tags={"task_family": "multidoc"}),
        _case("deep_oolong_pairs", "pairs of users over 64K tokens of records",
              context=("oolong_pairs", {"tokens": 65536, "question": "both_two", "label": "location",
                                         "other": "entity", "seed": 22}),
              expected=_pairs_of(10888, 21834, 37025, 38401), options=options, max_steps=12,
              tags={"task_family": "oolong_pairs"}),
        _case("deep_code_caller", "which function calls another, 128K-token repository",
              context=("code_mcq", {"tokens": 131072, "question": "caller", "seed": 23}),
              expected="C", options=options, max_steps=12, tags={"task_family": "code_mcq"}),
    ]


def paradigm_comparison(settings: Any = None, services: Any = None) -> list[Any]:
    context = ("niah", {"tokens": 32768, "depth": 0.6, "seed": 31, "key": "the Saltmarsh survey"})
    family = "niah"
    return [
        _case("paradigm_pure_rlm", "the needle, as a pure RLM (context in the REPL)", context=context,
              expected="4118146", tags={"task_family": family, "paradigm": "pure_rlm"}),
        _case("paradigm_codeact", "the needle, as CodeAct (generic JSON actions)", context=context,
              environment="generic", expected="4118146", tags={"task_family": family, "paradigm": "codeact"}),
        _case("paradigm_dspy_rlm", "the needle, through DSPy's own RLM (rlm-adapter-dspy)", context=context,
              framework="dspy-rlm", expected="4118146", tags={"task_family": family, "paradigm": "dspy_rlm"}),
        _case("paradigm_pydantic_ai", "the needle, as a Pydantic AI agent with the sandbox as tools", context=context,
              framework="pydantic-ai", expected="4118146", tags={"task_family": family, "paradigm": "pydantic_ai"}),
        _case("paradigm_adk_rlm", "the needle, through the RLM loop built of Google ADK agents", context=context,
              framework="adk-rlm", expected="4118146", tags={"task_family": family, "paradigm": "adk_rlm"}),
        _case("paradigm_google_adk", "the needle, as a Google ADK agent with the sandbox as tools", context=context,
              framework="google-adk", expected="4118146", tags={"task_family": family, "paradigm": "google_adk"}),
        _case("paradigm_deepagents", "the needle, as a DeepAgents (LangGraph) agent with the sandbox as tools",
              context=context, framework="deepagents", expected="4118146",
              tags={"task_family": family, "paradigm": "deepagents"}),
        _case("paradigm_direct", "the needle, as one direct LLM call (context in the prompt)", context=context,
              mode="direct-llm", expected="4118146", tags={"task_family": family, "paradigm": "direct"}),
    ]


def oolong_style(settings: Any = None, services: Any = None) -> list[Any]:
    return [
        _case("oolong_count_32k", "count one hidden category (numeric, 0.75^|error|)",
              context=("oolong", {"tokens": 32768, "question": "count", "label": "location", "seed": 1}),
              expected=147, tags={"task_family": "oolong"}),
        _case("oolong_most_common_128k", "the most common hidden category",
              context=("oolong", {"tokens": 131072, "question": "most_common", "seed": 2}),
              expected="location", tags={"task_family": "oolong"}),
        _case("oolong_compare_128k", "compare two hidden categories",
              context=("oolong", {"tokens": 131072, "question": "compare", "label": "entity",
                                   "other": "numeric value", "seed": 3}),
              expected="less common than", tags={"task_family": "oolong"}),
        _case("oolong_pairs_32k", "pairs of users both asking about locations (F1)",
              context=("oolong_pairs", {"tokens": 32768, "question": "both", "label": "location", "seed": 4}),
              expected=_pairs_of(18819, 34391, 37332, 45980, 50686, 55082, 82936),
              tags={"task_family": "oolong_pairs"}),
    ]


def browsecomp_style(settings: Any = None, services: Any = None) -> list[Any]:
    tags = {"task_family": "multidoc"}
    return [
        _case("browse_1hop_100docs", "one hop over 100 documents",
              context=("multidoc", {"tokens": 65536, "docs": 100, "hops": 1, "seed": 41}),
              expected="Quahal Works", tags=tags),
        _case("browse_2hop_300docs", "two hops over 300 documents",
              context=("multidoc", {"tokens": 262144, "docs": 300, "hops": 2, "seed": 42}),
              expected="Ostven Miello", tags=tags, max_steps=12),
        _case("browse_3hop_1000docs", "three hops over 1,000 documents",
              context=("multidoc", {"tokens": 524288, "docs": 1000, "hops": 3, "seed": 43}),
              expected="Marlum", tags=tags, max_steps=16),
    ]


def token_efficiency(settings: Any = None, services: Any = None) -> list[Any]:
    key = "the Copperfield inventory"
    return [
        _case(f"tokens_niah_{label}", f"the same needle in {label} tokens",
              context=("niah", {"tokens": tokens, "depth": 0.5, "seed": 51, "key": key}),
              expected="6330221", tags={"task_family": "niah"})
        for label, tokens in (("8k", 8192), ("128k", 131072), ("1m", 1_100_000))
    ]


def dynamic_web_filtering(settings: Any = None, services: Any = None) -> list[Any]:
    tags = {"task_family": "multidoc_filtered"}
    return [
        _case("filter_wiki_1hop", "one hop, trusting wiki.example.org only",
              context=("multidoc", {"tokens": 32768, "docs": 64, "hops": 1, "domain": "wiki.example.org", "seed": 61}),
              expected="Ithlogor Works", tags=tags),
        _case("filter_archive_2hop", "two hops, trusting archive.example.org only",
              context=("multidoc", {"tokens": 65536, "docs": 128, "hops": 2, "domain": "archive.example.org",
                                     "seed": 62}),
              expected="Galnor Quabel", tags=tags),
        _case("filter_citynews_3hop", "three hops, trusting citynews.example.net only",
              context=("multidoc", {"tokens": 131072, "docs": 256, "hops": 3, "domain": "citynews.example.net",
                                     "seed": 63}),
              expected="Morashrin", tags=tags, max_steps=12),
    ]
