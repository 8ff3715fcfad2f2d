"""Write reports to files: the entry points the CLI (and the web) call.

Markdown goes to `<out>/<stem>.md` with `<out>/<stem>-<chart>.svg` next to it; HTML is one
self-contained `<out>/<stem>.html`. The default output directory is <home>/reports/<stem>/.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pgrig import paths
from pgrig.analysis.compare import DEFAULT_MISRATE, DEFAULT_THRESHOLD, check_parameters
from pgrig.archive.protocol import RunReader
from pgrig.errors import PgrigError
from pgrig.reports.document import Document
from pgrig.request.values import ascii_digits, check_int64

FORMATS = ("md", "html")


def default_out_dir(stem: str) -> Path:
    return paths.home() / "reports" / stem


def check_formats(formats: Iterable[str]) -> list[str]:
    out = []
    for f in formats:
        for part in f.split(","):
            part = part.strip().lower()
            if part not in FORMATS:
                raise PgrigError(f"unknown report format {part!r}: use md or html")
            if part not in out:
                out.append(part)
    return out or ["md"]


def write(doc: Document, stem: str, formats: Iterable[str], out_dir: Path | None) -> list[Path]:
    from pgrig.reports import html, markdown

    fmts = check_formats(formats)
    target = out_dir or default_out_dir(stem)
    written = []
    try:
        for f in fmts:
            written.append((markdown if f == "md" else html).write(doc, target, stem))
    except OSError as e:
        raise PgrigError(f"cannot write the report to {target}: {e.strerror or e}") from None
    return written


def study_document(archive: RunReader, name: str) -> Document:
    from pgrig.reports import iteration, sweep
    from pgrig.reports.summary import load_study

    kind = archive.get_study(name).kind
    if kind == "tune":
        return tune_document(archive, name)
    if kind == "track":
        return track_document(archive, name)
    data = load_study(archive, name)
    return iteration.build(data) if data.spec.kind == "iterations" else sweep.build(data)


def track_document(archive: RunReader, name: str, threshold: float = DEFAULT_THRESHOLD) -> Document:
    """A version series (pgrig track): the one SeriesView every surface renders."""
    from pgrig.reports import track_report
    from pgrig.track import figures, runner

    return track_report.build(figures.build(runner.load_series(archive, name), threshold, archive))


def track_report(
    archive: RunReader,
    name: str,
    formats: Iterable[str] = ("md",),
    out_dir: Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Path]:
    check_formats(formats)
    check_parameters(threshold, DEFAULT_MISRATE)
    return write(track_document(archive, name, threshold), f"track-{name}", formats, out_dir)


def tune_document(archive: RunReader, name: str) -> Document:
    """A tuning study (tune/runner.py): its record's extra, its runs, the baseline run whole."""
    from pgrig.reports import tune_report
    from pgrig.tune import confirm

    record = archive.get_study(name)
    baseline = record.extra.get("baseline_run")
    base = archive.get_run(baseline) if baseline is not None else None
    runs = archive.study_runs(name)
    reference = confirm.reference_of(record.extra)
    confirming = [r for group in confirm.groups(runs, reference).values() for r in group]
    ablating = [r for r in runs if (r.study_point or "").startswith("ablate-") and r.status == "ok"]
    whole = [archive.get_run(r.id) for r in (*confirming, *ablating) if r.id is not None]
    return tune_report.build(record, runs, base, whole)


def study_report(
    archive: RunReader, name: str, formats: Iterable[str] = ("md",), out_dir: Path | None = None
) -> list[Path]:
    check_formats(formats)
    return write(study_document(archive, name), name, formats, out_dir)


def run_report(
    archive: RunReader, run_id: int, formats: Iterable[str] = ("md",), out_dir: Path | None = None
) -> list[Path]:
    from pgrig.reports.run_report import run_document

    check_formats(formats)
    return write(run_document(archive.get_run(run_id)), f"run-{run_id}", formats, out_dir)


def compare_report(
    archive: RunReader,
    groups: list[list[int]],
    formats: Iterable[str] = ("md",),
    out_dir: Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    misrate: float = DEFAULT_MISRATE,
) -> list[Path]:
    from pgrig.reports.run_report import compare_document

    check_formats(formats)
    check_parameters(threshold, misrate)
    if len(groups) < 2:
        raise PgrigError("compare needs at least two runs or groups of runs (e.g. 1,2,3 4,5,6)")
    recs = [[archive.get_run(i) for i in g] for g in groups]
    stem = "compare-" + "-vs-".join("_".join(str(i) for i in g) for g in groups)
    return write(compare_document(recs, threshold, misrate), stem[:120], formats, out_dir)


MAX_RANGE = 1001  # run ids in one "a-b" range


def parse_group(text: str) -> list[int]:
    """'7' -> [7]; '1,2,3' -> [1, 2, 3]; '4-6' -> [4, 5, 6]; mixed '1,4-6'."""
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if not ascii_digits(part.replace("-", "", 1)):
                raise ValueError(part)  # int() reads "٣" as 3 and "-5" as a negative id
            if "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                if b < a:
                    raise PgrigError(
                        f"bad run list {text!r}: the range {part!r} runs backwards: write {b}-{a}"
                    )
                if b - a >= MAX_RANGE:
                    raise PgrigError(
                        f"bad run list {text!r}: the range {part!r} spans {b - a + 1:,} runs, "
                        f"at most {MAX_RANGE:,} in one range"
                    )
                ids.extend(range(a, b + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise PgrigError(f"bad run list {text!r}: use ids like 7, 1,2,3 or 4-6") from None
    return ids


def parse_groups(texts: Iterable[str]) -> list[list[int]]:
    """Groups of run ids (see parse_group); a run may appear only once in all of them."""
    groups = [parse_group(t) for t in texts]
    seen: set[int] = set()
    for g in groups:
        for i in g:
            check_int64(i, "run id")
            if i in seen:
                raise PgrigError(f"run {i} is listed twice: each run belongs to one group")
            seen.add(i)
    return groups
