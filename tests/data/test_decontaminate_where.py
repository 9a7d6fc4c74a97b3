"""Where decontamination's removals are: meta.json's `decontamination.first_removed` names, per evaluation set,
the first document removed (FILE:LINE), why (id or n-gram) and the evaluation example it matched, and
`data prepare` says the count and the first in one line. Before, meta.json held counts only: a user could not
find which of their documents went. A resumed prepare names the same ones as an uninterrupted one."""

from __future__ import annotations

import json

import pytest
from corpus_fixtures import corpus_records, fake_assets, random_words, tokenizer_dir, write_jsonl  # noqa: F401
from prepare_fixtures import RESUMABLE, interrupt_prepare
from tests.reliability.test_hostile_inputs import cli

from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig


def _planted(tmp_path):
    """A corpus folder of two files and an evaluation file of three texts, whose second text is copied
    into part2.jsonl at lines 4 (a record with an id field: named by its line, not its id) and 9."""
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(900 + i, 40)} for i in range(3)])
    copied = "As they say: " + random_words(901, 40)[:200] + " and so on."
    corpus = tmp_path / "corpus"
    write_jsonl(corpus / "part1.jsonl", [{"text": random_words(i, 30)} for i in range(6)])
    part2 = [{"text": random_words(100 + i, 30)} for i in range(10)]
    part2[3], part2[8] = {"id": "mine-7", "text": copied}, {"text": copied.upper()}
    write_jsonl(corpus / "part2.jsonl", part2)
    return corpus, ev


def test_meta_and_the_summary_line_name_the_first_removed_document_and_the_example_it_matched(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    corpus, ev = _planted(tmp_path)
    argv = ["data", "prepare", "--source", corpus, "--tokenizer", tokenizer_dir, "--out", tmp_path / "o",
            "--decontaminate", ev, "--workers", "1"]  # fmt: skip
    code, err = cli(argv, capsys)
    assert code == 0, err
    at = f"{corpus / 'part2.jsonl'}:4"
    d = read_meta(tmp_path / "o")["decontamination"]
    assert d["removed_by_ngram"] == 2
    assert d["first_removed"] == {str(ev): {"at": at, "by": "ngram", "example": f"{ev}:2"}}
    (line,) = [x for x in err.splitlines() if "decontamination removed" in x]
    assert line.startswith("encoderlab: note: decontamination removed 2 document(s)") and at in line, line
    (last,) = [json.loads(x) for x in (tmp_path / "o" / "metrics.jsonl").read_text().splitlines()][-1:]
    assert last["total"]["first_removed"] == d["first_removed"]
    assert f"{ev}:2" in line
    code, err = cli(argv, capsys)  # a rerun that does nothing says it again
    assert code == 0 and at in err


def test_each_set_names_its_own_first_removal_by_id_or_by_overlap(tmp_path, tokenizer_dir, fake_assets):  # noqa: F811
    passage = random_words(1000, 60)
    fake_assets(
        {
            "squad-v1-dev": [{"id": f"q{i}", "text": passage, "meta": {}} for i in range(3)],
            "bbc-news": [{"id": "business/001", "text": "A short article.", "meta": {}}],
            "web": [
                *({"id": f"c{i}", "text": random_words(i, 30)} for i in range(5)),
                {"id": "w1", "text": "Quoted: " + " ".join(passage.split()[20:35]) + " end."},
                {"id": "business/001", "text": "A rewritten copy under the same id."},
                {"id": "w2", "text": passage},
            ],
        }
    )
    cfg = PrepareConfig(
        sources=(SourceConfig(location="web"),),
        tokenizer=str(tokenizer_dir),
        decontaminate=("squad-v1-dev", "bbc-news"),
        val_fraction=0,
    )
    d = read_meta(prepare(cfg, tmp_path / "out", workers=1, progress=False))["decontamination"]
    web = tmp_path / "assets" / "web" / "data.jsonl"
    assert d["first_removed"] == {  # q0: the first record of squad's repeated context
        "squad-v1-dev": {"at": f"{web}:6", "by": "ngram", "example": "q0"},
        "bbc-news": {"at": f"{web}:7", "by": "id", "example": "business/001"},
    }
    assert list(d["first_removed"]) == ["squad-v1-dev", "bbc-news"]  # in the order met


def test_a_resumed_prepare_names_the_removal_made_before_its_checkpoint(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    """The first removal is in the first chunk, which a resume re-reads without checking it again: kept only
    if the checkpoint holds it (a resume named the later copy)."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(900, 40)}])
    records = corpus_records(120)
    records[2]["text"] = records[100]["text"] = random_words(900, 40)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", records)
    cfg = PrepareConfig(sources=(SourceConfig(location=str(corpus)),), tokenizer=str(tokenizer_dir),
                        decontaminate=(str(ev),))  # fmt: skip
    clean = read_meta(prepare(cfg, tmp_path / "clean", **RESUMABLE))["decontamination"]
    interrupt_prepare(cfg, tmp_path / "out", appends=12, exc=KeyboardInterrupt())  # after the 2nd checkpoint
    resumed = read_meta(prepare(cfg, tmp_path / "out", **RESUMABLE))
    assert resumed["resumed_after_docs"] > 0
    assert resumed["decontamination"] == clean and clean["removed_by_ngram"] == 2
    assert clean["first_removed"] == {str(ev): {"at": f"{corpus}:3", "by": "ngram", "example": f"{ev}:1"}}


@pytest.mark.slow
def test_sigkilled_then_rerun_names_the_same_first_removal(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    from prepare_kill_fixtures import assert_same_as_uninterrupted, kill_then_rerun

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(900, 40)}])
    records = corpus_records(12_000)  # 47 chunks of 256: the kills land after the first removal's chunk
    records[5]["text"] = records[11_000]["text"] = random_words(900, 40)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", records)
    clean, out, done = kill_then_rerun(corpus, tokenizer_dir, tmp_path, seed=3, decontaminate=ev)
    assert_same_as_uninterrupted(clean, out, done)
    first = {str(ev): {"at": f"{corpus}:6", "by": "ngram", "example": f"{ev}:1"}}
    for folder in (clean, out):
        assert json.loads((folder / "meta.json").read_text())["decontamination"]["first_removed"] == first


def test_a_merge_of_sharded_parts_names_each_sets_first_removal_over_the_whole_corpus(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    monkeypatch,
):
    from encoderlab.data.merge import merge
    from encoderlab.data.shard import Shard

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    a, b = (
        write_jsonl(tmp_path / f"{n}.jsonl", [{"text": random_words(s, 40)}])
        for n, s in (("a", 907), ("b", 908))
    )
    corpus = tmp_path / "corpus"
    for f in range(4):  # a's text in files 0 and 3, b's in file 3 only: the parts hold files 0-1 and 2-3
        records = [{"text": random_words(100 * f + i, 30)} for i in range(8)]
        records[2 + f] = {"text": random_words(907, 40)} if f in (0, 3) else records[2 + f]
        records[1] = {"text": random_words(908, 40)} if f == 3 else records[1]
        write_jsonl(corpus / f"part{f}.jsonl", records)
    cfg = PrepareConfig(sources=(SourceConfig(location=str(corpus)),), tokenizer=str(tokenizer_dir),
                        decontaminate=(str(a), str(b)))  # fmt: skip
    for i in (1, 0):
        prepare(cfg, tmp_path / "out", shard=Shard(i, 2), workers=1, chunk_docs=5, progress=False)
    d = read_meta(merge(tmp_path / "out"))["decontamination"]
    assert d["first_removed"] == {
        str(a): {"at": f"{corpus / 'part0.jsonl'}:3", "by": "ngram", "example": f"{a}:1"},
        str(b): {"at": f"{corpus / 'part3.jsonl'}:2", "by": "ngram", "example": f"{b}:1"},
    }
    assert d["removed_by_ngram"] == 3
