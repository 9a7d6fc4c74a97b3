"""Tokenizing documents for `data prepare` (`data/encode.py`)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from corpus_fixtures import corpus_records, wordpiece_with_call_settings, write_jsonl  # noqa: F401 (fixture)

from encoderlab.data.prepare import PrepareConfig, prepare, read_meta, split_dir
from encoderlab.data.sources import SourceConfig
from encoderlab.data.tokenizer import load_tokenizer
from encoderlab.errors import UserError


def test_documents_are_tokenized_whole_whatever_truncation_and_padding_the_tokenizer_file_keeps(
    tmp_path,
    wordpiece_with_call_settings,  # noqa: F811 (fixture)
):
    # Before: every document was cut to 8 ids and padded with pad ids to 12.
    records = corpus_records(40)
    src = write_jsonl(tmp_path / "corpus.jsonl", records)
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(src)),), tokenizer=str(wordpiece_with_call_settings),
        decontaminate=(), val_fraction=0.0,
    )  # fmt: skip
    out = prepare(cfg, tmp_path / "out", workers=1, progress=False)
    assert read_meta(out)["encoder"] == "tokenizers"
    tok = load_tokenizer(wordpiece_with_call_settings)
    tokens = np.fromfile(split_dir(out, "train") / "tokens.bin", dtype=read_meta(out)["dtype"])
    offsets = np.load(split_dir(out, "train") / "doc_offsets.npy")
    docs = [tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    want = [tok(r["text"], truncation=False)["input_ids"] for r in records]  # [CLS] text [SEP], whole
    assert max(len(w) for w in want) > 12  # the corpus has documents the file's settings would cut
    assert docs == want
    assert tok.pad_token_id not in tokens
    shutil.rmtree(out)


def test_a_folder_prepared_with_cut_documents_is_refused_on_read_and_on_rerun(
    tmp_path,
    wordpiece_with_call_settings,  # noqa: F811 (fixture)
    capsys,
):
    """A folder the old code prepared with such a tokenizer holds cut, padded documents: every reader
    refuses it (`packed.read_meta`), and preparing into it again says to delete it."""
    from encoderlab.cli import main

    src = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(20))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(src)),),
        tokenizer=str(wordpiece_with_call_settings),
        decontaminate=(),
    )
    out = prepare(cfg, tmp_path / "old", workers=1, progress=False)
    meta = json.loads((out / "meta.json").read_text())
    del meta["documents"]  # as the old code wrote it
    del meta["recipe"]["documents"]
    (out / "meta.json").write_text(json.dumps(meta))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(UserError, match="kept its tokenizer's truncation at 8, padding to 12"):
        read_meta(out)
    args = ["data", "prepare", "--source", str(src), "--tokenizer", str(wordpiece_with_call_settings)]
    with pytest.raises(SystemExit) as stop:
        main([*args, "--out", str(out), "--decontaminate", "none"])
    assert stop.value.code == 2
    line = capsys.readouterr().err.strip()
    assert line.endswith(f"so every document in it is cut and padded; delete {out} and prepare it again")
    assert "\n" not in line
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
