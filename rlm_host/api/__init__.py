"""The engine from Python: ``RLM`` (completion, acompletion, stream, astream) over one runner, and chat
sessions (``RLM.session``)."""
