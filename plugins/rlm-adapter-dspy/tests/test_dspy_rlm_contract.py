"""The framework contract (``FrameworkContract``), run against dspy-rlm through the real runner."""

from __future__ import annotations

from rlm_host.testing import FrameworkContract

from dspy_rlm_replies import LOOK, SUB_RULES, SUBMIT_WORD, WORKING


class TestDspyRlmFramework(FrameworkContract):
    framework = "dspy-rlm"
    distribution = "rlm-adapter-dspy"
    heavy_modules = ("dspy", "litellm")
    finishing_replies = (LOOK, SUBMIT_WORD)
    final_answer = "PAPAYA"
    sub_rules = SUB_RULES
    working_reply = WORKING
