"""Keep the repository's pytest out of the case folders.

The hidden tests (``<case>/hidden/test_*.py``) import the agent's modules and run only inside a project folder
(rlm-bench copies them into ``_rlm_hidden_tests/`` there); the reference / wrong / starter files are not tests
of this repository. ``tests/test_cases_offline.py`` runs them the way rlm-bench does.
"""

collect_ignore_glob = ["*"]
