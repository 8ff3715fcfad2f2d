"""The wheels a host installs pgrig from: pgrig's own wheel never stays in the shared cache of
its dependencies (its name does not change with its sources, and pip takes a file already in
the directory by its name: an earlier build's wheel came back with its old dependencies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.hosts import bundles


def test_an_earlier_builds_pgrig_wheel_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGRIG_BUNDLES_DIR", str(tmp_path))
    deps = tmp_path / "deps-cp311"
    deps.mkdir()
    (deps / "pgrig-0.1.0-py3-none-any.whl").write_text("an earlier build: older dependencies")
    seen: list[list[str]] = []

    def pip(*args: str, cwd: Path | None = None) -> None:
        if args[0] == "download":
            seen.append(sorted(p.name for p in deps.glob("pgrig-*.whl")))
        out = Path(args[args.index("-w" if args[0] == "wheel" else "-d") + 1])
        (out / "pgrig-0.1.0-py3-none-any.whl").write_text("this build")  # pip copies it there
        (out / "pip-24.0-py3-none-any.whl").write_text("pip")

    monkeypatch.setattr(bundles, "_pip", pip)
    bundle = bundles.pgrig_bundle("3.11.2")
    assert seen and seen[0] == []  # the first download could not take the earlier wheel
    assert bundle.pgrig_wheel == "pgrig-0.1.0-py3-none-any.whl"
    assert not list(deps.glob("pgrig-*.whl"))  # nor can the next build's
