"""Long-context generators: deterministic from a seed, from 8K to well over 1M tokens (a token ≈ 4 characters).

Each family is one module exposing ``generate(**params) -> Generated``:

| name | module | context | answer | scorer |
| --- | --- | --- | --- | --- |
| ``niah`` | niah.py | text with one needle at a chosen depth (S-NIAH) | the needle's value | contains |
| ``oolong`` | oolong.py | labelled-question records (labels hidden) | a count, a label or a comparison | oolong |
| ``oolong_pairs`` | oolong_pairs.py | the same records, users with label profiles | pairs of user ids | set_f1 |
| ``multidoc`` | multidoc.py | a list of web-page-like documents | a multi-hop fact | normalized_exact |
| ``code_mcq`` | code_mcq.py | a synthetic Python repository (list of files) | a letter A–D | multiple_choice |

``Generated`` carries the context, the answer computed from the very data generated, the natural question, and
the scorer that fits the answer. Contexts are built when a case starts and dropped when it ends: nothing is
cached. :func:`generate` looks a family up by name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from rlm_host import RlmError

FAMILIES = ("niah", "oolong", "oolong_pairs", "multidoc", "code_mcq")


class GeneratorError(RlmError):
    """An unknown generator or bad generator parameters."""

    exit_code = 2


@dataclass
class Generated:
    """One generated context with its answer."""

    context: Any
    answer: Any
    question: str
    scorer: str = "normalized_exact"
    meta: dict[str, Any] = field(default_factory=dict)  # sizes, positions, counts: for tests and reports


def generate(name: str, params: dict[str, Any] | None = None) -> Generated:
    """Run generator ``name`` with ``params``; a clear GeneratorError for a bad name or parameter."""
    key = name.strip().lower().replace("-", "_")
    if key not in FAMILIES:
        raise GeneratorError(f"unknown context generator {name!r}", hint="choose one of: " + ", ".join(FAMILIES))
    module = importlib.import_module(f"rlm_bench.generators.{key}")
    try:
        return module.generate(**(params or {}))
    except TypeError as exc:
        raise GeneratorError(f"generator {key}: {exc}") from None
    except ValueError as exc:
        raise GeneratorError(f"generator {key}: {exc}") from None


__all__ = ["FAMILIES", "Generated", "GeneratorError", "generate"]
