"""The suite's layout: unique test module basenames across folders (pytest's default import
mode needs them), and the quiet tier's files named whole."""

import re
from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique() -> None:
    tests = Path(__file__).resolve().parents[1]
    names = Counter(path.name for path in tests.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []


def test_the_quiet_tier_names_every_file_with_a_quiet_host_test() -> None:
    """`make test` runs the quiet_host tests from the files the Makefile names (collecting the
    whole suite for three tests costs more than they do): a marked test elsewhere would never
    run."""
    root = Path(__file__).resolve().parents[2]
    makefile = (root / "Makefile").read_text()
    (line,) = [ln for ln in makefile.splitlines() if ln.startswith("QUIET_HOST_FILES =")]
    named = set(line.split("=", 1)[1].split())
    marked = {
        str(path.relative_to(root))
        for path in (root / "tests").rglob("test_*.py")
        if re.search(r"pytest\.mark\.quiet_host\b", path.read_text())
    }
    assert named == marked
