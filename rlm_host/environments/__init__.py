"""Environments: the rulebook of a run (prompts, actions, rewards). Built in: pure_rlm; the others are plugins."""
