"""Test helpers that are real components, not mocks: a loopback OpenAI-compatible server."""
