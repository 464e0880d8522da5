"""Environments: the rulebook of a run (prompts, actions, rewards). Built-ins: pure_rlm and generic."""
