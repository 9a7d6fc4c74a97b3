"""How the study report is written out: the sections `study.report` builds, as Markdown and as HTML.

The report's content (which tables, notes and figures, in which order) is decided once, in
`study.report._sections`, as a list of (title, kind, payload) with kind one of table, text, list or
figures; this module only renders that list, so the Markdown and the HTML page can never say different
things. The HTML page is self-contained (inline CSS, figures as base64 PNG) so it can be mailed or
archived; the trade-off is a page that grows with its figures. Only `**bold**` markup is rendered.
"""

from __future__ import annotations

import base64
import html
import io
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from encoderlab.study.spec import StudySpec


def markdown_page(spec: StudySpec, sections: list[tuple]) -> str:
    """The report as Markdown: its title, then each section (`report._sections`: a title, a kind, a payload)."""
    # a study file's name, scale and description: free text (a name's `_` too), as the sections' is
    lines = [
        f"# Study {md_text(spec.name)} at scale {md_text(spec.scale)}",
        "",
        md_text(spec.description),
        "",
    ]
    for title, kind, payload in sections:
        if title:
            lines += [f"## {title}", ""]
        if kind == "table":
            head, rows = payload
            lines += _md_table(head, rows)
        elif kind == "text":
            lines.append(payload)
        elif kind == "list":
            lines += [f"- {item}" for item in payload] or ["(none)"]
        elif kind == "figures":
            # a CKA title names runs by label, a caption tasks and LRs: free text (`md_text`)
            for f in payload:
                lines += [
                    f"### {md_text(f.title)}",
                    "",
                    f"![{md_text(f.title)}](figures/{f.png.name})",
                    "",
                    f"{md_text(f.caption)} Numbers: [{md_text(f.csv)}]({f.csv}).",  # a CKA's names its runs
                    "",
                ]
                lines += _md_numbers(f.rows)
            if not payload:
                lines.append("(no figure yet: no finished results)")
        lines.append("")
    return "\n".join(lines)


_MD_CHARS = r"[\\`*_|<&]"
"""Characters free text may hold that Markdown reads as markup: emphasis (`*`, `_`), a code span's backtick,
a table's `|`, raw HTML's `<` (a task named `<b>x</b>` entered report.md as an element), an entity's `&`
(`&amp;` showed as `&`), and the backslash that escapes them (escaped by `md_text`, read back by
`_md_inline`, which meets `<` and `&` already HTML-escaped: `\\&lt;` reads back as `&lt;`)."""
_MD_MARKUP = re.compile(f"({_MD_CHARS})")
_MD_LINK = "]("
"""What makes `[x](y)` a link (`![x](y)` an image): its `(` is escaped, so the brackets show as written.
Not every `[`: the claims' sentences hold intervals (`95% CI [+1.2, +3.4]`) that no link can start."""


def md_text(text: str) -> str:
    """Free text (a run's `label`, a claim's text and sentence, a table cell) as Markdown shows it as written:
    a `|` or a line break in a label broke the table, and `**` in a label or claim text turned bold on or off
    for the rest of the line (a claim's text is set in bold). Each markup character is escaped, and
    `_md_inline` reads the escapes back; a line break is a space. Trade-off: a table cell or claim sentence
    that quotes a setting in backticks (`evaluate: false`) shows the backticks rather than code type. Leaving
    such spans alone was tried: a label's lone backtick, quoted twice in a sentence, then paired with itself
    into one code span that swallowed the text between and left the second label's `**` unescaped."""
    escaped = _MD_MARKUP.sub(r"\\\1", text).replace(_MD_LINK, "]\\(")
    return " ".join(escaped.split("\n"))


def _md_table(head: list[str], rows) -> list[str]:
    """A Markdown table of `head` and `rows`, every cell free text (a task's name, a run's label: `md_text`)."""
    out = ["| " + " | ".join(map(md_text, head)) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(md_text(c) for c in row) + " |" for row in rows]


def _md_numbers(rows: list[dict], limit: int = 40) -> list[str]:
    head = list(rows[0])
    out = _md_table(head, [[_short(r[h]) for h in head] for r in rows[:limit]])
    if len(rows) > limit:
        out.append(f"\n({len(rows) - limit} more rows in the CSV)")
    return [*out, ""]


def _short(v) -> str:
    if v is None:  # a reference line has no step: the table says so as the others do ("–"), not "None"
        return "–"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:72rem;color:#1d2330;padding:0 1rem}
h1{border-bottom:3px solid #3b6fb6;padding-bottom:.3rem}h2{margin-top:2rem;color:#23446f}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}td,th{border:1px solid #c7cfdb;padding:.25rem .5rem;text-align:left}
th{background:#e8eef7}tr:nth-child(even) td{background:#f6f8fb}li{margin:.4rem 0}
figure{margin:1rem 0;padding:.5rem;border:1px solid #dde3ec;background:#fbfcfe}img{max-width:100%}
details{margin:.3rem 0 1rem}figcaption{font-size:.9rem;color:#444}
"""


def _md_inline(text: str) -> str:
    """Escape, then render **bold** (the only markup the sections use); the escapes of `md_text` show the
    character they escape (a `\\*\\*` is no bold)."""
    parts = html.escape(text).split("**")
    parts = [_MD_ESCAPED.sub(r"\1", p) for p in parts]
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


_MD_ESCAPED = re.compile(rf"\\({_MD_CHARS}|\()")  # what `md_text` escaped


def html_page(spec: StudySpec, sections: list[tuple]) -> str:
    """The same sections as one self-contained HTML page: CSS inline, figures as base64 PNG."""
    body = [
        f"<h1>Study {html.escape(spec.name)} at scale {html.escape(spec.scale)}</h1>",
        f"<p>{html.escape(spec.description)}</p>",
    ]
    for title, kind, payload in sections:
        if title:
            body.append(f"<h2>{html.escape(title)}</h2>")
        if kind == "table":
            body.append(_html_table(*payload))
        elif kind == "text":
            body.append(f"<p>{_md_inline(payload)}</p>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{_md_inline(i)}</li>" for i in payload) + "</ul>")
        elif kind == "figures":
            for f in payload:
                b64 = base64.b64encode(f.png.read_bytes()).decode()
                head = list(f.rows[0])
                numbers = _html_table(head, [[_short(r[h]) for h in head] for r in f.rows])
                body.append(
                    f'<figure><h3>{html.escape(f.title)}</h3><img alt="{html.escape(f.title)}" src="data:image/png;base64,{b64}">'
                    f"<figcaption>{html.escape(f.caption)} Numbers: <code>{html.escape(f.csv)}</code>.</figcaption>"
                    f"<details><summary>numbers behind the figure</summary>{numbers}</details></figure>"
                )
            if not payload:
                body.append("<p>(no figure yet: no finished results)</p>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>encoderlab study {html.escape(spec.name)} ({html.escape(spec.scale)})</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    buf.write(
        "<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
    )
    for row in rows:
        buf.write("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    buf.write("</tbody></table>")
    return buf.getvalue()
