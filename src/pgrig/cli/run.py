"""`pgrig run` (placeholder until implemented)."""

import typer


def register(app: typer.Typer) -> None:
    pass
