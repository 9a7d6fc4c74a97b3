"""A study's corpus entries in `--source`'s syntax: `LOCATION[#key=value,...]`, paths relative to the file.

Before, a study read each entry as a bare location: `corpus.jsonl#text_field=content` was "not an
existing file", so a study could not read a corpus whose text is not in a `text` field (nor weight
a mixture), and a glob was matched from the working folder, not the study file's."""

from __future__ import annotations

import json

import pytest
from tests.study.study_fixtures import corpus_entries_study

from encoderlab.cli import main
from encoderlab.data.mixing import mix_documents
from encoderlab.errors import UserError
from encoderlab.study.checks import check_sources
from encoderlab.study.files import load_study_file
from encoderlab.study.needs import corpus_locations, corpus_sources


def _write(path, texts, field="content"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({field: t}) + "\n" for t in texts))


def test_entries_take_options_and_are_found_from_the_study_files_folder(tmp_path, monkeypatch):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    _write(project / "parts" / "a.jsonl", ["alpha one", "alpha two"])
    _write(project / "parts" / "b.jsonl", ["beta one"])
    _write(project / "extra.jsonl", ["gamma one"])
    _write(elsewhere / "extra.jsonl", ["not this one"])  # the same name where the command runs
    monkeypatch.chdir(elsewhere)
    spec = load_study_file(
        corpus_entries_study(
            project, ["parts/*.jsonl#text_field=content", "extra.jsonl#text_field=content,weight=2"]
        )
    )
    (data,) = spec.data
    assert corpus_locations(data.corpus) == [str(project / "parts" / "*.jsonl"), str(project / "extra.jsonl")]
    glob_source, extra = corpus_sources(data.corpus)
    assert (glob_source.text_field, extra.text_field, extra.weight) == ("content", "content", 2.0)
    check_sources(spec)  # the study's up-front check reads them as the prepare node will
    texts = sorted(d.text for d in mix_documents(corpus_sources(data.corpus), stop="all_exhausted"))
    assert set(texts) == {"alpha one", "alpha two", "beta one", "gamma one"}


def test_a_bad_option_is_one_line_before_anything_is_written(tmp_path, capsys):
    _write(tmp_path / "corpus.jsonl", ["alpha"])
    study = corpus_entries_study(tmp_path, ["corpus.jsonl#colour=red"])
    with pytest.raises(SystemExit) as stop:
        main(["study", "run", str(study), "--out", str(tmp_path / "out"), "--no-fetch"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "colour" in err, err
    assert not (tmp_path / "out").exists()
    with pytest.raises(UserError, match="colour"):
        check_sources(load_study_file(study))


def test_a_path_missing_beside_the_study_file_is_never_read_from_the_working_directory(
    tmp_path, monkeypatch, capsys
):
    # was: a corpus entry, tokenizer, start model or CKA texts missing beside the study file was read
    # from the working directory when a same-named path was there: silently another corpus
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    _write(elsewhere / "extra.jsonl", ["not this one"])
    (elsewhere / "tok").mkdir()
    monkeypatch.chdir(elsewhere)
    study = corpus_entries_study(project, ["extra.jsonl#text_field=content"])
    study.write_text(study.read_text().replace("vocab_size: 300,", "vocab_size: 300, tokenizer: tok,"))
    with pytest.raises(UserError) as err:
        load_study_file(study)
    lines = str(err.value).splitlines()[1:]
    assert lines == [
        f"  data[0].corpus: extra.jsonl is not beside the study file (in {project}) but in the working "
        f"directory, which a study file's paths are not read from; write ../elsewhere/extra.jsonl#text_field=content "
        f"or {elsewhere.resolve() / 'extra.jsonl'}#text_field=content",  # the entry's options kept in both
        # paths: written as told (without them), it read the field `text`; "or an absolute path" lost them
        f"  data[0].tokenizer: tok is not beside the study file (in {project}) but in the working "
        "directory, which a study file's paths are not read from; write ../elsewhere/tok or an absolute path",
    ], lines
    told = f"{elsewhere.resolve() / 'extra.jsonl'}#text_field=content"  # the absolute path, written as told
    assert load_study_file(corpus_entries_study(project, [told])).data[0].corpus == (told,)
    study = corpus_entries_study(project, ["extra.jsonl#text_field=content"])
    study.write_text(study.read_text().replace("vocab_size: 300,", "vocab_size: 300, tokenizer: tok,"))
    # missing everywhere: the entry names where it was looked for, and the check refuses it there
    (elsewhere / "extra.jsonl").unlink()
    (elsewhere / "tok").rmdir()
    spec = load_study_file(study)
    assert corpus_locations(spec.data[0].corpus) == [str(project / "extra.jsonl")]
    missing = f"'{project / 'extra.jsonl'}' is not an existing file, folder or glob; fix the dataset's corpus"
    with pytest.raises(UserError, match=missing):
        check_sources(spec)
    # and `study plan` refuses it (was: "? unique tokens (... no asset, named hub corpus or local file)", exit 0)
    with pytest.raises(SystemExit) as stop:
        main(["study", "plan", str(study)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and missing in err, err
    # names stay names, whatever the working directory holds
    (elsewhere / "wiki-leads").mkdir()
    assert load_study_file(corpus_entries_study(project, ["wiki-leads#weight=2"])).data[0].corpus == (
        "wiki-leads#weight=2",
    )


def test_a_prepared_folder_is_read_beside_the_study_file_never_from_the_working_directory(
    tmp_path, monkeypatch
):
    # was: a relative `prepared:` was read from the working directory (the one field of a study file
    # that was), so `study plan` from the study's own folder counted it and from another refused it
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "prep").mkdir(parents=True)
    (elsewhere / "other").mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    study = corpus_entries_study(project, ["corpus.jsonl"])
    study.write_text(study.read_text().replace("vocab_size: 300,", "tokenizer: tok, prepared: prep,"))
    assert load_study_file(study).data[0].prepared == str(project / "prep")
    study.write_text(study.read_text().replace("prepared: prep,", "prepared: other,"))
    with pytest.raises(UserError) as err:
        load_study_file(study)
    assert str(err.value).splitlines()[1:] == [
        f"  data[0].prepared: other is not beside the study file (in {project}) but in the working "
        "directory, which a study file's paths are not read from; write ../elsewhere/other or an absolute path"
    ]


def test_a_corpus_entry_that_looks_like_a_typo_of_an_asset_says_which(tmp_path):
    # was: "'FOLDER/wiki-lead' is not an existing file, folder or glob", read as a file beside the study
    study = corpus_entries_study(tmp_path, ["wiki-lead#weight=2"])
    with pytest.raises(UserError) as err:
        load_study_file(study)
    assert str(err.value).splitlines()[1:] == [
        f"  data[0].corpus: wiki-lead is no file beside the study file (in {tmp_path}) nor an asset or named "
        "corpus; did you mean wiki-leads?"
    ]
    (tmp_path / "wiki-lead").write_text("a file of that name is read as it\n")
    assert load_study_file(study).data[0].corpus == (f"{tmp_path / 'wiki-lead'}#weight=2",)


def test_a_corpus_entry_s_bad_option_names_the_entry_once(tmp_path):
    # was: "source 'X#weight=0': source X: weight must be ...", the source named twice
    _write(tmp_path / "a.jsonl", ["alpha one"])
    for option, problem in [("weight=0", "weight must be a finite"), ("text_field=", "text_field is empty")]:
        with pytest.raises(UserError) as err:
            check_sources(load_study_file(corpus_entries_study(tmp_path, [f"a.jsonl#{option}"])))
        assert f"source '{tmp_path / 'a.jsonl'}#{option}': {problem}" in str(err.value)
        assert str(err.value).count("a.jsonl") == 1


def test_an_entry_that_is_a_symlink_to_nothing_is_refused_as_one_naming_its_target(tmp_path):
    """A relative entry linking to nothing (`corp[1].jsonl`, or a plain name) was "no file beside the study
    file" (or matched as a glob): it is the link, refused by the up-front check as a `--source` one is."""
    for name in ("corp[1].jsonl", "corp.jsonl"):
        (tmp_path / name).symlink_to(tmp_path / "unmounted" / name)
        spec = load_study_file(corpus_entries_study(tmp_path, [f"{name}#text_field=content"]))
        assert corpus_locations(spec.data[0].corpus) == [str(tmp_path / name)]
        with pytest.raises(UserError, match=r"it is a symlink to \S+unmounted/\S+, which does not exist"):
            check_sources(spec)


def test_an_entry_is_a_glob_as_a_source_is_one_from_the_study_file_s_folder(tmp_path, monkeypatch):
    """One rule with `--source` (`sources.is_pattern`, given the study file's folder): a name holding `[`
    that exists there is itself, one that does not is a pattern; the folder's own `[` is no pattern."""
    project = tmp_path / "s[2]"
    _write(project / "corp[1].jsonl", ["one"])
    _write(project / "parts" / "a.jsonl", ["two"])
    monkeypatch.chdir(tmp_path)  # where neither name exists
    spec = load_study_file(corpus_entries_study(project, ["corp[1].jsonl", "parts/[a].jsonl"]))
    (data,) = spec.data
    assert corpus_locations(data.corpus) == [
        str(project.resolve() / "corp[1].jsonl"),
        str(tmp_path.resolve() / "s[[]2]" / "parts" / "[a].jsonl"),
    ]
