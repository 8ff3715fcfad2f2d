"""Pytest's default import mode needs unique test module basenames across folders."""

from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique() -> None:
    tests = Path(__file__).resolve().parents[1]
    names = Counter(path.name for path in tests.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
