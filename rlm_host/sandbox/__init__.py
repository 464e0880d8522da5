"""Sandbox runtimes: persistent REPL sessions running model-written code (the protocol, and `process`)."""
