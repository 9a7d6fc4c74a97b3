"""Free text in the report (a run's label, a claim's text) is shown as written, never read as Markdown.

A `**` in a label or in a claim's text turned bold on or off in report.md and report.html (a claim's
text is set in bold, so its `**` ended the bold mid-claim and bolded the sentence after it); `_` and
an unpaired backtick likewise started italics and code. `reportpage.md_text` escapes them where a `|` was already
escaped, and the HTML page shows the escaped characters as they are.
"""

from __future__ import annotations

import html
from dataclasses import replace
from types import SimpleNamespace

from fake_study import backend, small_spec
from test_report_scale import detour_spec

from encoderlab.eval.stats import Estimate
from encoderlab.study import report
from encoderlab.study.report import write_report
from encoderlab.study.reportpage import _md_inline, md_text
from encoderlab.study.runner import run_study
from encoderlab.study.spec import RunSpec
from encoderlab.words import lr_text

LABEL = "CLM **x2** _a_ `b` 1`"
TEXT = "CLM** learns *faster* early"


def test_markup_in_a_label_or_a_claims_text_is_shown_as_written(tmp_path):
    spec = small_spec()
    runs = tuple(replace(r, label=LABEL) if r.name == "clm" else r for r in spec.runs)
    claims = tuple(replace(c, text=TEXT) if c.id == "early" else c for c in spec.claims)
    out = tmp_path / "study"
    run_study(replace(spec, runs=runs, claims=claims), out, backend(), progress=False)
    md = (out / "report" / "report.md").read_text()
    page = (out / "report" / "report.html").read_text()
    escaped = r"CLM \*\*x2\*\* \_a\_ \`b\` 1\`"
    assert f"| {escaped} |" in md  # its row of the results table
    assert "- **CLM\\*\\* learns \\*faster\\* early.** " in md
    claim = next(line for line in md.splitlines() if line.startswith("- **CLM\\*\\* learns"))
    assert escaped in claim and "**" not in claim.removeprefix("- **").split(".** ", 1)[1]
    assert LABEL not in md and TEXT not in md
    # the page: the claim's text alone in bold, its own asterisks and the label's characters as written
    assert f"<li><strong>{html.escape(TEXT)}.</strong> " in page
    assert html.escape(LABEL) in page and "\\*" not in page and "<strong>x2</strong>" not in page


def test_an_escaped_character_reads_back_as_itself_on_the_page():
    for text in (
        "a ** b",
        "x_y_z",
        "`code`",
        "`a|b`",
        "a ` b",
        "a | b",
        "back\\slash",
        "*",
        "![x](y)",
        "]\\(",
        "<b>x</b>",
        "&amp; &lt;",
        "a \\< b",
    ):
        assert _md_inline(md_text(text)) == html.escape(text)
    assert _md_inline(f"**{md_text('bold ** inside')}.** after") == "<strong>bold ** inside.</strong> after"


LABEL_TOO = "MLM **x2** a\\b mlm_40"


def _table(degenerate=None, test=None):
    per = SimpleNamespace(degenerate=degenerate, best_lr=1e-4, test=test)
    return SimpleNamespace(models=["m"], per_task={"m": {"t": per}})


def test_a_label_in_the_degenerate_warnings_is_shown_as_written():
    """Its list items named the label unescaped: `**` in it bolded the rest of the item, in report.md and on
    the page, and a backslash escaped the character after it."""
    d = SimpleNamespace(runs=1, of=2, why="predicted *one* class")
    data = SimpleNamespace(label=lambda m: LABEL_TOO)
    (_, _, (item,)), _ = report._degenerate(data, _table(degenerate=d))
    written = f"{LABEL_TOO} on t: 1 of 2 fine-tuning seeds at LR {lr_text(1e-4)}; predicted *one* class"
    assert item == md_text(written) and _md_inline(item) == html.escape(written)


def test_a_label_in_the_ceiling_sentence_is_shown_as_written():
    spec = detour_spec(
        runs=(RunSpec(name="m", label=LABEL_TOO, init="minilm", data="biomed"), *detour_spec().runs)
    )
    test = Estimate(mean=99.5, sd=None, n=2, ci_low=99.0, ci_high=100.0, half_width=0.5)
    data = SimpleNamespace(spec=spec, label=lambda m: spec.run(m).display)
    (*_, (_, _, text)) = report._reach(data, _table(test=test))
    assert md_text(LABEL_TOO) in text and LABEL_TOO not in text
    assert LABEL_TOO in html.unescape(_md_inline(text)) and "<strong>" not in _md_inline(text)


def test_a_label_in_a_figures_title_is_shown_as_written():
    """A CKA figure's title names its runs by label: its heading and image text in report.md were unescaped."""
    from pathlib import Path

    from encoderlab.study.figures import Figure
    from encoderlab.study.reportpage import markdown_page

    title = f"CKA divergence: {LABEL_TOO} vs MLM-40"
    fig = Figure(name="cka", title=title, caption="c.", png=Path("figures/cka.png"), rows=[{"layer": 0}])
    md = markdown_page(small_spec(), [("Figures", "figures", [fig])])
    assert f"### {md_text(title)}\n" in md and f"![{md_text(title)}](figures/cka.png)" in md
    assert title not in md


def test_a_corpus_glob_in_the_passes_note_is_shown_as_written():
    """The note under the compute table says how each corpus was sized, naming its entries: a glob's `**`
    (`data/**/*.jsonl`) turned bold on in report.md and on the page, unclosed, to the end of the note."""
    from encoderlab.study.plan import CorpusSize

    how = "estimated from data/**/*.jsonl: 2 files, less the validation split"
    compute = SimpleNamespace(
        corpora={"main": CorpusSize(dataset="main", unique_tokens=10, counted=False, how=how)}
    )
    note = report._corpora_note(compute)
    assert md_text(how) in note and how not in note
    assert "<strong>" not in _md_inline(note) and how in _md_inline(note)


TASK = "odd*task_x|y`z [x](y)"


def test_a_task_name_in_a_figure_caption_is_shown_as_written(tmp_path):
    """The data-efficiency caption names the checkpoints' tasks and LRs, and figure captions entered report.md
    unescaped: a task's `*`, `_` or backtick started emphasis or code, its `|` and its `[x](y)` a link.
    The results table's head and its metrics note named the task unescaped too."""
    tasks = {TASK: "sc", "mnli": "sc", "ner": "tc", "squad": "qa"}
    out = tmp_path / "study"
    run_study(small_spec(), out, replace(backend(), suite_tasks=lambda suite: tasks), progress=False)
    write_report(out)  # with figures (the fake backend's report node draws none)
    md = (out / "report" / "report.md").read_text()
    caption = next(line for line in md.splitlines() if "checkpoints were fine-tuned on" in line)
    shown = r"odd\*task\_x\|y\`z [x]\(y)"
    assert md_text(TASK) == shown and shown in caption and TASK not in caption
    head = next(line for line in md.splitlines() if line.startswith("| model |"))
    assert head.endswith(f"| {shown} |") and f"{shown}: accuracy" in md and TASK not in md
    page = (out / "report" / "report.html").read_text()
    assert html.escape(TASK) in page and html.escape(shown) not in page


def test_raw_html_in_a_task_name_is_shown_as_written():
    """Markdown passes raw HTML through: a task named `<img src=x onerror=...>` or `<b>x</b>` entered
    report.md as an element, not text, and an entity (`&amp;`) showed as the character it names."""
    from encoderlab.study.reportpage import markdown_page

    task = "<b>x</b> &amp; <img src=x>"
    md = markdown_page(small_spec(), [("Results", "table", (["model", task], [["m", task]]))])
    shown = r"\<b>x\</b> \&amp; \<img src=x>"
    assert md_text(task) == shown
    assert f"| model | {shown} |" in md and f"| m | {shown} |" in md and task not in md


HOSTILE = "odd*x_y|z `t` [x](y) <b>b</b>"
CORPUS = "data/**/my_*|c`d`[x](y)<b>.jsonl"


def test_a_study_files_free_text_reaches_the_report_escaped(tmp_path):
    """Besides labels, claim texts and task names: the study's name and description headed report.md
    unescaped, and the paragraphs on the paper (its departures name the study's corpus entries, its reach the
    compared run's label) entered report.md and the page unescaped: a `**` glob bolded the rest of the
    paragraph, `[x](y)` made a link. Read back from both files."""
    spec = small_spec(name="my_fake_", description=HOSTILE, paper="paper1")
    spec = replace(
        spec,
        data=(replace(spec.data[0], corpus=(CORPUS,)),),
        runs=tuple(replace(r, label=HOSTILE) if r.name == spec.baseline else r for r in spec.runs),
        claims=tuple(replace(c, text=HOSTILE) if c.id == "early" else c for c in spec.claims),
    )
    out = tmp_path / "study"
    run_study(spec, out, backend(), progress=False)
    write_report(out)  # with figures: their titles, captions and numbers
    md = (out / "report" / "report.md").read_text()
    page = (out / "report" / "report.html").read_text()
    lines = md.splitlines()
    assert lines[0] == f"# Study {md_text('my_fake_')} at scale test" and lines[2] == md_text(HOSTILE)
    assert HOSTILE not in md and CORPUS not in md  # anywhere: every table, paragraph, list and caption
    setup = lines[lines.index("## What this scale is") + 2]
    assert md_text(CORPUS) in setup and "**This scale does not reproduce" in setup
    reach = lines[lines.index("## What this scale can and cannot show") + 2]
    assert f"({md_text(HOSTILE)})" in reach
    # the page: shown as written, the characters neither markup nor escapes
    assert html.escape(HOSTILE) in page and html.escape(CORPUS) in page
    assert "<b>" not in page and "\\*" not in page and "\\_" not in page and '<a href="y"' not in page
    shown = html.unescape(page)
    assert f"It differs in data: {CORPUS}, not " in shown and f"against ({HOSTILE}) trains" in shown
