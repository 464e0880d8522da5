"""Model access: the connector protocol, model-string resolution, and the built-in providers."""
