"""An interrupted prepare cleaned against text sets (a study's task files' test splits, `PrepareConfig.text_sets`)
resumes when a set's name changes but its texts do not: a task file moved between the interruption and the
resume (its prepare node keeps its key, as the key holds the texts' digest). The recipe held each set's name,
`task-test:PATH`, so the moved file made another recipe and the prepare started over, warning "another
recipe"; it holds their versions now (`prepare._recipe`), as does the decontamination cache key. Other texts
under the same name still start over."""

from __future__ import annotations

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import RESUMABLE, count_tokenized, interrupt_prepare, prepared_bytes

from encoderlab.data.decontaminate import TextSet, texts_digest
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig

ANOTHER_RECIPE = "holds an interrupted prepare of another recipe (or version); starting over"


def _cfg(src, tok, name: str, texts: tuple[str, ...]) -> PrepareConfig:
    text_set = TextSet(name=name, version=texts_digest(texts), texts=texts)
    return PrepareConfig(
        sources=(SourceConfig(location=str(src)),),
        tokenizer=str(tok),
        decontaminate=(),
        text_sets=(text_set,),
    )


# a test text of the corpus's own words, 13 of them and more: its document is removed
TEXTS = (" ".join(corpus_records(6)[5]["text"].split()[:20]),)


@pytest.mark.parametrize("texts, resumed", [(TEXTS, True), ((TEXTS[0] + " and more words",), False)])
def test_a_resume_with_the_text_set_under_another_name_continues_when_its_texts_are_the_same(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    monkeypatch,
    caplog,
    texts,
    resumed,
):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(120))
    interrupt_prepare(
        _cfg(src, tokenizer_dir, "task-test:a/mine.yaml", TEXTS), tmp_path / "out", 11, KeyboardInterrupt()
    )
    moved = _cfg(src, tokenizer_dir, "task-test:b/mine.yaml", texts)  # the task file moved from a/ to b/
    clean = prepare(moved, tmp_path / "clean", **RESUMABLE)
    with caplog.at_level("WARNING"), pytest.MonkeyPatch.context() as mp:
        tokenized = count_tokenized(mp)
        out = prepare(moved, tmp_path / "out", **RESUMABLE)
    assert (ANOTHER_RECIPE in caplog.text) is not resumed  # was: started over with the same texts too
    assert (read_meta(out)["resumed_after_docs"] > 0) is resumed
    docs = sum(split["docs"] for split in read_meta(clean)["splits"].values())
    assert len(tokenized) == -(-docs // 10) - (4 if resumed else 0)  # chunks of 10: only the unfinished ones
    assert prepared_bytes(out) == prepared_bytes(clean)
    info = read_meta(out)["decontamination"]
    assert info["against"] == ["task-test:b/mine.yaml"] and info["removed_by_ngram"] == 1
    # named as now, though the removal was made before the move: a checkpoint keeps the set by its position
    assert list(info["first_removed"]) == ["task-test:b/mine.yaml"]
    assert info["first_removed"]["task-test:b/mine.yaml"]["example"] == "text 1"
