"""What `data prepare --max-docs N` counts: the first N documents read from the mixture, as `head -n` reads
the input. A document decontamination then removes, or one held out for validation, is one of the N (fewer are
kept for training); a record skipped as bad (`--on-error skip`) is not (it is no document). The cap is on the
input so that the same N reads the same documents whatever `--decontaminate` or `--val-fraction` says, as
the prepared folder's recipe and `study plan`'s estimates (capped by the dataset's `max_docs`) assume."""

from __future__ import annotations

from corpus_fixtures import random_words, tokenizer_dir, write_jsonl  # noqa: F401

from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig


def test_max_docs_counts_documents_read_removed_ones_included_bad_records_not(tmp_path, tokenizer_dir):  # noqa: F811
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(900, 40)}])
    records = [{"text": random_words(i, 30)} for i in range(12)]
    records[3] = records[4] = {"text": "Copied: " + random_words(900, 40)}  # removed by decontamination
    corpus = write_jsonl(tmp_path / "corpus.jsonl", records)
    lines = corpus.read_text().splitlines(keepends=True)
    corpus.write_text("".join([lines[0], "{not json\n", *lines[1:]]))  # a bad record, line 2
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(corpus)),),
        tokenizer=str(tokenizer_dir),
        decontaminate=(str(ev),),
        val_fraction=0,
        on_error="skip",
        max_docs=6,
    )
    meta = read_meta(prepare(cfg, tmp_path / "out", workers=1, progress=False))
    assert meta["decontamination"]["removed_by_ngram"] == 2  # both copies among the first 6 documents
    assert meta["splits"]["train"]["docs"] == 6 - 2  # the removed two counted toward 6, the bad line not
