"""Read the TPS comparison (ratio text, verdict text) off every surface that shows one.

`pgrig runs compare --json`, the Markdown and HTML of `pgrig report compare` and the web
compare page must agree exactly (issue 9). Used by the unit tests on stored records and the
integration test on real runs. Importable by name: tests/ is on sys.path (tests/conftest.py).
"""

from __future__ import annotations

import html
import re

Answer = tuple[str, str]  # ("x1.234 [1.011, 1.123]", "faster (indicative)")


def from_json(doc: dict) -> Answer:
    """`pgrig runs compare A B --json`."""
    v = doc["verdict"]
    return v["text"], v["verdict_text"]


def _unmark(text: str) -> str:
    """A report cell's line as the user reads it (no Markdown escapes, no '*' footnote mark)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", text)).removesuffix(" *")


def from_markdown(text: str, label: str) -> Answer:
    """The 'vs <baseline>' cell of the row of group `label` (e.g. 'runs 3,4') in the Markdown
    of `pgrig report compare`."""
    head = next(ln for ln in text.splitlines() if ln.startswith("| runs | "))
    columns = [c.strip() for c in head.strip("|").split(" | ")]
    col = next(i for i, c in enumerate(columns) if c.startswith("vs "))
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| {label} | "))
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    ratio, verdict = cells[col].split("<br>")
    return _unmark(ratio), _unmark(verdict)


def from_report_html(text: str, label: str) -> Answer:
    """The same cell in the HTML of `pgrig report compare`."""
    table = next(t for t in text.split("<table>") if "<th>runs</th>" in t)
    columns = re.findall(r"<th>(.*?)</th>", table)
    col = next(i for i, c in enumerate(columns) if c.startswith("vs "))
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if cells and html.unescape(cells[0]) == label:
            ratio, verdict = cells[col].split("<br>")
            return _unmark(ratio), _unmark(verdict)
    raise AssertionError(f"no row {label!r}")


def from_web(page: str) -> Answer:
    """The TPS row of the web compare page (the second column against the first)."""
    row = page.split("<th>TPS</th>")[1].split("</tr>")[0]
    ratio = re.search(r'<div class="ratio">(.*?)</div>', row, re.S)
    verdict = re.search(r'<div class="verdict">(.*?)</div>', row, re.S)
    assert verdict, row
    return html.unescape(ratio.group(1)) if ratio else "-", html.unescape(verdict.group(1))


# --- any figure's row (a TPC-H run's queries): the same ratio and verdict on every surface ---


def figure_from_json(doc: dict, key: str) -> Answer:
    """`pgrig runs compare A B --json`: the engine's comparison of figure `key`."""
    c = doc["comparisons"][key]
    return c["text"], c["verdict_text"]


def figure_from_text(text: str, label: str) -> Answer:
    """The row `label` of `pgrig runs compare`'s table (text): its ratio and verdict cells."""
    row = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{label} "))
    cells = [c for c in re.split(r"\s{2,}", row.strip()) if c]
    return cells[-2], cells[-1]


def figure_from_markdown(text: str, label: str) -> Answer:
    """The row `label` of the Figures table of `pgrig report compare` (Markdown): its
    "B/A, verdict" cell, the ratio over the verdict."""
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| {label} | "))
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    ratio, verdict = cells[-1].split("<br>")
    return _unmark(ratio), _unmark(verdict)


def figure_from_report_html(text: str, label: str) -> Answer:
    """The same row in the HTML of `pgrig report compare`."""
    for row in re.findall(r"<tr>(.*?)</tr>", text, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if cells and html.unescape(cells[0]) == label:
            ratio, verdict = cells[-1].split("<br>")
            return _unmark(ratio), _unmark(verdict)
    raise AssertionError(f"no row {label!r}")


def figure_from_web(page: str, label: str) -> Answer:
    """The row `label` of the web compare page (the second column against the first)."""
    row = page.split(f"<th>{html.escape(label)}</th>")[1].split("</tr>")[0]
    ratio = re.search(r'<div class="ratio">(.*?)</div>', row, re.S)
    verdict = re.search(r'<div class="verdict">(.*?)</div>', row, re.S)
    assert verdict, row
    return html.unescape(ratio.group(1)) if ratio else "-", html.unescape(verdict.group(1))


# --- what changed (pgrig.insights.changes): the tables every compare surface shows -----------

Rows = list[list[list[str]]]  # table rows, each cell as its lines


def changes_from_tables(tables: list, title: str) -> Rows:
    """A table of `insights.changes.tables(...)`: the cells as the surfaces should show them."""
    t = next(t for t in tables if t.title == title)
    return [[list(c.lines) for c in row] for row in t.rows]


def changes_from_markdown(text: str, title: str) -> Rows:
    """The rows of the table captioned `title` in the Markdown of `pgrig report compare`."""
    lines = text.splitlines()
    at = lines.index(f"*{title}*")
    rows = []
    for ln in lines[at + 4 :]:  # caption, blank, header, separator
        if not ln.startswith("| "):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
        rows.append([[_unmark(x) for x in c.split("<br>")] for c in cells])
    return rows


def changes_from_web(page: str, title: str) -> Rows:
    """The rows of the what-changed table `title` on the web compare page."""
    table = page.split(f'data-part="{html.escape(title)}">')[1].split("</table>")[0]
    body = table.split("<tbody>")[1]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = []
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S):
            pre = re.fullmatch(r'<pre class="plan">(.*)</pre>', cell, re.S)
            inner = pre.group(1).split("\n") if pre else [cell]
            cells.append([html.unescape(x) for x in inner])
        rows.append(cells)
    return rows


# --- the settings diff and the run summary (pgrig.views): rows as every surface shows them ----

Pairs = list[tuple[str, list[str]]]  # (row label, values)


def _columns(line: str) -> list[str]:
    """A terminal table row: cells are separated by two or more spaces."""
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


def settings_from_cli(text: str) -> Pairs:
    """The "settings that differ" table of `pgrig runs compare` (text)."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "settings that differ")
    rows = []
    for ln in lines[at + 2 :]:  # heading, header
        cells = _columns(ln)
        if len(cells) < 3 or ln.startswith(("verdict", " ")):
            break
        rows.append((cells[0], cells[1:]))
    return rows


def settings_from_web(page: str) -> Pairs:
    """The settings diff of the web compare page."""
    table = page.split("<h2>Settings diff</h2>")[1].split("</table>")[0]
    rows = []
    for row in re.findall(r'<tr class="differs">(.*?)</tr>', table, re.S):
        label = re.search(r"<th[^>]*>(.*?)</th>", row, re.S)
        assert label, row
        values = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        rows.append((html.unescape(label.group(1)), [html.unescape(v) for v in values]))
    return rows


def settings_from_markdown(text: str) -> Pairs:
    """The "Settings that differ" section of `pgrig report compare` (Markdown)."""
    section = text.split("## Settings that differ")[1].split("\n## ")[0]
    rows = []
    for ln in section.splitlines()[4:]:  # blank, header, separator
        if not ln.startswith("| "):
            break
        cells = [_unmark(c.strip()) for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
        rows.append((cells[0], cells[1:]))
    return rows


def summary_from_cli(text: str) -> Pairs:
    """The "run" table of `pgrig runs show` (label, then the value on one or more lines)."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "run")
    rows: Pairs = []
    for ln in lines[at + 1 :]:
        if not ln.strip() or ln.strip() == "results":
            break
        label, value = ln[:13].strip(), ln[13:].strip()
        if label:
            rows.append((label, [value]))
        else:  # a wrapped value
            rows[-1][1][0] += " " + value
    return rows


def summary_from_web(page: str) -> Pairs:
    """The "Run" table of the web run page."""
    table = page.split('class="compact kv run-summary">')[1].split("</table>")[0]
    return [
        (html.unescape(k), [html.unescape(v)])
        for k, v in re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", table, re.S)
    ]


def summary_from_markdown(text: str) -> Pairs:
    """The summary list of `pgrig report run` (Markdown: "- **label**: value")."""
    return [
        (_unmark(k), [_unmark(v)]) for k, v in re.findall(r"^- \*\*(.*?)\*\*: (.*)$", text, re.M)
    ]


# --- the study view (pgrig.views.study): the points table on every surface ----------------------

Table = list[dict[str, list[str]]]  # rows: column -> the cell's lines


def study_from_markdown(text: str, first_column: str) -> Table:
    """The results table of `pgrig study report` (Markdown): the table whose header starts
    with `first_column` and has a "TPS [bounds]" column."""
    lines = text.splitlines()
    at = next(
        i
        for i, ln in enumerate(lines)
        if ln.startswith(f"| {first_column} |") and "TPS [bounds]" in ln
    )
    columns = [_unmark(c.strip()) for c in re.split(r"(?<!\\)\|", lines[at])[1:-1]]
    rows = []
    for ln in lines[at + 2 :]:
        if not ln.startswith("| "):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
        rows.append(
            {c: [_unmark(x) for x in v.split("<br>")] for c, v in zip(columns, cells, strict=True)}
        )
    return rows


def study_from_web(page: str) -> Table:
    """The same table on the web study page (the report's document, laid out by the page)."""
    table = next(t for t in page.split('<table class="study">') if "TPS [bounds]</th>" in t)
    table = table.split("</table>")[0]
    columns = [html.unescape(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        values = []
        for cell in cells:
            found = re.findall(r"<div>(.*?)</div>", cell, re.S)
            values.append([html.unescape(x) for x in found] or [html.unescape(cell.strip())])
        rows.append(dict(zip(columns, values, strict=True)))
    return rows


# --- the hosts of compared runs (pgrig.views.compare_hosts) ---------------------------------

HostRows = list[tuple[str, str, str, list[str]]]  # (host, role, figure, values per column)


def hosts_from_table(table: object) -> HostRows:
    return [(r[0].text, r[1].text, r[2].text, [c.text for c in r[3:]]) for r in table.rows]  # type: ignore[attr-defined]


def hosts_from_cli(text: str) -> HostRows:
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "hosts")
    rows: HostRows = []
    for ln in lines[at + 2 :]:  # heading, header
        cells = [c for c in re.split(r"\s{2,}", ln.strip()) if c]
        if len(cells) < 5:
            break
        rows.append((cells[0], cells[1], cells[2], cells[3:]))
    return rows


def _host_cells(cells: list[str]) -> tuple[str, str, str, list[str]]:
    return cells[0], cells[1], cells[2], cells[3:]


def hosts_from_web(page: str) -> HostRows:
    table = page.split('data-part="Hosts">')[1].split("</table>")[0].split("<tbody>")[1]
    return [
        _host_cells([html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)])
        for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)
    ]


def hosts_from_markdown(text: str) -> HostRows:
    section = text.split("## Hosts\n")[1].split("\n## ")[0]
    return [
        _host_cells([_unmark(c.strip()) for c in re.split(r"(?<!\\)\|", ln)[1:-1]])
        for ln in section.splitlines()[3:]  # blank, header, separator
        if ln.startswith("| ")
    ]


def hosts_from_report_html(text: str) -> HostRows:
    section = text.split("<h2>Hosts</h2>")[1].split("<h2>")[0]
    body = section.split("<tbody>")[1] if "<tbody>" in section else section
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        _host_cells([html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)])
        for row in rows
        if "<td" in row
    ]


# --- the hosts of a study (pgrig.views.study_hosts): point, host, role and figures per row ------

StudyHostRows = list[list[str]]  # each row's cells, a cell's lines joined by a space


def study_hosts_from_table(table: object) -> StudyHostRows:
    return [[" ".join(c.lines) for c in row] for row in table.rows]  # type: ignore[attr-defined]


def study_hosts_from_markdown(text: str) -> StudyHostRows:
    section = text.split("## Hosts\n")[1].split("\n## ")[0]
    return [
        [
            " ".join(_unmark(x) for x in c.strip().split("<br>"))
            for c in re.split(r"(?<!\\)\|", ln)[1:-1]
        ]
        for ln in section.splitlines()[3:]  # blank, header, separator
        if ln.startswith("| ")
    ]


def _study_hosts_html(section: str) -> StudyHostRows:
    body = section.split("<tbody>")[1].split("</tbody>")[0] if "<tbody>" in section else section
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = []
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S):
            lines = re.findall(r"<div>(.*?)</div>", cell, re.S) or cell.strip().split("<br>")
            cells.append(" ".join(html.unescape(x) for x in lines))
        if cells:
            rows.append(cells)
    return rows


def study_hosts_from_web(page: str) -> StudyHostRows:
    """The Hosts section of the web study page (the report's document)."""
    return _study_hosts_html(page.split("<h2>Hosts</h2>")[1].split("<h2>")[0])


def study_hosts_from_report_html(text: str) -> StudyHostRows:
    return _study_hosts_html(text.split("<h2>Hosts</h2>")[1].split("<h2>")[0])


def study_hosts_from_cli(text: str, columns: int) -> StudyHostRows:
    """The "hosts" table of `pgrig study show`, each row's first line: it holds the first line
    of every cell, two or more spaces apart (the lines under it continue wrapped cells; the
    figures never wrap). The table ends at its note."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "hosts")
    rows: StudyHostRows = []
    for ln in lines[at + 1 :]:
        if ln.startswith("Each host's own sampler"):
            break
        cells = [c for c in re.split(r"\s{2,}", ln.strip()) if c]
        if len(cells) == columns and not ln.startswith(" ") and cells[0] != "point":
            rows.append(cells)
    return rows
