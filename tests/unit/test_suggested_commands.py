"""A command pgrig suggests survives a paste (issue 43, class 6): every `pgrig ...` line built
with values goes through format.pgrig_command, which shell-quotes each argument. A script
path "/tmp/dir with space ü/hm ü.lua" and a --define value holding ";" printed raw would,
pasted, run a second command."""

from __future__ import annotations

import ast
import itertools
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from pgrig.format import pgrig_command

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"
GROUPS = "env|db|run|runs|tune|study|track|host|hosts|pg|profile|archive|report|serve"
# a literal that starts a pgrig command and leaves it open: the value that follows is in it
_OPEN_COMMAND = re.compile(rf"(?:^|[\s`(:])pgrig (?:{GROUPS})\b[^`)\n]*$")
# prose that names a command without being one to paste
_PROSE = {
    ("tune/saved_profile.py", "tuned by pgrig tune ("),
    ("hosts/bundles.py", "pgrig runs from"),  # "pgrig runs from {path}, not from a source tree"
}


def _offenders() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.JoinedStr):
                continue
            parts = node.values
            for part, after in itertools.pairwise(parts):
                if not (isinstance(part, ast.Constant) and isinstance(after, ast.FormattedValue)):
                    continue
                text = str(part.value)
                if _OPEN_COMMAND.search(text) and not any(
                    rel == f and text.rstrip().endswith(p.rstrip()) for f, p in _PROSE
                ):
                    found.append(f"{rel}:{node.lineno}: {text.strip()[-60:]!r}{{...}}")
    return found


def test_no_suggested_command_is_built_from_raw_values() -> None:
    """A `pgrig ...` in an f-string followed by a value is a command printed unquoted: build
    it with format.pgrig_command instead."""
    assert _offenders() == []


def test_a_suggested_command_pasted_runs_one_command(tmp_path: Path) -> None:
    script = "/tmp/dir with space \u00fc/hm \u00fc.lua"
    line = pgrig_command(
        "db",
        "generate",
        "lab",
        "--script",
        script,
        "--define",
        "x=1; touch pwned",
        rest="...",
    )
    assert line.startswith("pgrig db generate lab --script '/tmp/dir with space")
    assert shlex.split(line.removesuffix(" ...")) == [
        "pgrig", "db", "generate", "lab", "--script", script, "--define", "x=1; touch pwned",
    ]  # fmt: skip
    # pasted into a real shell with `pgrig` being echo: one command, nothing else run
    shown = subprocess.run(
        ["sh", "-c", f"pgrig() {{ printf '%s\\n' \"$@\"; }}; {line.removesuffix(' ...')}"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    )  # fmt: skip
    assert shown.stdout.splitlines()[-1] == "x=1; touch pwned"
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("value", ["$(id)", "`id`", "a'b", 'a"b', "a\nb", "--rm -rf"])
def test_every_kind_of_hostile_value_stays_one_argument(value: str) -> None:
    assert shlex.split(pgrig_command("env", "set", "lab", value)) == [
        "pgrig", "env", "set", "lab", value,
    ]  # fmt: skip


def test_the_generate_suggested_after_a_refused_sysbench_run_is_quoted() -> None:
    """The issue's case: a script under "/tmp/dir with space ü" and a --define value with ";"
    (sysbench_dataset.generate_command, printed when a --define contradicts the data)."""
    from pgrig.workloads.sysbench_dataset import generate_command

    script = "/tmp/dir with space \u00fc/hm \u00fc.lua"
    dataset = {"script": script, "defines": {"rows": "5"}}
    line = generate_command(("lab", "my db"), dataset, {"note": "a; touch /tmp/pwned"})
    assert shlex.split(line) == [
        "pgrig", "db", "generate", "lab", "--db", "my db", "--scenario", "sysbench",
        "--script", script, "--define", "rows=5", "--define", "note=a; touch /tmp/pwned",
    ]  # fmt: skip
