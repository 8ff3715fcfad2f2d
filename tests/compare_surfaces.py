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


# --- what changed (pgrig.insights.changes): the tables every compare surface shows -----------

Rows = list[list[list[str]]]  # table rows, each cell as its lines


def changes_from_tables(tables: list, title: str) -> Rows:
    """A table of `insights.changes.tables(...)`: the cells as the surfaces should show them."""
    t = next(t for t in tables if t.title == title)
    return [[[c] if isinstance(c, str) else list(c) for c in row] for row in t.rows]


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
