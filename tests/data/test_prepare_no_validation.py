"""`data prepare` says when its val split holds no document though --val-fraction asked for some.

A one-document corpus (or fewer than 1/(2f) documents) was written with an empty val split and no word:
the user learnt it from the run ("no validation loss"). A note now, not a refusal: docs/data.md makes the
split round(n f) documents, and a run trains without validation (`train/validation.py`), which a smoke
corpus may mean; the note names the --val-fraction that holds one out, followed here.
"""

from __future__ import annotations

from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import prepare_cli

from encoderlab.data.holdout import held_out_count
from encoderlab.data.prepare import read_meta


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("encoderlab: note:")]


def test_a_one_document_corpus_is_noted_as_holding_out_none(tmp_path, tokenizer_dir, capsys):  # noqa: F811
    src = write_jsonl(tmp_path / "one.jsonl", corpus_records(1))
    code, err = prepare_cli(src, tokenizer_dir, tmp_path / "o", capsys)
    assert code == 0 and read_meta(tmp_path / "o")["splits"]["val"]["docs"] == 0
    assert _notes(err) == [
        "encoderlab: note: --val-fraction 0.01 held out none of the corpus's only document, so the val split is "
        "empty and a run on this folder reports no validation loss; prepare more than one document (a .txt "
        "file is one document per blank-line paragraph)"
    ]


def test_the_note_names_a_val_fraction_that_holds_one_out(tmp_path, tokenizer_dir, capsys):  # noqa: F811
    docs = 40
    assert held_out_count(docs, 0.01) == 0
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(docs))
    code, err = prepare_cli(src, tokenizer_dir, tmp_path / "o", capsys)
    fraction = f"{1 / docs:.3g}"
    assert code == 0 and _notes(err) == [
        f"encoderlab: note: --val-fraction 0.01 held out none of the {docs} documents, so the val split is "
        "empty and a run on this folder reports no validation loss; prepare it again with --val-fraction "
        f"{fraction} or more (one in {docs}), or more text"
    ]
    code, err = prepare_cli(src, tokenizer_dir, tmp_path / "f", capsys, "--val-fraction", fraction)
    assert code == 0 and not _notes(err)
    assert read_meta(tmp_path / "f")["splits"]["val"]["docs"] == 1
    # no validation asked for: nothing to say
    code, err = prepare_cli(src, tokenizer_dir, tmp_path / "z", capsys, "--val-fraction", "0")
    assert code == 0 and not _notes(err)
