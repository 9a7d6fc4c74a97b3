"""`study plan`'s dataset line says how a corpus entry's .txt files are cut into documents, in the words the
`data` commands announce it (`mixing.txt_unit_text`); before, only the `data` commands said it, and a study
trained on paragraphs, lines or whole files unsaid (docs/data.md, ".txt files")."""

from __future__ import annotations

import logging
from dataclasses import replace

from fake_study import tiny_corpus

from encoderlab.data.mixing import _announce
from encoderlab.data.sources import describe, parse_source
from encoderlab.study.catalog import get_study
from encoderlab.study.plan import plan_study
from encoderlab.study.plantext import plan_text


def _plan(corpus: tuple[str, ...]) -> str:
    """The plan of the demo study (a user's study file is read into the same spec) on this corpus."""
    spec = get_study("paper1-pfs", "demo")
    return plan_text(plan_study(replace(spec, data=tuple(replace(d, corpus=corpus) for d in spec.data))))


def _announced(entry: str, caplog) -> str:
    """What the `data` commands say of the entry when they open it."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="encoderlab"):
        cfg = parse_source(entry)
        _announce(cfg, describe(cfg))
    (said,) = [r.getMessage() for r in caplog.records if ".txt file" in r.getMessage()]
    return said.removeprefix(f"{cfg.location}: ")


def test_the_plan_says_how_txt_files_are_cut_as_the_data_commands_do(tmp_path, caplog):
    folder = tmp_path / "books"
    folder.mkdir()
    for i in range(2):
        (folder / f"b{i}.txt").write_text(
            "\n".join(f"line {j} of book {i} with a few words" for j in range(400))
        )
    lines, paragraphs = f"{folder}#txt_unit=line", str(tmp_path / "essay.txt")
    (tmp_path / "essay.txt").write_text("A first paragraph of an essay.\n\nA second one.\n")
    jsonl = str(tiny_corpus(tmp_path / "c.jsonl", 50))
    text = _plan((lines, paragraphs, jsonl))
    said = {e: _announced(e, caplog) for e in (lines, paragraphs)}
    assert "one document per line (txt_unit=line" in said[lines]
    assert "one document per blank-line paragraph (txt_unit=paragraph" in said[paragraphs]
    (line,) = [x for x in text.splitlines() if x.startswith("dataset main:")]
    assert f"{lines} ({said[lines]}) + {paragraphs} ({said[paragraphs]}) + {jsonl};" in line  # JSONL: nothing
