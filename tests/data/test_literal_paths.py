"""A corpus path that exists is read as itself, even when its name holds `[`, `*` or `?`.

Before, any location with one of those was expanded as a glob first (`data/sources.py`
`resolve_files`): `corp[1].jsonl` alone was refused ("the glob ... matches no file"), and beside a
`corp1.jsonl` the prepare and the plan read `corp1.jsonl` instead, without a word. A study file in a
folder whose own name holds `[` had its glob entries matched against another folder."""

from __future__ import annotations

import glob
import os
import re

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.study.study_fixtures import corpus_entries_study

from encoderlab.data.filereaders import MissingTextField
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.resume import Chain
from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents, resolve_files, unread_files
from encoderlab.errors import UserError
from encoderlab.study.files import load_study_file
from encoderlab.study.needs import corpus_locations, corpus_sources
from encoderlab.study.plan import _source_estimate


def _texts(location: str, stats: SourceStats | None = None) -> list[str]:
    return [d.text for d in iter_documents(SourceConfig(location=location), stats)]


def test_an_existing_file_with_brackets_is_read_itself_not_as_a_glob(tmp_path):
    literal = write_jsonl(tmp_path / "corp[1].jsonl", [{"text": "the bracketed file"}])
    assert resolve_files(str(literal)) == [literal]  # was: "the glob ... matches no file"
    write_jsonl(tmp_path / "corp1.jsonl", [{"text": "the file the pattern matches"}])
    stats = SourceStats(str(literal))
    assert _texts(str(literal), stats) == ["the bracketed file"]  # was corp1.jsonl's
    assert [f["path"] for f in stats.files] == [str(literal)]
    assert stats.identity == {"kind": "files"} and stats.resolved == os.path.realpath(literal)
    # a glob is still a glob where no path has its name: this one matches both, that one corp1.jsonl only
    assert resolve_files(str(tmp_path / "corp*.jsonl")) == [tmp_path / "corp1.jsonl", literal]
    assert _texts(str(tmp_path / "corp[1].json[l]")) == ["the file the pattern matches"]
    # glob.escape's spelling reads the literal file as a pattern would
    assert _texts(str(tmp_path / "corp[[]1].jsonl")) == ["the bracketed file"]


def test_an_existing_folder_with_a_star_is_read_itself_and_its_glob_part_escaped(tmp_path):
    folder = tmp_path / "runs[2024]*"
    write_jsonl(folder / "a.jsonl", [{"text": "in the starred folder"}])
    (folder / "notes.csv").write_text("x")
    write_jsonl(tmp_path / "runs2" / "b.jsonl", [{"text": "in another folder"}])
    assert _texts(str(folder)) == ["in the starred folder"]
    assert unread_files(str(folder)) == [folder / "notes.csv"]
    escaped = os.path.join(str(tmp_path / "runs[[]2024][*]"), "*.jsonl")
    assert _texts(escaped) == ["in the starred folder"]


def test_a_bracketed_file_without_its_field_is_fixed_by_naming_the_file(tmp_path):
    """The fix read it as a glob (`--source 'SOURCE#text_field=..'`, naming every file it holds)."""
    literal = write_jsonl(tmp_path / "c[1].jsonl", [{"body": "x"}])
    try:
        _texts(str(literal))
    except MissingTextField as exc:
        assert f"--source '{literal}#text_field=body'" in str(exc) and "every JSONL" not in str(exc)
    else:
        raise AssertionError("a missing text field was not refused")


def test_prepare_plan_and_resume_read_the_literal_file(tmp_path, tokenizer_dir):  # noqa: F811
    literal = write_jsonl(tmp_path / "corp[1].jsonl", corpus_records(40, prefix="literal"))
    other = write_jsonl(tmp_path / "corp1.jsonl", corpus_records(400, prefix="other"))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(literal)),), tokenizer=str(tokenizer_dir), decontaminate=()
    )
    prepare(cfg, tmp_path / "out")
    (source,) = read_meta(tmp_path / "out")["sources"]
    assert [f["path"] for f in source["files"]] == [str(literal)]
    assert Chain.here(cfg.sources).names == ({str(literal): os.path.realpath(literal)},)
    (tmp_path / "copy.jsonl").write_bytes(literal.read_bytes())
    planned = _source_estimate(str(literal), None)[0]  # `study plan`'s size of the entry: was corp1.jsonl's
    assert planned == _source_estimate(str(tmp_path / "copy.jsonl"), None)[0]
    assert planned != _source_estimate(str(other), None)[0]


def test_a_study_in_a_bracketed_folder_matches_its_glob_entries_there(tmp_path):
    project, twin = tmp_path / "study[2]", tmp_path / "study2"
    write_jsonl(project / "parts" / "a.jsonl", [{"text": "beside the study file"}])
    write_jsonl(twin / "parts" / "a.jsonl", [{"text": "in the folder the pattern matches"}])
    write_jsonl(project / "c[1].jsonl", [{"text": "the bracketed entry"}])
    (data,) = load_study_file(corpus_entries_study(project, ["parts/*.jsonl", "c[1].jsonl"])).data
    assert corpus_locations(data.corpus)[1] == str(project / "c[1].jsonl")
    pattern, literal = corpus_sources(data.corpus)
    assert _texts(pattern.location) == ["beside the study file"]  # was the twin folder's
    assert _texts(literal.location) == ["the bracketed entry"]


def test_analysis_texts_read_the_bracketed_file(tmp_path):
    """`analyze cka --texts t[1].txt` read t1.txt's lines beside it (its .txt goes through the sources)."""
    from encoderlab.analysis.inputs import read_records

    (tmp_path / "t[1].txt").write_text("the bracketed line\n")
    (tmp_path / "t1.txt").write_text("a line the pattern matches\n")
    assert [r["text"] for r in read_records(str(tmp_path / "t[1].txt"))] == ["the bracketed line"]


def test_a_glob_in_an_escaped_folder_names_that_folder_when_it_is_a_tokenizers(tmp_path):
    """The glob's folder was cut at the first `[`, escaped or not: `tok[[]1]/*.json` checked `tok`'s folder,
    so a tokenizer folder was "X, in PARENT, ..." where `tok2/*.json` says what it is."""
    said = {}
    for name in ("tok2", "tok[1]"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tokenizer.json").write_text('{\n  "model": {}\n}\n')
        write_jsonl(tmp_path / name / "a.jsonl", [{"text": "x"}])
        with pytest.raises(UserError) as err:
            resolve_files(os.path.join(glob.escape(str(tmp_path / name)), "*.json*"))
        said[name] = str(err.value).replace(str(tmp_path / name), "FOLDER")
    assert said["tok[1]"] == said["tok2"]
    assert said["tok2"].startswith(
        "FOLDER is a tokenizer or model folder (it holds tokenizer.json), not text"
    )


@pytest.mark.parametrize("name", ["corp[1].jsonl", "corp1.jsonl"])
def test_a_symlink_to_nothing_named_as_the_source_is_refused_as_a_link_naming_its_target(
    tmp_path, capsys, name, monkeypatch
):
    """A dangling link whose name holds `[` was read as a glob ("the glob ... matches no file"), and one
    without as a name that is nothing ("not an existing file, folder or glob"): neither said it is a link,
    nor to where. Now it is read as a folder's link to nothing is: refused, or skipped with `--on-error skip`."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli
    from tests.reliability.treestate import assert_unchanged, world_state

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    link = tmp_path / name
    link.symlink_to(tmp_path / "unmounted" / "corp.jsonl")
    assert resolve_files(str(link)) == [link]
    write_jsonl(tmp_path / "corp1x.jsonl", [{"text": "a file a pattern could match"}])
    before = world_state(tmp_path)
    argv = ["data", "tokenizer", "--source", str(link), "--vocab-size", "300", "--out", str(tmp_path / "t")]
    code, err = cli(argv, capsys)
    assert_one_line(
        code,
        err,
        rf"cannot read \S+/{re.escape(name)}: it is a symlink to \S+unmounted/corp.jsonl, which does not exist; "
        "fix or remove it, or pass --on-error skip",
    )
    assert_unchanged(before)
    assert not (tmp_path / "t").exists()
    stats = SourceStats(str(link))
    assert list(iter_documents(SourceConfig(location=str(link)), stats, on_error="skip")) == []
    assert stats.bad_files == 1 and [f["path"] for f in stats.files] == [str(link)]  # not corp1x.jsonl
