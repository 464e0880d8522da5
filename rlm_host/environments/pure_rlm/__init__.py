"""The pure_rlm environment (paper-faithful RLM): context in the REPL, metadata in the prompt."""
