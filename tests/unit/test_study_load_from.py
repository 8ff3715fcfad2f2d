"""A study's [run].load_from reaches every run request (`pgrig run --load-from`)."""

from __future__ import annotations

from pathlib import Path

from pgrig.study import plan, spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "studies"


def test_load_from_goes_from_the_study_file_to_each_run() -> None:
    study = spec.load(EXAMPLE / "pooler-over-network.toml", check_files=False)
    built = plan.build(study)
    requests = [built.run_request(r) for r in built.runs]
    assert len(requests) == 20
    assert all(r.load_from == ["h3"] for r in requests)
    assert {r.via for r in requests} == {"direct", "pgbouncer"}
