"""`--help` reads cleanly: flags show no "<bool>" type, and a docstring paragraph is one
paragraph however its source lines were broken (issue 24, item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from pgrig.cli import app as cli_app


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("TERMINAL_WIDTH", "200")


def _help(*args: str) -> str:
    cli_app._register()
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli_app.command().main([*args, "--help"], prog_name="pgrig", standalone_mode=False)
    return out.getvalue()


def test_flags_show_no_bool_type() -> None:
    for args in ((), ("run",), ("runs", "compare"), ("tune",), ("env", "create")):
        text = _help(*args)
        assert "<bool>" not in text, args
        assert "--help" in text
    assert "<int>" in _help("run")  # options that take a value still say what they take


def test_docstring_paragraphs_are_joined() -> None:
    doc = """First line
        goes on here.

        Second paragraph, broken
        in the middle of a sentence.

        - a list
        - keeps its lines
        """
    assert cli_app.reflow(doc) == (
        "First line goes on here.\n\n"
        "Second paragraph, broken in the middle of a sentence.\n\n"
        "- a list\n- keeps its lines"
    )


def test_no_command_help_breaks_a_sentence() -> None:
    """Every command's help (and every option's): no line break inside a paragraph but in
    lists, so the terminal wraps sentences at its own width."""
    cli_app._register()
    seen = 0

    def walk(c: Any, path: str) -> None:
        nonlocal seen
        texts = [c.help or ""] + [getattr(p, "help", None) or "" for p in c.params]
        for text in texts:
            for para in text.split("\n\n"):
                if "\n" in para and not para.lstrip().startswith(("-", "\b")):
                    raise AssertionError(f"{path}: {para!r}")
            seen += 1
        for name, sub in getattr(c, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(cli_app.command(), "pgrig")
    assert seen > 100
