"""Sources: every location kind streams the right documents; bad input is one clear error."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_fixtures import fake_assets, write_jsonl  # noqa: F401 (fixture)

from encoderlab.data.mixing import mix_documents
from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents, parse_source
from encoderlab.errors import UserError


def _texts(cfg, **kw):
    return [d.text for d in iter_documents(cfg, **kw)]


def test_jsonl_txt_parquet_folders_and_globs(tmp_path):
    write_jsonl(tmp_path / "a" / "x.jsonl", [{"id": "1", "body": "alpha"}, {"id": "2", "body": "beta"}])
    (tmp_path / "a" / "y.txt").write_text("gamma\ndelta\n")
    pq.write_table(pa.table({"body": ["epsilon", None, "zeta"]}), tmp_path / "a" / "z.parquet")
    (tmp_path / "a" / "ignored.csv").write_text("no")
    folder = SourceConfig(location=str(tmp_path / "a"), text_field="body")
    assert _texts(folder) == ["alpha", "beta", "gamma\ndelta", "epsilon", "zeta"]  # one paragraph
    whole = SourceConfig(location=str(tmp_path / "a" / "y.txt"), txt_unit="file")
    assert _texts(whole) == ["gamma\ndelta\n"]
    by_line = SourceConfig(location=str(tmp_path / "a" / "*.txt"), txt_unit="line")
    assert _texts(by_line) == ["gamma", "delta"]
    docs = list(iter_documents(SourceConfig(location=str(tmp_path / "a/x.jsonl"), text_field="body")))
    assert [d.id for d in docs] == [f"{tmp_path / 'a/x.jsonl'}#1", f"{tmp_path / 'a/x.jsonl'}#2"]


def test_asset_source_keeps_global_ids(fake_assets):  # noqa: F811
    fake_assets({"tiny": [{"id": "tiny/0", "text": "one", "meta": {}}]})
    assert [(d.id, d.text) for d in iter_documents(SourceConfig(location="tiny"))] == [("tiny/0", "one")]
    with pytest.raises(UserError, match="nor an asset name"):
        list(iter_documents(SourceConfig(location="no-such-thing")))


def test_parse_source_syntax():
    cfg = parse_source("data/*.jsonl#text_field=body,weight=2,txt_unit=line")
    assert cfg == SourceConfig(location="data/*.jsonl", text_field="body", weight=2.0, txt_unit="line")
    with pytest.raises(UserError, match="weight"):
        parse_source("x#weight=0")
    with pytest.raises(UserError, match="unknown option colour"):
        parse_source("x#colour=red")


def test_source_options_list_exactly_what_is_accepted_and_refuse_location_and_repeats():
    """`#colour=red` listed `location` among the valid options, and `#location=y` read y instead of the
    location before the `#`, silently; `#weight=1,weight=2` kept the last weight, silently."""
    from encoderlab.config import recorded_fields

    options = sorted(f for f in recorded_fields(SourceConfig) if f != "location")
    with pytest.raises(UserError) as exc:
        parse_source("x#colour=red")
    assert str(exc.value).endswith(f"; valid: {', '.join(options)}")
    for option in options:  # each listed option is accepted (a value of its type)
        value = {"txt_unit": "line", "weight": "2", "hf_files": "0:1", "hf_revision": "main"}.get(option, "v")
        assert parse_source(f"x#{option}={value}").location == "x"
    with pytest.raises(
        UserError, match=r"unknown option location; .*\(the location is what precedes the '#'\)$"
    ):
        parse_source("x#location=y")
    with pytest.raises(
        UserError, match="^source 'x#weight=1,weight=2': option weight given twice; give it once$"
    ):
        parse_source("x#weight=1,weight=2")


def test_a_file_with_a_hash_in_its_name_can_be_a_source(tmp_path):
    """`notes#1.txt` was refused ("source option '1.txt' ... must look like key=value") with no way to
    name it; options now follow the last `#`, and an existing path is read whole."""
    path = tmp_path / "notes#1.txt"
    path.write_text("a text")
    assert parse_source(str(path)) == SourceConfig(location=str(path))
    assert parse_source(f"{path}#weight=2") == SourceConfig(location=str(path), weight=2.0)
    with pytest.raises(UserError, match="must look like key=value"):
        parse_source(f"{tmp_path}/absent.txt#weight")


def test_empty_documents_are_dropped_and_counted(tmp_path):
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": "a"}, {"text": "  \n"}, {"text": ""}, {"text": "b"}])
    stats = SourceStats("c")
    assert _texts(SourceConfig(location=str(src)), stats=stats) == ["a", "b"]
    assert (stats.docs, stats.empty) == (2, 2)


def test_file_hash_is_sha256_of_the_bytes_read(tmp_path):
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": f"doc {i}"} for i in range(50)])
    stats = SourceStats("c")
    list(iter_documents(SourceConfig(location=str(src)), stats))
    (entry,) = stats.files
    assert entry["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert entry["complete"] and entry["bytes"] == src.stat().st_size


def _two_sources(tmp_path, n_a=400, n_b=400):
    a = write_jsonl(tmp_path / "a.jsonl", [{"text": f"a{i}"} for i in range(n_a)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"text": f"b{i}"} for i in range(n_b)])
    return SourceConfig(location=str(a), weight=3.0), SourceConfig(location=str(b), weight=1.0)


def test_mixing_is_seeded_and_follows_weights(tmp_path):
    sources = _two_sources(tmp_path)
    first = [d.text for d in mix_documents(sources, seed=1)]
    assert first == [d.text for d in mix_documents(sources, seed=1)]
    assert first != [d.text for d in mix_documents(sources, seed=2)]
    # first_exhausted: source a (weight 3) runs out first; b supplies about a third as many
    counts = Counter(t[0] for t in first)
    assert counts["a"] == 400 and 100 < counts["b"] < 170
    # each source keeps its own order inside the mixture
    assert [t for t in first if t[0] == "a"] == [f"a{i}" for i in range(400)]


def test_a_mixture_that_stops_on_its_first_exhausted_source_says_what_it_left_unread(tmp_path, caplog):
    """Before, 300 and 20 documents at equal weights gave about 40, and nothing said so."""
    a, b = _two_sources(tmp_path, n_a=300, n_b=20)
    caplog.set_level("WARNING")
    stats: list[SourceStats] = []
    texts = [d.text for d in mix_documents([a, b], seed=0, stats=stats)]
    assert stats[1].docs == 20 and stats[0].docs == sum(t.startswith("a") for t in texts) < 300
    assert (
        f"the mixture stopped when {b.location} ran out (first_exhausted keeps the weights' proportions), "
        f"before the end of {a.location} ({stats[0].docs:,} read); to read every source whole, give the files "
        "as one source (a folder or a glob reads each of its files whole)"  # a study's corpus can take it too
    ) in caplog.text
    caplog.clear()
    list(mix_documents([a, b], seed=0, stop="all_exhausted"))
    assert "stopped" not in caplog.text  # every source read to its end


def test_all_exhausted_repeats_small_sources(tmp_path):
    a, b = _two_sources(tmp_path, n_a=300, n_b=20)
    stats: list[SourceStats] = []
    texts = [d.text for d in mix_documents([a, b], seed=0, stop="all_exhausted", stats=stats)]
    assert set(texts) >= {f"a{i}" for i in range(300)} | {f"b{i}" for i in range(20)}
    assert stats[1].repeats >= 2 and stats[0].repeats == 0
    assert stats[1].docs == 20  # counts and hashes describe one pass


def test_non_utf8_and_bad_json_refused_or_skipped(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"text": "good"}\n{"text": "caf\xe9"}\n{not json}\n{"other": 1}\n[1]\n{"text": "end"}\n'
    )
    cfg = SourceConfig(location=str(path))
    with pytest.raises(UserError) as err:
        _texts(cfg)
    # was: "...; fix or remove it, or pass --on-error skip ...", without the command that converts it
    assert str(err.value) == (
        f"{path}:2 is not UTF-8 (byte 13); save it as UTF-8, e.g. `iconv -f latin1 -t utf-8 bad.jsonl > "
        "utf8-bad.jsonl`, or pass --on-error skip to skip such records"
    )
    stats = SourceStats("bad")
    assert _texts(cfg, stats=stats, on_error="skip") == ["good", "end"]
    assert stats.bad_records == 4


def test_corrupt_parquet_and_unreadable_file(tmp_path):
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    cfg = SourceConfig(location=str(tmp_path / "broken.parquet"))
    with pytest.raises(UserError, match="not a readable parquet file"):
        _texts(cfg)
    stats = SourceStats("p")
    assert _texts(cfg, stats=stats, on_error="skip") == [] and stats.bad_files == 1
    if os.geteuid() != 0:  # root reads anything
        locked = write_jsonl(tmp_path / "locked.jsonl", [{"text": "x"}])
        locked.chmod(0)
        with pytest.raises(UserError, match="cannot read"):
            _texts(SourceConfig(location=str(locked)))


def test_bad_locations_are_one_line(tmp_path):
    with pytest.raises(UserError, match="matches no file"):
        _texts(SourceConfig(location=str(tmp_path / "*.jsonl")))
    (tmp_path / "data.csv").write_text("a,b")
    with pytest.raises(UserError, match="suffix '.csv'"):
        _texts(SourceConfig(location=str(tmp_path / "data.csv")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds no"):
        _texts(SourceConfig(location=str(tmp_path / "empty")))
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": "x"}])
    with pytest.raises(
        UserError, match=r"no field 'body' \(fields: text\); name the text field .*#text_field=text"
    ):
        _texts(SourceConfig(location=str(src), text_field="body"))


def test_a_folder_whose_jsonl_lacks_the_text_field_names_the_folder_in_its_fix(tmp_path):
    """The fix named the one file (`--source 'DIR/b.jsonl#text_field=body'`): following it read that file
    alone and dropped the folder's .txt file, silently."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("from the txt file\n")
    write_jsonl(tmp_path / "d" / "b.jsonl", [{"id": "1", "body": "from the jsonl file"}])
    folder, file = tmp_path / "d", tmp_path / "d" / "b.jsonl"
    with pytest.raises(UserError) as err:
        _texts(SourceConfig(location=str(folder)))
    fix = str(err.value).partition("; ")[2]
    assert fix.startswith(f"name the text field in the source, e.g. --source '{folder}#text_field=body' "), (
        fix
    )
    assert f"--source '{file}#text_field=body' would read that file alone" in fix
    assert "\n" not in str(err.value)
    assert sorted(_texts(SourceConfig(location=str(folder), text_field="body"))) == [
        "from the jsonl file",
        "from the txt file",
    ]  # following the fix keeps the folder's other file


def test_a_corpus_subfolder_that_cannot_be_listed_is_refused_naming_it(tmp_path):
    """Was: its files were left out of the corpus (of a study's too) without a word, as `rglob` leaves an
    unlistable folder out."""
    (tmp_path / "d" / "locked").mkdir(parents=True)
    (tmp_path / "d" / "a.txt").write_text("from the folder\n")
    (tmp_path / "d" / "locked" / "b.txt").write_text("from the locked folder\n")
    (tmp_path / "d" / "locked" / "inner").mkdir()
    (tmp_path / "d" / "locked" / "inner" / "c.txt").write_text("from within it\n")
    locked = tmp_path / "d" / "locked"
    locked.chmod(0)
    try:
        try:
            os.listdir(locked)
            pytest.skip(
                f"this user (uid {os.geteuid()}, root if 0) lists a folder of mode 000: nothing to refuse"
            )
        except PermissionError:
            pass
        with pytest.raises(UserError) as err:
            _texts(SourceConfig(location=str(tmp_path / "d")))
        assert str(err.value) == (
            f"{locked}, a folder in {locked.parent}, cannot be listed (Permission denied), so its files would "
            f"be left out; make it readable (chmod u+rx '{locked}') or remove it"
        )
        for location in (tmp_path / "d" / "*", locked):  # a glob matching it, and the folder itself
            with pytest.raises(
                UserError, match=rf"^{re.escape(str(locked))} cannot be listed \(Permission denied\); make it"
            ):
                _texts(SourceConfig(location=str(location)))
        locked.chmod(0o444)  # listed, but not entered: its folder `inner` cannot be listed, and it is named
        with pytest.raises(UserError, match=rf"^{re.escape(str(locked))}, a folder in .*chmod u\+rx '"):
            _texts(SourceConfig(location=str(tmp_path / "d")))
    finally:
        locked.chmod(0o755)
    assert sorted(_texts(SourceConfig(location=str(tmp_path / "d")))) == [
        "from the folder",
        "from the locked folder",
        "from within it",
    ]  # following the fix reads the folder's files


def test_hub_dataset_offline_fails_fast(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(UserError, match="HF_HUB_OFFLINE=1") as exc:
        _texts(SourceConfig(location="hf:HuggingFaceFW/fineweb-edu"))
    assert time.perf_counter() - start < 1 and "\n" not in str(exc.value)


def test_mixture_refuses_a_source_without_documents(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [{"text": "a"}] * 50)
    empty = write_jsonl(tmp_path / "e.jsonl", [{"text": " "}])
    with pytest.raises(UserError, match="has no non-empty document"):
        list(mix_documents([SourceConfig(location=str(a)), SourceConfig(location=str(empty))]))


def test_txt_is_cut_into_blank_line_paragraphs_by_default_and_says_so(tmp_path, caplog):
    book = tmp_path / "book.txt"
    book.write_text("Call me Ishmael.\nSome years ago.\n\n\n  \nIt was a\ndamp November.\n\nThe end.")
    caplog.set_level("INFO")
    docs = list(mix_documents([SourceConfig(location=str(book))]))
    assert [d.text for d in docs] == [
        "Call me Ishmael.\nSome years ago.",
        "It was a\ndamp November.",
        "The end.",
    ]
    assert [d.id for d in docs] == [f"{book}:1", f"{book}:6", f"{book}:9"]
    assert "read as one document per blank-line paragraph (txt_unit=paragraph" in caplog.text
    stats = SourceStats(str(book))
    list(iter_documents(SourceConfig(location=str(book), txt_unit="line"), stats))
    assert stats.identity == {"kind": "files", "txt_unit": "line"} and stats.docs == 5


def test_a_txt_line_is_the_same_for_prepare_and_analysis(tmp_path):
    """`analyze cka --texts F.txt` reads one text per line, as `--source F.txt#txt_unit=line` does (one
    reader): a form feed or U+2028 inside a line does not cut it (str.splitlines did, in analysis)."""
    from encoderlab.analysis.inputs import read_texts

    book = tmp_path / "book.txt"
    book.write_bytes("first line\r\nsecond\x0cpage\n\n  \nthird\u2028same line\nlast".encode())
    lines = [d.text for d in iter_documents(SourceConfig(location=str(book), txt_unit="line"))]
    assert lines == ["first line", "second\x0cpage", "third\u2028same line", "last"]
    assert read_texts(str(book)) == lines


def _zstd_compress(data: bytes) -> bytes:
    """Two frames, as `zstd` writes a file compressed in parts: both must be read."""
    from encoderlab.data.filekinds import ZSTD as zstd

    half = len(data) // 2
    return zstd.compress(data[:half]) + zstd.compress(data[half:])


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_compressed_jsonl_and_txt_read_as_their_plain_forms(tmp_path, suffix):
    """C4 ships `.json.gz`, the Pile `.jsonl.zst`: the same documents and ids as the plain file, hashed
    as stored."""
    import bz2
    import gzip
    import lzma

    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zst": _zstd_compress}[
        suffix
    ]
    plain = write_jsonl(
        tmp_path / "plain" / "c4.json", [{"id": str(i), "text": f"doc {i}"} for i in range(300)]
    )
    packed = tmp_path / "packed" / f"c4.json{suffix}"
    packed.parent.mkdir()
    packed.write_bytes(compress(plain.read_bytes()))
    (tmp_path / "packed" / f"notes.txt{suffix}").write_bytes(compress(b"first para\nline two\n\nsecond\n"))
    docs = list(iter_documents(SourceConfig(location=str(packed))))
    assert [(d.id.split("#")[1], d.text) for d in docs] == [(str(i), f"doc {i}") for i in range(300)]
    stats = SourceStats("packed")
    folder = _texts(SourceConfig(location=str(tmp_path / "packed")), stats=stats)
    assert folder == [f"doc {i}" for i in range(300)] + ["first para\nline two", "second"]
    entry = stats.files[0]
    assert entry["sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert entry["complete"] and entry["bytes"] == packed.stat().st_size
    whole = SourceConfig(location=str(tmp_path / "packed" / f"notes.txt{suffix}"), txt_unit="file")
    assert _texts(whole) == ["first para\nline two\n\nsecond\n"]


def test_corrupt_truncated_and_unread_compressions_are_one_line(tmp_path):
    import gzip

    text = "".join(f'{{"text": "doc {i}"}}\n' for i in range(3000)).encode()
    for suffix, packed in ((".gz", gzip.compress(text)), (".zst", _zstd_compress(text))):
        (tmp_path / f"cut.jsonl{suffix}").write_bytes(packed[: len(packed) - 20])  # ends inside a frame
        (tmp_path / f"fake.jsonl{suffix}").write_bytes(b"not compressed at all")
    garbled = bytearray(gzip.compress(text))  # gzip finds this only at its CRC, after garbage lines
    garbled[len(garbled) // 2 : len(garbled) // 2 + 20] = bytes(20)
    (tmp_path / "garbled.jsonl.gz").write_bytes(bytes(garbled))
    for name in ("fake.jsonl.gz", "fake.jsonl.zst"):  # fails before any document: skipped and counted
        cfg = SourceConfig(location=str(tmp_path / name))
        with pytest.raises(UserError, match=rf"cannot read .*{name} \(.*\); fix or remove it") as exc:
            _texts(cfg)
        assert "\n" not in str(exc.value)
        stats = SourceStats(name)
        assert _texts(cfg, stats=stats, on_error="skip") == [] and stats.bad_files == 1
    with pytest.raises(UserError, match=r"garbled.jsonl.gz:\d+ is not valid JSON"):  # its first garbage
        _texts(SourceConfig(location=str(tmp_path / "garbled.jsonl.gz")))
    for name, modes in (
        ("cut.jsonl.gz", ("raise", "skip")),
        ("cut.jsonl.zst", ("raise", "skip")),
        ("garbled.jsonl.gz", ("skip",)),
    ):  # fails part-way: never skipped
        for on_error in modes:
            with pytest.raises(
                UserError, match=rf"cannot read .*{name} \(.*\), after [\d,]+ of its documents"
            ) as exc:
                _texts(SourceConfig(location=str(tmp_path / name)), on_error=on_error)
            assert "\n" not in str(exc.value) and "download it again or remove it" in str(exc.value)
    (tmp_path / "pile.jsonl.lz4").write_bytes(b"\x04\x22\x4d\x18")
    with pytest.raises(UserError, match=r"compressed as \.lz4, .*`lz4 -d .*pile.jsonl.lz4`.*gzip"):
        _texts(SourceConfig(location=str(tmp_path / "pile.jsonl.lz4")))
    with pytest.raises(UserError, match=r"pile.jsonl.lz4 is compressed as \.lz4"):  # never skipped
        _texts(SourceConfig(location=str(tmp_path)))
    pq.write_table(pa.table({"text": ["x"]}), tmp_path / "t.parquet")
    (tmp_path / "t.parquet.gz").write_bytes(gzip.compress((tmp_path / "t.parquet").read_bytes()))
    with pytest.raises(UserError, match=r"suffix '\.gz', not one of \.txt"):
        _texts(SourceConfig(location=str(tmp_path / "t.parquet.gz")))


def test_zstd_without_its_module_is_refused_before_reading_and_never_skipped(tmp_path, monkeypatch):
    import encoderlab.data.filekinds as filekinds

    monkeypatch.setattr(filekinds, "has_zstd", lambda: False)
    shard = tmp_path / "pile" / "00.jsonl.zst"
    shard.parent.mkdir()
    shard.write_bytes(_zstd_compress(b'{"text": "a"}\n'))
    write_jsonl(tmp_path / "pile" / "01.jsonl", [{"text": "b"}])
    for location in (shard, shard.parent, tmp_path / "pile" / "*"):
        with pytest.raises(
            UserError, match=r"this Python has no zstd module; pip install 'encoderlab\[zstd\]'"
        ):
            _texts(SourceConfig(location=str(location)))
    monkeypatch.undo()
    assert _texts(SourceConfig(location=str(shard.parent))) == ["a", "b"]


@pytest.mark.parametrize("unit", ["paragraph", "line", "file"])
def test_a_byte_order_mark_is_not_text(tmp_path, unit):
    """Files saved by Windows editors start with UTF-8's byte-order mark. Before, a JSON lines file
    was refused at line 1 ("Unexpected UTF-8 BOM") and a .txt's first document began with U+FEFF,
    which became a token. The mark is dropped at the start of a file only."""
    bom = b"\xef\xbb\xbf"
    (tmp_path / "w.jsonl").write_bytes(bom + b'{"text": "alpha"}\r\n{"text": "\xef\xbb\xbfbeta"}\r\n')
    assert _texts(SourceConfig(location=str(tmp_path / "w.jsonl"))) == ["alpha", "\ufeffbeta"]
    (tmp_path / "w.txt").write_bytes(bom + b"gamma\r\ndelta\r\n")
    want = {"paragraph": ["gamma\ndelta"], "line": ["gamma", "delta"], "file": ["gamma\ndelta\n"]}
    assert _texts(SourceConfig(location=str(tmp_path / "w.txt"), txt_unit=unit)) == want[unit]


def test_a_folder_says_which_of_its_files_it_does_not_read(tmp_path, caplog):
    """Before, a .csv beside the .jsonl of a folder source was left out without a word."""
    write_jsonl(tmp_path / "c" / "a.jsonl", [{"text": "alpha"}])
    (tmp_path / "c" / "sub").mkdir()
    (tmp_path / "c" / "sub" / "b.csv").write_text("text\nbeta\n")
    (tmp_path / "c" / "README").write_text("about")
    caplog.set_level("INFO")
    assert [d.text for d in mix_documents([SourceConfig(location=str(tmp_path / "c"))])] == ["alpha"]
    assert (
        f"{tmp_path / 'c'}: 2 files not read, of kinds encoderlab does not read as text (.csv, README; "
        f"e.g. {tmp_path / 'c' / 'README'})" in caplog.text
    )
    caplog.clear()
    list(mix_documents([SourceConfig(location=str(tmp_path / "c" / "a.jsonl"))]))
    assert "not read" not in caplog.text  # a file names itself: nothing is left out


def test_a_parquet_text_column_must_hold_strings(tmp_path):
    """Before, a struct or list column was trained on as its Python repr ("{'a': 'x'}"), a number as its
    digits; JSON lines refused such a field, and so does a parquet file now."""
    pq.write_table(
        pa.table({"body": ["one", "two"], "text": [{"a": "x"}, {"a": "y"}]}), tmp_path / "s.parquet"
    )
    pq.write_table(pa.table({"text": [["x", "y"], ["z"]]}), tmp_path / "l.parquet")
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "n.parquet")
    with pytest.raises(
        UserError,
        match=r"s.parquet has no string column 'text' \(text is struct<a: string>\); .*#text_field=text.a'",
    ):
        _texts(SourceConfig(location=str(tmp_path / "s.parquet")))
    for name in ("l", "n"):
        with pytest.raises(UserError, match=f"{name}.parquet has no string column 'text'"):
            _texts(SourceConfig(location=str(tmp_path / f"{name}.parquet")))
    stats = SourceStats("p")
    assert _texts(SourceConfig(location=str(tmp_path / "n.parquet")), stats=stats, on_error="skip") == []
    assert stats.bad_files == 1
    # strings however stored are text: dictionary-encoded, large
    table = pa.table(
        {"text": pa.array(["x", "y", "x"]).dictionary_encode(), "t2": pa.array(["u"] * 3, pa.large_string())}
    )
    pq.write_table(table, tmp_path / "d.parquet")
    assert _texts(SourceConfig(location=str(tmp_path / "d.parquet"))) == ["x", "y", "x"]
    assert _texts(SourceConfig(location=str(tmp_path / "d.parquet"), text_field="t2")) == ["u"] * 3


def test_a_missing_parquet_text_column_fix_names_a_string_column(tmp_path):
    """The fix named the file's first column, whatever it held: `#text_field=id` for an int id, which the
    rerun then refused as 'no string column'. It names a string column, as the wrong-dtype refusal does."""
    pq.write_table(
        pa.table({"id": [1, 2], "meta": [{"a": "x"}] * 2, "body": ["x", "y"]}), tmp_path / "b.parquet"
    )
    with pytest.raises(
        UserError, match=r"has no column 'text' \(columns: id, meta, body\); .*#text_field=body'"
    ):
        _texts(SourceConfig(location=str(tmp_path / "b.parquet")))
    pq.write_table(pa.table({"id": [1, 2], "meta": [{"a": "x"}] * 2}), tmp_path / "n.parquet")
    # no string column: the struct's string field, a dotted path (`data/fieldpath.py`)
    with pytest.raises(UserError, match=r"has no column 'text' .*#text_field=meta.a'"):
        _texts(SourceConfig(location=str(tmp_path / "n.parquet")))


def test_a_json_array_file_is_refused_with_the_command_that_converts_it(tmp_path):
    """`.json` is read as JSON lines (C4's `.json.gz`); a file holding one array was refused at line 1
    as "not valid JSON (Expecting value)", which does not say what to do."""
    (tmp_path / "arr.json").write_text('[\n  {"text": "alpha"},\n  {"text": "beta"}\n]\n')
    with pytest.raises(UserError) as refused:
        _texts(SourceConfig(location=str(tmp_path / "arr.json")))
    assert str(refused.value).startswith(f"{tmp_path / 'arr.json'} holds a JSON array, not JSON lines")
    fix = str(refused.value).split("e.g. ", 1)[1]
    assert fix.endswith(f"{tmp_path / 'arr.json'} > {tmp_path / 'arr.jsonl'}")
    command = fix.split(" > ")[0]  # the command it gives, run as written
    python = command.replace("python", sys.executable, 1)
    out = subprocess.run(python, shell=True, capture_output=True, text=True, check=True).stdout
    (tmp_path / "arr.jsonl").write_text(out)
    assert _texts(SourceConfig(location=str(tmp_path / "arr.jsonl"))) == ["alpha", "beta"]
    stats = SourceStats("a")
    assert _texts(SourceConfig(location=str(tmp_path / "arr.json")), stats=stats, on_error="skip") == []
    assert stats.bad_files == 1
    # a later line that starts with "[" is a bad record of a JSON lines file, not an array
    (tmp_path / "mixed.jsonl").write_text('{"text": "alpha"}\n[1, 2]\n{"text": "beta"}\n')
    stats = SourceStats("m")
    assert _texts(SourceConfig(location=str(tmp_path / "mixed.jsonl")), stats=stats, on_error="skip") == [
        "alpha",
        "beta",
    ]
    assert stats.bad_records == 1


@pytest.mark.parametrize("name", ["arr.jsonl", "arr.json.gz"])
def test_the_converting_command_neither_empties_its_input_nor_reads_compressed_bytes(tmp_path, name):
    """For an array in a `.jsonl` the command was `python ... arr.jsonl > arr.jsonl`, which empties the
    file before python reads it; for `.json.gz` it opened the compressed bytes as text."""
    import gzip

    body = b'[{"text": "alpha"}, {"text": "beta"}]\n'
    (tmp_path / name).write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    with pytest.raises(UserError) as refused:
        _texts(SourceConfig(location=str(tmp_path / name)))
    command, out = str(refused.value).split("e.g. ", 1)[1].rsplit(" > ", 1)
    python = command.replace("python", sys.executable, 1)
    subprocess.run(f"{python} > {out}", shell=True, capture_output=True, check=True)
    assert Path(out) != tmp_path / name and Path(out).parent == tmp_path
    assert _texts(SourceConfig(location=out)) == ["alpha", "beta"]
    assert (tmp_path / name).read_bytes().startswith(b"[" if name == "arr.jsonl" else b"\x1f\x8b")


def test_a_null_text_is_an_empty_document_as_in_parquet(tmp_path):
    """Before, `{"text": null}` refused the whole JSON lines file; a null parquet cell (and a hub
    dataset's) was an empty document, dropped and counted."""
    write_jsonl(tmp_path / "n.jsonl", [{"text": None}, {"text": "alpha"}, {"text": ""}])
    stats = SourceStats("n")
    assert _texts(SourceConfig(location=str(tmp_path / "n.jsonl")), stats=stats) == ["alpha"]
    assert stats.empty == 2 and stats.bad_records == 0


def test_a_null_parquet_cell_is_counted_as_an_empty_document(tmp_path):
    """Was: a null parquet text was dropped and counted nowhere (neither in docs nor in empty), so
    meta.json's counts did not add up to the file's rows; the docstrings said it was counted."""
    pq.write_table(
        pa.table({"text": pa.array(["one", None, "", "two"], pa.large_string())}), tmp_path / "n.parquet"
    )
    stats = SourceStats("n")
    assert _texts(SourceConfig(location=str(tmp_path / "n.parquet")), stats=stats) == ["one", "two"]
    assert (stats.docs, stats.empty) == (2, 2)


def test_a_save_to_disk_folder_is_refused_with_the_export(tmp_path):
    """Was: its dataset_info.json was read as JSON lines ("has no field 'text' (fields: ...)") and
    its Arrow files, the data, were left out of the corpus."""
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "data-00000-of-00001.arrow").write_bytes(b"arrow")
    (saved / "dataset_info.json").write_text('{"features": {}}')
    (saved / "state.json").write_text('{\n "_data_files": []\n}\n')
    for location in (saved, tmp_path):
        with pytest.raises(UserError, match=r"save_to_disk folder .*load_from_disk.*to_parquet"):
            _texts(SourceConfig(location=str(location)))
    assert not any(tmp_path.glob("*.parquet"))  # nothing written


def test_a_lone_surrogate_escape_is_a_bad_record(tmp_path):
    """Was: `data tokenizer` stopped in a UnicodeEncodeError traceback on `"\\ud800"` (a writer that
    split a UTF-16 pair), and `data prepare` trained on whatever the encoder made of it."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "ok \\ud83d\\ude00"}\n{"text": "bad \\ud800 half"}\n{"text": "last"}\n')
    with pytest.raises(UserError, match=r"s\.jsonl:2 field 'text' holds a lone surrogate.*--on-error skip"):
        _texts(SourceConfig(location=str(path)))
    stats = SourceStats("s")
    assert _texts(SourceConfig(location=str(path)), stats=stats, on_error="skip") == ["ok \U0001f600", "last"]
    assert stats.bad_records == 1


@pytest.mark.parametrize("unit", ["paragraph", "line", "file"])
def test_a_crlf_text_file_reads_as_its_lf_twin(tmp_path, unit):
    """Before, paragraph and file units kept "\r\n" inside documents, so the same text saved by a
    Windows editor tokenized differently ("\r" is a token of its own)."""
    text = "Call me Ishmael.\nSome years ago.\n\nIt was a\ndamp November.\n"
    (tmp_path / "lf.txt").write_bytes(text.encode())
    (tmp_path / "crlf.txt").write_bytes(text.replace("\n", "\r\n").encode())
    lf, crlf = (
        _texts(SourceConfig(location=str(tmp_path / f), txt_unit=unit)) for f in ("lf.txt", "crlf.txt")
    )
    assert crlf == lf and not any("\r" in t for t in crlf)


@pytest.mark.parametrize("unit", ["paragraph", "line", "file"])
def test_a_cr_only_text_file_reads_as_its_lf_twin(tmp_path, unit):
    """A file saved with classic Mac OS line ends (a lone "\r") was one line, so one document in every unit,
    where its LF and CRLF twins were many; documents kept its "\r"s, a token of their own."""
    text = "Call me Ishmael.\nSome years ago.\n\nIt was a\ndamp November.\n\n\nLast.\n"
    (tmp_path / "lf.txt").write_bytes(text.encode())
    (tmp_path / "cr.txt").write_bytes(text.replace("\n", "\r").encode())
    lf, cr = (_texts(SourceConfig(location=str(tmp_path / f), txt_unit=unit)) for f in ("lf.txt", "cr.txt"))
    assert cr == lf and not any("\r" in t for t in cr)
    assert len(lf) == {"paragraph": 3, "line": 5, "file": 1}[unit]  # blank lines: empty, dropped


def test_lines_end_at_lf_crlf_or_a_lone_cr_across_any_chunk_boundary():
    """`_lines` reads in chunks; a "\r\n" cut between two chunks is one line end, not two."""
    import io
    import random

    from encoderlab.data.filereaders import _lines

    rng = random.Random(0)
    data = b"".join(rng.choice([b"a", b"bc", b"\n", b"\r", b"\r\n", b"\x0c", b" "]) for _ in range(2000))
    for size in (1, 2, 3, 7, 64, 1 << 20):
        assert list(_lines(io.BytesIO(data), size)) == data.splitlines(keepends=True), size


@pytest.mark.parametrize(
    "option,message",
    [
        (
            "hf_config=x",
            r"hf_config=x selects files of a hub dataset \(hf:\.\.\.\), which this source is not",
        ),
        ("hf_split=test", r"hf_split=test selects files of a hub dataset"),
        ("hf_data_dir=en", r"hf_data_dir=en selects files of a hub dataset"),
        ("txt_unit=line", r"txt_unit=line says what a document of a \.txt file is, and it has none"),
    ],
)
def test_an_option_that_does_nothing_on_a_local_source_is_refused(tmp_path, option, message):
    """Ignored silently before (`corpus.jsonl#hf_config=x`); `txt_unit` even entered the prepare
    settings, so the same data counted as prepared differently."""
    from encoderlab.data.sources import describe, parse_source

    corpus = write_jsonl(tmp_path / "c.jsonl", [{"text": "a document"}])
    with pytest.raises(UserError, match=rf"^source .*c\.jsonl: {message}"):
        describe(parse_source(f"{corpus}#{option}"))
    assert describe(parse_source(f"{corpus}#weight=2"))["kind"] == "files"


def test_a_folder_leaves_hidden_files_out_as_a_glob_does(tmp_path, caplog):
    # was: `rglob` read them: macOS's `._a.txt` (an AppleDouble fork) as a document of control bytes, a
    # Jupyter checkpoint's copy of a.txt as its documents again (trained on twice, maybe held out once)
    folder = tmp_path / ".corpus"  # a hidden folder named by the user is read: only what is under it counts
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha\n\nbeta\n")
    (folder / ".ipynb_checkpoints" / "a-checkpoint.txt").write_text("alpha\n\nbeta\n")
    (folder / "._a.txt").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    caplog.set_level("INFO")
    assert [d.text for d in mix_documents([SourceConfig(location=str(folder))])] == ["alpha", "beta"]
    assert "not read" not in caplog.text  # no note of files of other kinds: hidden ones are not the corpus's
    assert _texts(SourceConfig(location=str(folder / "**" / "*.txt"))) == ["alpha", "beta"]  # as the glob


@pytest.mark.parametrize("name", ["notepad.txt", "notepad.jsonl"])
def test_a_utf16_corpus_file_names_utf16_not_latin1(tmp_path, name):
    # was: "notepad.txt:1 is not UTF-8 (byte 0); save it as UTF-8, e.g. `iconv -f latin1 ...`, or pass
    # --on-error skip ...": converting UTF-16 from Latin-1 gives a text of NULs and mojibake
    path = tmp_path / name
    path.write_text(
        '{"text": "caf\u00e9 au lait"}\n' if name.endswith("jsonl") else "caf\u00e9 au lait\n", "utf-16"
    )
    with pytest.raises(UserError) as err:
        _texts(SourceConfig(location=str(path)))
    assert str(err.value) == (
        f"{path}:1 is UTF-16 text, not UTF-8; save it as UTF-8, e.g. `iconv -f utf-16 -t utf-8 {name} > utf8-{name}`"
    )


def test_a_folder_reads_a_symlinked_folder_once_as_a_glob_does(tmp_path):
    # was: `rglob` did not enter `corpus/shared -> ../shared` (data linked from shared storage), so its
    # files were left out without a word, where the glob 'corpus/**/*.txt' read them; and the glob,
    # following the link back up to its depth limit, read each file once per path (41 documents here)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("alpha\n")
    (tmp_path / "shared" / "b.txt").write_text("beta\n")
    (tmp_path / "corpus" / "shared").symlink_to(tmp_path / "shared")
    (tmp_path / "shared" / "up").symlink_to(tmp_path / "corpus")  # a loop: each real folder once
    folder = SourceConfig(location=str(tmp_path / "corpus"))
    assert _texts(folder) == ["alpha", "beta"]
    assert _texts(SourceConfig(location=str(tmp_path / "corpus" / "**" / "*.txt"))) == ["alpha", "beta"]


def test_a_folder_encoderlab_wrote_inside_a_corpus_folder_is_refused_and_writes_nothing(
    tmp_path, capsys, monkeypatch
):
    """A tokenizer trained into the corpus folder (`data tokenizer --out corpus/tok`), then `--source corpus`:
    its tokenizer.json was read as JSON lines, refused as "not valid JSON; fix or remove it" (a fix that
    breaks the tokenizer), and `--on-error skip` trained on whatever of it parsed."""
    from tests.reliability.test_hostile_inputs import assert_refused_unchanged

    from encoderlab.outdir import create_output

    corpus = tmp_path / "corpus"
    write_jsonl(corpus / "a.jsonl", [{"text": "alpha beta"}, {"text": "gamma delta"}])
    create_output(corpus / "tok", "data tokenizer")
    (corpus / "tok" / "tokenizer.json").write_text('{\n  "version": "1.0"\n}\n')
    assert_refused_unchanged(
        tmp_path,
        "corpus-holds-an-encoderlab-folder",
        "data tokenizer --source {w}/corpus --vocab-size 300 --out {w}/t",
        r"\S+corpus/tok, in \S+corpus, is a folder encoderlab wrote \(data tokenizer\), not text: its "
        r"tokenizer.json would be read as a document; move it out of \S+corpus, or point --source at the text "
        r"files only \(a glob of them\)$",
        capsys,
        monkeypatch,
    )
    with pytest.raises(
        UserError,
        match=r"corpus/tok is a folder encoderlab wrote \(data tokenizer\), not text: give it as a tok",
    ):
        _texts(SourceConfig(location=str(corpus / "tok")), on_error="skip")  # the folder itself, skip or not
    assert _texts(SourceConfig(location=f"{corpus}/*.jsonl")) == ["alpha beta", "gamma delta"]  # the fix
    for glob in (
        f"{corpus}/**/*.json",
        f"{corpus}/tok/*.json",
    ):  # a glob reaching into it: its files one by one
        with pytest.raises(UserError, match=r"corpus/tok(, in \S+corpus,)? is a folder encoderlab wrote"):
            _texts(SourceConfig(location=glob), on_error="skip")


def test_a_pretty_printed_json_object_is_refused_with_the_command_that_converts_it(
    tmp_path, capsys, monkeypatch
):
    """A `.json` file holding one object over several lines (`json.dump(..., indent=2)`) was refused at
    line 1 as "not valid JSON (Expecting property name enclosed in double quotes); fix or remove it",
    which names no problem and no fix."""
    from tests.reliability.test_hostile_inputs import assert_refused_unchanged

    (tmp_path / "obj.json").write_text('{\n  "id": 1,\n  "text": "alpha beta"\n}\n')
    err = assert_refused_unchanged(
        tmp_path,
        "pretty-printed-json-corpus",
        "data tokenizer --source {w}/obj.json --vocab-size 300 --out {w}/t",
        r"obj.json:1 is a lone '\{': the file holds JSON written over several lines",
        capsys,
        monkeypatch,
    )
    fix = err.strip().split("e.g. ", 1)[1]
    assert fix.endswith(f"{tmp_path / 'obj.json'} > {tmp_path / 'obj.jsonl'}")
    python = fix.split(" > ")[0].replace("python", sys.executable, 1)  # the command it gives, run as written
    out = subprocess.run(python, shell=True, capture_output=True, text=True, check=True).stdout
    (tmp_path / "obj.jsonl").write_text(out)
    assert _texts(SourceConfig(location=str(tmp_path / "obj.jsonl"))) == ["alpha beta"]
    stats = SourceStats("o")
    assert _texts(SourceConfig(location=str(tmp_path / "obj.json")), stats=stats, on_error="skip") == []
    assert stats.bad_files == 1  # the file, once: not one bad record per line of it


def test_a_parquet_file_with_two_text_columns_is_one_line(tmp_path, capsys, monkeypatch):
    """pyarrow writes a table with two columns of one name; reading it stopped in a KeyError traceback
    (`schema.field`), and once only the second was a string, in an AttributeError on the first's ints."""
    from tests.reliability.test_hostile_inputs import assert_refused_unchanged

    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array(["x", "y"])], names=["text", "text"])
    pq.write_table(table, tmp_path / "dup.parquet")
    assert_refused_unchanged(
        tmp_path,
        "parquet-two-text-columns",
        "data tokenizer --source {w}/dup.parquet --vocab-size 300 --out {w}/t",
        r"dup.parquet has 2 columns named 'text'; write it again with one column of that name$",
        capsys,
        monkeypatch,
    )
    stats = SourceStats("d")
    assert _texts(SourceConfig(location=str(tmp_path / "dup.parquet")), stats=stats, on_error="skip") == []
    assert stats.bad_files == 1


def test_an_empty_text_field_is_refused_where_the_source_is_read(tmp_path, capsys, monkeypatch):
    """`#text_field=` was taken: each JSON lines file was then refused as "has no field ''" (a fix naming
    no field), and a .txt-only source read on."""
    from tests.reliability.test_hostile_inputs import assert_refused_unchanged

    write_jsonl(tmp_path / "c.jsonl", [{"text": "alpha"}])
    assert_refused_unchanged(
        tmp_path,
        "source-text-field-empty",
        "data tokenizer --source {w}/c.jsonl#text_field= --out {w}/t",
        r"c\.jsonl#text_field=': text_field is empty; name the field holding the text, or drop it",
        capsys,
        monkeypatch,
    )


def test_mirror_folders_of_sources_none_from_the_hub_read_no_mirror_variable(tmp_path, monkeypatch):
    # was: ENCODERLAB_HUB_DATA read first, so `study run` of a study of local files alone was refused for a
    # variable naming a file ("is a file, not a folder"), a mirror it never reads
    from encoderlab.data.sources import mirror_folders

    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "not-a-folder"))
    assert mirror_folders([SourceConfig(location=str(tmp_path / "corpus.jsonl"))]) == []
    with pytest.raises(UserError, match="is a file, not a folder"):  # a hub source still reads it
        mirror_folders([SourceConfig(location="hf:someone/corpus")])
