"""Benchmarks with real data and answers: cases, generators, scorers, packs, the runner, summaries, gates.

Modules (nothing heavy is imported here, so the pack hook stays cheap at CLI start):

- ``cases``: ``BenchmarkCase`` and ``ContextSpec``;
- ``generators/``: long-context generators (S-NIAH, OOLONG, OOLONG-Pairs, multi-document QA, code MCQ);
- ``scorers``, ``judge``: how predictions are scored (the judge is an LLM with question-type prompts);
- ``packs``: the built-in presets, registered through the benchmark pack hook; ``external``: YAML/JSON/JSONL packs;
- ``runner``: runs cases (native loop or direct-LLM baseline), concurrently, saving each result, resumable;
- ``sweep/``: grids of benchmarks (``rlm bench sweep``) on this machine or a Ray cluster, and the driver and
  executors every benchmark runs through;
- ``summary``: the summary JSON (``BenchmarkSummary``) and its aggregates; ``store``: where results live;
- ``compare``: CI gates between two benchmarks; ``report``: markdown, csv and json reports.
"""
