"""A study corpus without its text field is named in the study file's syntax, not `--source`'s.

Before, the line's fix was `--source '/…/c.jsonl#text_field=body'`, a flag a study has none of, naming
the file read rather than the corpus entry that reads it (a glob, a folder); a record past the first
(refused by the prepare node, not before the study) also offered `--on-error skip`, which `study run`
does not take."""

from __future__ import annotations

import pytest
from tests.data.corpus_fixtures import write_jsonl
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.study.study_fixtures import field_hint_study

from encoderlab.errors import UserError
from encoderlab.study.checks import check_sources
from encoderlab.study.files import load_study_file


@pytest.mark.parametrize(
    "entry, named",
    [
        ("parts/*.jsonl#weight=2", "parts/*.jsonl#weight=2,text_field=body"),
        ("parts#text_field=title", "parts#text_field=body"),
    ],
)
def test_the_hint_names_the_corpus_entry_in_the_study_files_syntax(tmp_path, entry, named):
    """The entry that reads the file (a glob, a folder), its options kept and its text_field replaced; as the
    study file writes it, relative to its folder (was the absolute path read)."""
    for name in ("a", "b"):
        write_jsonl(tmp_path / "parts" / f"{name}.jsonl", [{"id": "1", "body": "a longer text"}])
    spec = load_study_file(field_hint_study(tmp_path, [entry]))
    with pytest.raises(UserError) as err:
        check_sources(spec)
    line = str(err.value)
    assert line.startswith(f"study mini, dataset main: {tmp_path}/parts/")
    assert line.endswith(
        f"; name the text field in the study file's corpus entry, e.g. corpus: ['{named}'] "
        "(or fix the record)"
    ), line
    assert "--source" not in line


def test_a_later_record_without_the_field_is_named_so_by_the_prepare_node(tmp_path, capsys, monkeypatch):
    write_jsonl(
        tmp_path / "c.jsonl", [*({"text": f"words number {i} here"} for i in range(40)), {"body": "x"}]
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, err = cli(
        ["study", "run", field_hint_study(tmp_path, ["c.jsonl"]), "--out", tmp_path / "s"], capsys
    )
    assert_one_line(  # the study's progress bar (on the line before) aside
        code,
        err[err.index("encoderlab: error: ") :],
        r"c.jsonl:41 has no field 'text' \(fields: body\); name the text field in the study file's corpus "
        r"entry, e.g. corpus: \['c.jsonl#text_field=body'\] \(or fix the record\)$",
    )


def test_a_later_line_that_is_not_json_offers_no_on_error_flag(tmp_path, capsys, monkeypatch):
    """A hand-edited line past the first, cut in its middle: the prepare node said "fix or remove it, or pass
    --on-error skip to skip and count such input", a flag `study run` refuses as unknown."""
    write_jsonl(tmp_path / "c.jsonl", [{"text": f"words number {i} here"} for i in range(40)])
    with (tmp_path / "c.jsonl").open("a") as f:
        f.write('{"text": "cut in its mid\n')
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, err = cli(
        ["study", "run", field_hint_study(tmp_path, ["c.jsonl"]), "--out", tmp_path / "s"], capsys
    )
    line = err[err.index("encoderlab: error: ") :]
    assert_one_line(code, line, r"c.jsonl:41 is not valid JSON \(.*\); fix or remove it$")
    assert "--on-error" not in line


def test_a_file_read_by_two_entries_is_refused_in_the_study_files_terms_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    """A corpus folder beside an entry of a file in it: the prepare node refused it after the study folder
    was made, its fix "name each file in one --source only" (a flag a study has none of)."""
    write_jsonl(tmp_path / "parts" / "a.jsonl", [{"text": f"words number {i} here"} for i in range(40)])
    write_jsonl(tmp_path / "parts" / "b.jsonl", [{"text": f"other words {i} there"} for i in range(40)])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    study = field_hint_study(tmp_path, ["parts", "parts/a.jsonl"])
    code, err = cli(["study", "run", study, "--out", tmp_path / "s"], capsys)
    folder, file = tmp_path / "parts", tmp_path / "parts" / "a.jsonl"
    assert_one_line(
        code,
        err,
        rf"^encoderlab: error: study mini, dataset main: sources '{folder}' and '{file}' both read {file}: .*; keep "
        r"one of the two entries in the dataset's corpus in the study file \(beside a folder's or a glob's entry, "
        r"which reads every file it holds, drop the file's\)$",
    )
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("entry", ["parts", "parts/*.csv"])
def test_a_corpus_entry_holding_no_text_file_names_the_entry_in_its_fix(tmp_path, entry):
    """Its fix said "point --source at text files", a flag a study has none of."""
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "README.md").write_text("notes\n")
    (tmp_path / "parts" / "x.csv").write_text("a,b\n")
    with pytest.raises(UserError) as err:
        check_sources(load_study_file(field_hint_study(tmp_path, [entry])))
    assert str(err.value).startswith(f"study mini, dataset main: '{tmp_path}/{entry}' holds no .txt"), (
        err.value
    )
    assert str(err.value).endswith("; point the dataset's corpus entry in the study file at text files"), (
        err.value
    )
