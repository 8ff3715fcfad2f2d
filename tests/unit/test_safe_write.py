"""Every atomic write goes through pgrig/safe_write.py: a file or a staged directory appears
whole or not at all, with exactly the permissions asked, and nothing is left on failure."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest

from pgrig import safe_write

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"

# The renames that are no file write: each moves what is there aside, writing nothing.
# renames that are no file write (none left: set_aside and move_file made them durable too)
NOT_WRITES: set[tuple[str, str]] = set()


def test_write_text_replaces_whole_with_exact_mode(tmp_path: Path) -> None:
    f = tmp_path / "secret.json"
    f.write_text("old")
    old = os.umask(0o077)
    try:
        safe_write.write_text(f, "new", mode=0o644)
    finally:
        os.umask(old)
    assert f.read_text() == "new" and stat.S_IMODE(f.stat().st_mode) == 0o644
    safe_write.write_text(f, "private", mode=0o600)
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    f = tmp_path / "doc.json"
    f.write_text("old")
    with pytest.raises(ValueError), safe_write.replacing(f, suffix=".part") as tmp:
        assert tmp.name.endswith(".part") and tmp.parent == tmp_path
        tmp.write_text("half")
        raise ValueError("the writer failed")
    assert f.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


def test_prepare_runs_on_the_written_file_before_it_appears(tmp_path: Path) -> None:
    f = tmp_path / "conf"
    seen: list[str] = []
    safe_write.write_text(f, "x", prepare=lambda tmp: seen.append(tmp.read_text()))
    assert seen == ["x"] and f.read_text() == "x"


def test_publish_dir_puts_a_staged_directory_in_place_once(tmp_path: Path) -> None:
    staged = tmp_path / ".new.staging"
    staged.mkdir()
    (staged / "mark").write_text("1")
    safe_write.publish_dir(staged, tmp_path / "new")
    assert (tmp_path / "new" / "mark").read_text() == "1" and not staged.exists()
    other = tmp_path / ".other.staging"
    other.mkdir()
    (other / "mark").write_text("2")
    with pytest.raises(FileExistsError):
        safe_write.publish_dir(other, tmp_path / "new")
    assert (tmp_path / "new" / "mark").read_text() == "1"


def test_set_aside_renames_what_is_there(tmp_path: Path) -> None:
    d = tmp_path / "data"
    d.mkdir()
    (d / "PG_VERSION").write_text("18")
    safe_write.set_aside(d, tmp_path / "data.old")
    assert not d.exists() and (tmp_path / "data.old" / "PG_VERSION").read_text() == "18"


@pytest.mark.parametrize("elsewhere", [False, True])
def test_move_file_here_and_across_file_systems(tmp_path: Path, elsewhere: bool) -> None:
    """Across file systems (/dev/shm is a tmpfs) a rename fails with EXDEV: the file is copied
    under a temporary name, appears whole, and the source goes."""
    base = Path("/dev/shm") if elsewhere and Path("/dev/shm").is_dir() else tmp_path
    src = base / f"pgrig-move-test-{os.getpid()}"
    src.write_bytes(b"x" * 3_000_000)
    dst = tmp_path / "stored"
    try:
        safe_write.move_file(src, dst)
    finally:
        src.unlink(missing_ok=True)
    assert dst.read_bytes() == b"x" * 3_000_000 and not src.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["stored"]  # no temporary left


def _renames(path: Path) -> list[str]:
    """Functions of `path` that call os.replace, os.rename, shutil.move or a .rename() or
    .replace(x) on a path (str.replace takes two arguments)."""
    found = []
    tree = ast.parse(path.read_text())
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            attr, owner = node.func.attr, node.func.value
            name = owner.id if isinstance(owner, ast.Name) else ""
            by_os = (name == "os" and attr in ("replace", "rename")) or (
                name == "shutil" and attr == "move"
            )
            on_path = attr == "rename" or (attr == "replace" and len(node.args) == 1)
            if by_os or (on_path and name not in ("os", "dataclasses", "str")):
                found.append(fn.name)
    return found


def test_every_rename_outside_safe_write_is_no_file_write() -> None:
    found = {
        (str(path.relative_to(SRC)), name)
        for path in SRC.rglob("*.py")
        if path.name != "safe_write.py" or path.parent != SRC
        for name in _renames(path)
    }
    assert found <= NOT_WRITES, (
        f"write atomically through pgrig/safe_write.py: {found - NOT_WRITES}"
    )
    assert len(NOT_WRITES) <= 2
