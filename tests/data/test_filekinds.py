"""Which files a source reads, and how big their text is once decompressed."""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
from contextlib import chdir
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from encoderlab.data.filekinds import content_bytes, file_kind, hf_json, misnamed
from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents
from encoderlab.errors import UserError


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.jsonl", "jsonl"),
        ("a.JSON", "jsonl"),
        ("a.txt.gz", "txt"),
        ("en.json.gz", "jsonl"),
        ("owt.jsonl.xz", "jsonl"),
        ("b.txt.bz2", "txt"),
        ("t.parquet", "parquet"),
        ("t.parquet.gz", None),  # parquet compresses inside the format
        ("x.gz", None),
        ("p.jsonl.zst", "jsonl"),
        ("p.jsonl.lz4", None),
        ("notes.md", None),
    ],
)
def test_file_kind(name, kind):
    assert file_kind(Path(name)) == kind


def _prose(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    return "".join(" ".join(rng.choice(words) for _ in range(20)) + "\n" for _ in range(n)).encode()


def test_content_bytes_is_exact_for_plain_and_whole_files_and_sampled_past_the_limit(tmp_path):
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(_prose(100, 0))
    small = tmp_path / "b.jsonl.xz"
    small.write_bytes(lzma.compress(_prose(100, 1)))
    size, note = content_bytes([plain, small])
    assert size == pytest.approx(len(_prose(100, 0)) + len(_prose(100, 1)))
    assert note.startswith(" (1 compressed file at ")
    # two large gzip files, the first sampled on its first 64 KB: the text's size within a few per cent
    big, truth = [tmp_path / f"c{i}.txt.gz" for i in range(2)], 0
    for i, path in enumerate(big):
        text = _prose(6_000, 10 + i)
        path.write_bytes(gzip.compress(text, compresslevel=1))  # level 9 spent most of the test's CPU
        truth += len(text)
    estimate, note = content_bytes(big, sample_files=1, sample_stored=1 << 16)
    assert estimate == pytest.approx(truth, rel=0.05) and "measured on 1)" in note
    assert content_bytes([plain]) == (plain.stat().st_size, "")
    # a thousandfold expansion, read whole: exact (the ratio was measured on bytes read ahead before)
    bomb = tmp_path / "zeros.txt.gz"
    bomb.write_bytes(gzip.compress(b"0" * 50_000_000))
    assert content_bytes([bomb]) == (50_000_000, pytest.approx(content_bytes([bomb])[1]))
    assert content_bytes([bomb], output_cap=1 << 20)[0] < 50_000_000  # bounded work: a lower bound


@pytest.mark.parametrize(
    "pack, says",
    [
        (gzip.compress, r"is \.gz-compressed by its content.*rename it x\.jsonl\.gz"),
        (lzma.compress, r"is \.xz-compressed by its content.*rename it x\.jsonl\.xz"),
        (bz2.compress, r"is \.bz2-compressed by its content.*rename it x\.jsonl\.bz2"),
    ],
    ids=["gz", "xz", "bz2"],
)
def test_a_compressed_file_named_as_plain_text_is_named_so(tmp_path, pack, says):
    """Was: "x.jsonl:1 is not UTF-8 (byte 1)", and with --on-error skip every line counted as a bad
    record of a corpus that had silently lost the file."""
    (tmp_path / "x.jsonl").write_bytes(pack(b'{"text": "alpha"}\n'))
    with pytest.raises(UserError, match=says):
        list(iter_documents(SourceConfig(location=str(tmp_path / "x.jsonl"))))
    stats = SourceStats("x")
    assert list(iter_documents(SourceConfig(location=str(tmp_path)), stats, on_error="skip")) == []
    assert (stats.bad_files, stats.bad_records) == (1, 0)


def test_a_parquet_file_named_as_json_lines_is_named_so(tmp_path):
    pq.write_table(pa.table({"text": ["alpha"]}), tmp_path / "x.jsonl")
    with pytest.raises(UserError, match=r"is a parquet file by its content.*rename it x\.parquet"):
        list(iter_documents(SourceConfig(location=str(tmp_path / "x.jsonl"))))
    (tmp_path / "x.jsonl").write_text("BZh is a word here\nPAR1 too\n")  # text that starts like them
    assert misnamed(tmp_path / "x.jsonl") is None


def _tokenizer_refused(corpus: Path, tmp_path: Path, capsys) -> tuple[int, str]:
    """(exit code, stderr) of `data tokenizer --source corpus --on-error skip`, which must leave `tmp_path`
    as it was, its --out unmade."""
    from tests.reliability.test_hostile_inputs import cli
    from tests.reliability.treestate import assert_unchanged, world_state

    with chdir(tmp_path):  # the working folder is one a refusal may not change
        before = world_state(tmp_path)
        argv = ["data", "tokenizer", "--source", corpus, "--vocab-size", "300", "--out", tmp_path / "t"]
        code, err = cli([*argv, "--on-error", "skip"], capsys)
    assert_unchanged(before)
    assert not (tmp_path / "t").exists()
    return code, err


def test_a_tokenizer_folder_another_tool_saved_inside_a_corpus_folder_is_refused(tmp_path, capsys):
    """A GPT-2 style tokenizer saved into the corpus folder by transformers (no encoderlab marker): with
    `--on-error skip` its merges.txt was read line by line as documents and its JSON files were skipped as
    bad files; without, its pretty-printed tokenizer_config.json was refused with a fix that converts it to
    JSON lines, breaking the tokenizer. Refused in one line, as a folder encoderlab wrote is."""
    import json

    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line

    corpus = tmp_path / "corpus"
    (corpus / "gpt2").mkdir(parents=True)
    (corpus / "a.txt").write_text("alpha beta\n\ngamma delta\n")
    (corpus / "gpt2" / "merges.txt").write_text("#version: 0.2\nĠ t\nĠ a\nh e\n")
    (corpus / "gpt2" / "vocab.json").write_text(json.dumps({"a": 0, "b": 1}))
    (corpus / "gpt2" / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 1024}, indent=2))
    code, err = _tokenizer_refused(corpus, tmp_path, capsys)
    assert_one_line(
        code,
        err,
        r"\S+corpus/gpt2, in \S+corpus, is a tokenizer or model folder \(it holds tokenizer_config.json\), not "
        r"text: its tokenizer_config.json would be read as a document; move it out of \S+corpus, or point "
        r"--source at the text files only \(a glob of them\)$",
    )
    assert_printed_as_documented("corpus-holds-a-tokenizer-folder", err, tmp_path)
    with pytest.raises(
        UserError, match=r"corpus/gpt2 is a tokenizer or model folder \(it holds tokenizer_config"
    ):
        list(iter_documents(SourceConfig(location=str(corpus / "gpt2")), on_error="skip"))
    with pytest.raises(UserError, match=r"corpus/gpt2, in \S+corpus, is a tokenizer or model folder"):
        list(iter_documents(SourceConfig(location=f"{corpus}/**/*.json*"), on_error="skip"))
    texts = [d.text for d in iter_documents(SourceConfig(location=f"{corpus}/*.txt"))]  # the fix
    assert texts and all("Ġ" not in t for t in texts)


def _marked(folder: Path, kind: str) -> Path:
    """A folder encoderlab wrote as `kind`, holding a meta.json (what a text reader would take)."""
    from encoderlab.outdir import create_output

    create_output(folder, kind)
    (folder / "meta.json").write_text('{"format": "encoderlab-packed"}\n')
    return folder


def test_a_prepared_folder_given_as_a_source_names_how_it_is_used(tmp_path, capsys, monkeypatch):
    """`data prepare --source PREPARED` (prepared data taken for a corpus to mix in) said "is a folder encoderlab
    wrote (data prepare), not text; point --source at text files", nothing of what the folder is for: it is
    trained on as it is, the parts of a sharded prepare are merged first, a tokenizer is given as one."""
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line, cli
    from tests.reliability.treestate import assert_unchanged, world_state

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    prepared = _marked(tmp_path / "prepared", "data prepare")
    before = world_state(tmp_path)
    argv = ["data", "prepare", "--source", prepared, "--tokenizer", "unused", "--out", tmp_path / "o"]
    code, err = cli(argv, capsys)
    assert_one_line(
        code,
        err,
        r"\S+/prepared is prepared data \(tokens of `data prepare`, not text\): train on it as it is "
        r"\(data.path=\S+/prepared\), or point --source at text files, such as those it was prepared from",
    )
    assert_printed_as_documented("source-is-prepared-data", err, tmp_path)
    assert_unchanged(before)
    assert not (tmp_path / "o").exists()

    def refusal(folder: Path) -> str:
        with pytest.raises(UserError) as caught:
            list(iter_documents(SourceConfig(location=str(folder))))
        return str(caught.value)

    parts = _marked(tmp_path / "big.shards", "data prepare shards")
    merge = f"join them with `encoderlab data merge --out {tmp_path / 'big'}` and train on that"
    assert merge in refusal(parts)
    part = _marked(parts / "00000-of-00002", "data prepare")
    assert f"is a part of a sharded prepare into {tmp_path / 'big'}" in refusal(part)
    tok = _marked(tmp_path / "tok", "data tokenizer")
    (tok / "tokenizer.json").write_text("{}\n")
    assert "give it as a tokenizer (data prepare --tokenizer)" in refusal(tok)
    run = _marked(tmp_path / "run", "pretrain")
    assert refusal(run).endswith(
        "is a folder encoderlab wrote (pretrain), not text; point --source at text files"
    )


@pytest.mark.parametrize(
    "name",
    ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json", "vocab.json"],
)
def test_a_corpus_file_named_as_a_tokenizer_s_is_read_as_data(tmp_path, name):
    """A JSON lines file with a tokenizer file's name was refused as "a tokenizer or model folder (it holds
    NAME)": the check went by the name alone. It is told by what the file holds (`filekinds.hf_json`)."""
    import json

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = [{"text": f"record {i} of {name}", "model": "bert", "eos_token": "</s>"} for i in range(3)]
    (corpus / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (corpus / "other").mkdir()  # another text field, and one key a tokenizer's files have too
    (corpus / "other" / name).write_text(json.dumps({"body": "a body", "model": "bert"}) + "\n")
    assert [
        d.text for d in iter_documents(SourceConfig(location=str(corpus / "other"), text_field="body"))
    ] == ["a body"]
    (corpus / "other" / name).write_text(
        json.dumps({"model": "x", "eos_token": "y", "text": "z" * (1 << 17)})
    )
    assert hf_json(corpus / "other" / name) is False  # a first record longer than what is read of it
    (corpus / "other" / name).unlink()
    (corpus / "vocab.txt").write_text("a plain text file named as BERT's vocabulary\n")
    texts = [d.text for d in iter_documents(SourceConfig(location=str(corpus)))]
    assert sorted(texts) == sorted(
        [r["text"] for r in rows] + ["a plain text file named as BERT's vocabulary"]
    )


@pytest.mark.parametrize("pretty", [True, False])
def test_a_renamed_tokenizer_inside_a_corpus_folder_is_refused_by_what_it_holds(tmp_path, capsys, pretty):
    """A tokenizer saved as `bpe.json` (`Tokenizer.save`, any name) beside its merges.txt passed the name
    check: with `--on-error skip` the JSON was skipped as a bad file and merges.txt trained on as documents."""
    import json

    from tests.reliability.test_hostile_inputs import assert_one_line
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    corpus = tmp_path / "corpus"
    (corpus / "mytok").mkdir(parents=True)
    (corpus / "a.txt").write_text("alpha beta\n\ngamma delta\n")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    tok.train_from_iterator(["alpha beta gamma delta"] * 5, trainers.BpeTrainer(vocab_size=280))
    tok.save(str(corpus / "mytok" / "bpe.json"), pretty=pretty)
    tok.model.save(str(corpus / "mytok"), "bpe")  # bpe-vocab.json, bpe-merges.txt
    code, err = _tokenizer_refused(corpus, tmp_path, capsys)
    assert_one_line(
        code,
        err,
        r"\S+corpus/mytok, in \S+corpus, is a tokenizer or model folder \(it holds bpe-vocab.json\), not text",
    )
    vocabulary = corpus / "mytok" / "bpe-vocab.json"
    vocabulary.write_text(json.dumps({f"t{i}": i for i in range(20000)}))  # GPT-2's: one line, over 64 KiB
    assert hf_json(vocabulary)
    vocabulary.unlink()  # the tokenizer file alone is told by its head too
    with pytest.raises(UserError, match=r"corpus/mytok is a tokenizer or model folder \(it holds bpe.json\)"):
        list(iter_documents(SourceConfig(location=str(corpus / "mytok")), on_error="skip"))


def test_a_pretty_printed_corpus_record_with_a_model_field_is_data_not_a_tokenizer(tmp_path):
    """A corpus record written pretty (`json.dump(indent=2)`) holding `text` and one key a model's files have
    too (`model`: which model generated it) made its folder "a tokenizer or model folder", refused whole even
    under `--on-error skip`; `text` says data, as on a JSON line: the file is refused where it is read, with
    the command that converts it, and skipped under `--on-error skip`."""
    import json

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    record = corpus / "doc1.json"
    record.write_text(json.dumps({"id": 1, "model": "gpt-4", "text": "alpha beta"}, indent=2))
    (corpus / "a.txt").write_text("gamma delta\n")
    assert hf_json(record) is False
    with pytest.raises(UserError, match="the file holds JSON written over several lines"):
        list(iter_documents(SourceConfig(location=str(corpus))))
    texts = [d.text for d in iter_documents(SourceConfig(location=str(corpus)), on_error="skip")]
    assert texts == ["gamma delta"]


def test_a_long_first_record_opening_with_numbers_is_data_not_a_vocabulary(tmp_path):
    """A JSON line over 64 KiB whose first 8 fields held numbers (ids, counts) and whose text field is not
    `text` was taken for a big vocabulary by those 8 alone, its folder refused as a tokenizer's; a vocabulary
    is ids up to where the head is cut."""
    import json

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    record = {**{f"n{i}": i * 7 for i in range(9)}, "content": "word " * (1 << 15)}
    (corpus / "dump.json").write_text(json.dumps(record) + "\n")
    assert hf_json(corpus / "dump.json") is False
    texts = [d.text for d in iter_documents(SourceConfig(location=str(corpus), text_field="content"))]
    assert texts == [record["content"]]
    (corpus / "dump.json").write_text(json.dumps({f"t{i}": i for i in range(20000)}))
    assert hf_json(corpus / "dump.json")  # a vocabulary still is one


def test_a_bert_vocabulary_alone_inside_a_corpus_folder_is_refused_by_what_it_holds(tmp_path):
    """A folder holding only BERT's vocab.txt (no JSON file to tell it by) was read as corpus text, one
    token a document. A vocab.txt of prose, or a word list without BERT's special tokens, is still data."""
    specials = ["[PAD]", *(f"[unused{i}]" for i in range(99)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    corpus = tmp_path / "corpus"
    (corpus / "bert").mkdir(parents=True)
    (corpus / "a.txt").write_text("alpha beta\n\ngamma delta\n")
    vocab = corpus / "bert" / "vocab.txt"
    vocab.write_text("\n".join([*specials, "!", "the", "##s", "alpha"]) + "\n")
    with pytest.raises(
        UserError, match=r"corpus/bert, in \S+corpus, is a tokenizer or model folder \(it holds vocab.txt\)"
    ):
        list(iter_documents(SourceConfig(location=str(corpus)), on_error="skip"))
    for data in ("[PAD] [UNK] [CLS] [SEP] [MASK] are BERT's special tokens\n", "the\nalpha\n##s\n"):
        vocab.write_text(data)
        texts = [d.text for d in iter_documents(SourceConfig(location=str(corpus)))]
        assert data.strip() in texts  # read as text (one document), as before
