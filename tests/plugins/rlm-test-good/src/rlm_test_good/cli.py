import typer

app = typer.Typer(help="Commands of the good test plugin.")


@app.command()
def greet(name: str = "world") -> None:
    """Print a greeting."""
    typer.echo(f"hello {name} from rlm-test-good")


@app.command()
def fail() -> None:
    """Fail with a user error."""
    from rlm_host import RlmError

    raise RlmError("the good plugin refuses", hint="this is a test")
