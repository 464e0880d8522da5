"""Fails at import, as a plugin with a missing native dependency would."""

raise ImportError("libfoo.so.1: cannot open shared object file")
