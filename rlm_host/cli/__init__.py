"""The ``rlm`` command-line interface (typer); sub-command modules load only when used."""
