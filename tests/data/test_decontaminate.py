"""Decontamination: evaluation texts are removed from prepared data by id and by n-gram overlap."""

from __future__ import annotations

import pytest
from corpus_fixtures import fake_assets, random_words, sentence, tokenizer_dir, write_jsonl  # noqa: F401 (fixtures)

from encoderlab.data.decontaminate import (
    TextSet,
    build_contamination,
    ngram_hashes,
    ngram_hashes_batch,
    resolve_eval_sets,
    words,
)
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


@pytest.mark.parametrize("n", [3, 5, 13])
def test_hash_overlap_agrees_with_exact_ngram_overlap(n):
    texts = [" ".join(sentence(i, 20) for i in range(j, j + 3)) for j in range(0, 40, 4)]
    texts.append(texts[2][40:] + " Totally NEW words here, at the end!")
    for a in texts:
        for b in texts:
            exact = bool(_ngrams(a, n) & _ngrams(b, n))
            hashed = bool(set(ngram_hashes(a, n).tolist()) & set(ngram_hashes(b, n).tolist()))
            assert exact == hashed
    assert len(ngram_hashes("too short", n)) == 0


def test_normalisation_ignores_case_punctuation_and_spacing():
    a = "The River flows, north -- past THE old mill; and then it turns west toward the sea again."
    b = "the river flows north past the old mill and then it turns west toward the sea again"
    assert set(ngram_hashes(a, 13).tolist()) == set(ngram_hashes(b, 13).tolist())


def test_prepare_removes_evaluation_texts(tmp_path, tokenizer_dir, fake_assets):  # noqa: F811
    passage = random_words(1000, 60)
    fake_assets(
        {
            "squad-v1-dev": [{"id": f"q{i}", "text": passage, "meta": {}} for i in range(3)],
            "bbc-news": [{"id": "business/001", "text": "A short article.", "meta": {}}],
            "web": [
                {"id": "business/001", "text": "A rewritten copy under the same id."},  # by id
                {
                    "id": "w1",
                    "text": "Quoted: " + " ".join(passage.split()[20:35]).upper() + " end.",
                },  # by n-gram
                {
                    "id": "w2",
                    "text": " ".join(passage.split()[:12]) + " zebra xylophone quartz.",
                },  # < 13 shared words
                *({"id": f"c{i}", "text": random_words(i, 30)} for i in range(20)),
            ],
        }
    )
    cfg = PrepareConfig(
        sources=(SourceConfig(location="web"),),
        tokenizer=str(tokenizer_dir),
        decontaminate=("squad-v1-dev", "bbc-news"),
        val_fraction=0,
    )
    meta = read_meta(prepare(cfg, tmp_path / "out", workers=1, progress=False))
    d = meta["decontamination"]
    assert (d["removed_by_id"], d["removed_by_ngram"]) == (1, 1)
    assert d["against"] == ["squad-v1-dev", "bbc-news"] and d["eval_texts"] == 2  # squad context deduplicated
    assert meta["splits"]["train"]["docs"] == 21


def test_auto_uses_fetched_sets_and_reports_the_rest(fake_assets):  # noqa: F811
    fake_assets({"boolq": [{"id": "b", "text": "x", "meta": {}}]})
    used, missing = resolve_eval_sets(("auto",))
    assert used == ["boolq"] and "squad-v1-dev" in missing
    assert resolve_eval_sets(()) == ([], [])
    with pytest.raises(UserError, match="nor an asset name"):
        resolve_eval_sets(("no-such-set",))


def test_local_file_as_evaluation_set(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": " ".join(sentence(i, 15) for i in range(3))}])
    contam = build_contamination([str(ev)], ngram=13)
    assert contam.is_contaminated("x", sentence(1, 15)) == "ngram"
    assert contam.is_contaminated("x", sentence(99, 15)) is None
    with pytest.raises(UserError, match="at least 3"):
        build_contamination([str(ev)], ngram=2)


def test_batch_hashing_never_spans_two_texts():
    texts = [random_words(i, 5 + 7 * i) for i in range(6)]
    hashes, owner = ngram_hashes_batch(texts, 13)
    for i, text in enumerate(texts):
        assert hashes[owner == i].tolist() == ngram_hashes(text, 13).tolist()
    assert len(hashes) == sum(max(0, len(t.split()) - 12) for t in texts)


def test_index_is_cached_and_rebuilt_when_a_set_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(1, 40)}])
    first = build_contamination([str(ev)])
    assert len(list((tmp_path / "home").rglob("*.npz"))) == 1
    assert build_contamination([str(ev)]).hashes.tolist() == first.hashes.tolist()
    write_jsonl(ev, [{"text": random_words(2, 40)}, {"text": random_words(3, 40)}])
    changed = build_contamination([str(ev)])
    assert changed.eval_texts == 2 and not set(changed.hashes.tolist()) & set(first.hashes.tolist())


def test_a_damaged_cache_is_rebuilt(tmp_path, monkeypatch, capsys):
    """A cache file cut short (or replaced) in ENCODERLAB_HOME was a traceback in every later prepare."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(1, 40)}])
    first = build_contamination([str(ev)])
    (cache,) = (tmp_path / "home").rglob("*.npz")
    cache.write_bytes(cache.read_bytes()[:50])
    again = build_contamination([str(ev)])
    assert again.hashes.tolist() == first.hashes.tolist() and again.ids == first.ids
    assert "decontamination cache" in capsys.readouterr().err


def test_an_ngram_past_any_evaluation_text_is_refused_before_anything_is_written(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """`--ngram 1000000000` was accepted: no evaluation text has that many words, so decontamination
    silently matched by id only."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"text": random_words(i, 30)} for i in range(5)])
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(99, 40)}])
    argv = ["data", "prepare", "--source", corpus, "--tokenizer", tokenizer_dir, "--out", tmp_path / "out",
            "--decontaminate", ev, "--ngram", "1000000000"]  # fmt: skip
    code, err = cli(argv, capsys)
    assert_one_line(
        code,
        err,
        r"--ngram 1000000000: the decontamination n-gram length must be at most 1000 words \(an overlap that long "
        r"is already a copy of a whole long document; a longer n matches next to nothing, leaving only id "
        r"matching\); use e.g. 13, the default \(GPT-3's rule\), or --decontaminate none to turn "
        r"decontamination off",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "eval.jsonl"]  # no home, no out


def test_an_ngram_no_evaluation_text_reaches_is_noted(tmp_path, monkeypatch, capsys):
    from encoderlab.data.decontaminate import MAX_NGRAM

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"text": random_words(i, 40)} for i in range(2)])
    build_contamination([str(ev)], ngram=40)
    assert "note" not in capsys.readouterr().err
    contam = build_contamination([str(ev)], ngram=MAX_NGRAM)  # accepted, but matches nothing: said so
    err = capsys.readouterr().err
    assert f"none of the 2 evaluation texts has {MAX_NGRAM} words (--ngram)" in err and "by id only" in err
    assert contam.is_contaminated("x", random_words(0, 40)) is None


def test_an_evaluation_file_without_the_text_field_names_a_fix_that_works(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """An evaluation .jsonl whose text is under another field named `--source 'F#text_field=G'` as the
    fix, and `--decontaminate` took no `#text_field`: it said F was not an existing file."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    copied = random_words(99, 40)
    corpus = write_jsonl(
        tmp_path / "corpus.jsonl", [{"text": random_words(i, 30)} for i in range(5)] + [{"text": copied}]
    )
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"question": copied}])
    argv = ["data", "prepare", "--source", corpus, "--tokenizer", tokenizer_dir, "--out", tmp_path / "o",
            "--decontaminate", ev, "--workers", "1"]  # fmt: skip
    code, err = cli(argv, capsys)
    fix = f"--decontaminate '{ev}#text_field=question'"
    assert_one_line(
        code,
        err,
        r"eval.jsonl:1 has no field 'text' \(fields: question\); name the text field in --decontaminate",
    )
    assert fix in err and not (tmp_path / "o").exists()
    assert_printed_as_documented("decontaminate-text-field-missing", err, tmp_path)
    code, _ = cli([*argv[:-3], f"{ev}#text_field=question", "--workers", "1"], capsys)
    assert code == 0 and read_meta(tmp_path / "o")["decontamination"]["removed_by_ngram"] == 1


def test_an_evaluation_file_without_text_is_refused_before_anything_is_written(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """`--decontaminate empty.txt` (blank lines only) was taken: the prepare decontaminated against nothing,
    without a word. Refused, it also left $ENCODERLAB_HOME/cache/decontam behind (made before the sets were
    read): a refused command makes nothing, not even the cache's folder."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"text": random_words(i, 30)} for i in range(5)])
    ev = tmp_path / "eval.txt"
    ev.write_text("\n\n  \n")
    argv = ["data", "prepare", "--source", corpus, "--tokenizer", tokenizer_dir, "--out", tmp_path / "o",
            "--decontaminate", ev, "--workers", "1"]  # fmt: skip
    code, err = cli(argv, capsys)
    assert_one_line(code, err, r"the evaluation set \S*eval.txt has no text, so it can remove nothing")
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "home").exists()
    assert_printed_as_documented("decontaminate-set-without-text", err, tmp_path)


def test_an_evaluation_folder_without_text_files_names_decontaminate_in_its_fix(tmp_path):
    """Its fix said "point --source at text files", a flag that did not name it."""
    (tmp_path / "README.md").write_text("notes\n")
    with pytest.raises(UserError, match=r"holds no \.txt.* file; point --decontaminate at text files$"):
        resolve_eval_sets([str(tmp_path)])


def test_a_text_set_handed_in_is_matched_by_overlap_not_by_id_and_keyed_by_its_version(tmp_path, monkeypatch):
    """A set a higher layer read (`TextSet`: a study's task file's test split) removes a document sharing a
    13-gram with one of its texts; its texts' positions are no ids; a new version is hashed again, not
    read from the cache under the old one."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    text = " ".join(f"w{i}" for i in range(20))
    first = TextSet(name="task-test:mine.yaml", version="a", texts=(text,))
    contam = build_contamination([], text_sets=(first,))
    assert contam.against == ["task-test:mine.yaml"] and contam.eval_texts == 1 and not contam.ids
    assert contam.check(["0", "1"], [f"quoted: {text}", "w0 w1 w2 unrelated words"]) == ["ngram", None]
    edited = TextSet(name=first.name, version="b", texts=(text.replace("w5", "v5"),))
    again = build_contamination([], text_sets=(edited,))
    assert not set(again.hashes.tolist()) <= set(contam.hashes.tolist())
