"""rlm-tui: a Textual terminal UI for rlm (``rlm tui``), also served to a browser on loopback (``rlm tui --web``)."""
