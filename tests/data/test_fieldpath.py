"""A dotted `#text_field=meta.text` reads text nested in objects: JSON lines, parquet struct columns and hub
records (`data/fieldpath.py`); it was refused as "has no field 'meta.text'". Where the path stops, the line
names what is there instead."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from encoderlab.data.hub import HUB_DATA_ENV
from encoderlab.data.sources import SourceConfig, iter_documents
from encoderlab.errors import UserError

ROWS = [
    {"id": "a", "meta": {"text": "alpha beta", "n": 1}},
    {"id": "b", "meta": None},
    {"id": "c", "meta": {"text": "gamma", "n": 3}},
]


def _texts(location: str, field: str = "meta.text", **kw) -> list[str]:
    cfg = SourceConfig(location=location, text_field=field)
    return [d.text for d in iter_documents(cfg, **kw)]


def _both_kinds(folder, stem: str, rows: list[dict]):
    """`rows` as STEM.jsonl and STEM.parquet in `folder`, which it returns."""
    (folder / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), folder / f"{stem}.parquet")
    return folder


@pytest.fixture
def files(tmp_path):
    return _both_kinds(tmp_path, "n", ROWS)


@pytest.mark.parametrize("name", ["n.jsonl", "n.parquet"])
def test_a_dotted_text_field_reads_the_nested_text_and_a_null_object_is_an_empty_document(files, name):
    assert _texts(str(files / name)) == ["alpha beta", "gamma"]  # the null object: an empty document, dropped


@pytest.mark.parametrize(
    ("name", "field", "message"),
    [
        (
            "n.jsonl",
            "meta.body",
            r"n.jsonl:1 has no field 'meta.body' \(fields of meta: text, n\); .*text_field=meta.text",
        ),
        (
            "n.parquet",
            "meta.body",
            r"n.parquet has no column 'meta.body' \(fields of meta: text, n\); .*text_field=meta.text",
        ),
        ("n.jsonl", "id.text", r"n.jsonl:1 has no field 'id.text' \(id is str, not an object\)"),
        ("n.parquet", "id.text", r"n.parquet has no column 'id.text' \(id is string, not an object\)"),
        ("n.jsonl", "meta.n", r"n.jsonl:1 has no string field 'meta.n' \(meta.n is int\)"),
        ("n.parquet", "meta.n", r"n.parquet has no string column 'meta.n' \(meta.n is int64\)"),
        (
            "n.jsonl",
            "meta",
            r"n.jsonl:1 has no string field 'meta' \(meta is an object\); .*text_field=meta.text",
        ),
        (
            "n.parquet",
            "meta",
            r"n.parquet has no string column 'meta' \(meta is struct.*text_field=meta.text",
        ),
    ],
)
def test_a_path_that_stops_or_ends_on_no_text_names_what_is_there(files, name, field, message):
    with pytest.raises(UserError, match=message):
        _texts(str(files / name), field)


def test_a_key_holding_a_dot_reads_as_it_did(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps({"meta.text": "flat", "meta": {"text": "nested"}}) + "\n")
    assert _texts(str(tmp_path / "d.jsonl")) == ["flat"]


def test_a_hub_dataset_s_nested_text_field_is_read(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "acme" / "nested" / "data"
    repo.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(ROWS), repo / "train-00000-of-00001.parquet")
    monkeypatch.setenv(HUB_DATA_ENV, str(tmp_path / "hub"))
    assert _texts("hf:acme/nested") == ["alpha beta", "gamma"]  # the null object: an empty document, dropped
    with pytest.raises(
        UserError, match=r"hub dataset 'acme/nested' has no field 'meta.body' \(fields of meta: text, n\)"
    ):
        _texts("hf:acme/nested", "meta.body")


def test_a_dotted_text_field_that_stops_is_one_line_naming_the_field_there(files, capsys, monkeypatch):
    from tests.reliability.test_hostile_inputs import assert_refused_unchanged

    assert_refused_unchanged(
        files,
        "source-text-field-path-stops",
        "data tokenizer --source {w}/n.jsonl#text_field=meta.body --vocab-size 300 --out {w}/t",
        r"n.jsonl:1 has no field 'meta.body' \(fields of meta: text, n\)",
        capsys,
        monkeypatch,
    )


LISTED = [  # MLDR's layout (`positive_passages`: a list of {docid, text}); an empty list, a null list
    {"id": "q1", "passages": [{"docid": "d1", "text": "first passage"}, {"docid": "d2", "text": "second"}]},
    {"id": "q2", "passages": []},
    {"id": "q3", "passages": None},
    {"id": "q4", "passages": [{"docid": "d4", "text": "only one"}]},
]


@pytest.fixture
def listed(tmp_path):
    return _both_kinds(tmp_path, "l", LISTED)


@pytest.mark.parametrize("name", ["l.jsonl", "l.parquet"])
def test_an_index_segment_enters_a_list_and_a_list_too_short_is_an_empty_document(listed, name):
    # was: refused as "passages is list, not an object", with no path that reads the text
    assert _texts(str(listed / name), "passages.0.text") == ["first passage", "only one"]
    assert _texts(str(listed / name), "passages.1.text") == ["second"]


def test_an_index_segment_enters_a_parquet_list_of_strings_and_a_large_list(tmp_path):
    table = pa.table(
        {
            "answers": pa.array([["a one", "a two"], [], None], pa.list_(pa.string())),
            "big": pa.array([["b"], ["c"], []], pa.large_list(pa.string())),
        }
    )
    pq.write_table(table, tmp_path / "s.parquet")
    assert _texts(str(tmp_path / "s.parquet"), "answers.1") == ["a two"]
    assert _texts(str(tmp_path / "s.parquet"), "big.0") == ["b", "c"]
    with pytest.raises(
        UserError, match=r"no string column 'answers' \(answers is list.*text_field=answers.0'"
    ):
        _texts(str(tmp_path / "s.parquet"), "answers")


def test_a_json_line_s_list_of_strings_named_whole_is_refused_naming_its_first_element(tmp_path):
    """SQuAD's `answers.text` (a list) was "is list; fix or remove it", naming no path that reads it."""
    (tmp_path / "q.jsonl").write_text(json.dumps({"answers": {"text": ["Denver Broncos"]}}) + "\n")
    assert _texts(str(tmp_path / "q.jsonl"), "answers.text.0") == ["Denver Broncos"]
    with pytest.raises(
        UserError,
        match=r"has no string field 'answers.text' \(answers.text is a list, entered by index\); .*"
        r"text_field=answers.text.0'",
    ):
        _texts(str(tmp_path / "q.jsonl"), "answers.text")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "l.jsonl",
            r"l.jsonl:1 has no field 'passages.text' \(passages is a list, entered by index: passages.0 is its "
            r"first element\); .*text_field=passages.0.text'",
        ),
        (
            "l.parquet",
            r"l.parquet has no column 'passages.text' \(passages is a list, entered by index: passages.0 is "
            r"its first element\); .*text_field=passages.0.text'",  # the path's own field, not the first
        ),
    ],
)
def test_a_list_met_by_a_name_is_refused_naming_the_index_path(listed, name, message):
    with pytest.raises(UserError, match=message):
        _texts(str(listed / name), "passages.text")


def test_a_hub_dataset_s_list_is_entered_by_index(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "acme" / "listed" / "data"
    repo.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(LISTED), repo / "train-00000-of-00001.parquet")
    monkeypatch.setenv(HUB_DATA_ENV, str(tmp_path / "hub"))
    assert _texts("hf:acme/listed", "passages.0.text") == ["first passage", "only one"]


@pytest.mark.parametrize("name", ["l.jsonl", "l.parquet"])
def test_a_segment_of_other_digits_is_a_name_not_an_index(listed, name):
    """`passages.²` (a superscript: `str.isdigit`, not a number `int` reads) where a list stands was a
    ValueError traceback; it is a list met by a name, refused naming the index path."""
    with pytest.raises(
        UserError, match=r"passages is a list, entered by index: passages.0 is its first element"
    ):
        _texts(str(listed / name), "passages.²")


IDS_FIRST = [{"id": "q1", "passages": [{"docid": "doc-0001-of-a-long-id", "title": "T", "text": "hi"}]}]


@pytest.mark.parametrize("name", ["i.jsonl", "i.parquet"])
@pytest.mark.parametrize(
    ("path", "suggested"),
    [
        ("passages.body", "passages.0.text"),  # no such field: the one named `text`
        ("passages.title", "passages.0.title"),  # the field the path names, entered by index
        ("passages", "passages.0.text"),  # the list itself
    ],
)
def test_a_list_s_fix_names_the_text_in_its_element_not_its_first_or_longest_string(
    tmp_path, name, path, suggested
):
    """Was `passages.0.docid` for each: the longest value of the first element (JSON lines) or the first
    string field in file order (parquet), an id where the element holds a `text`."""
    _both_kinds(tmp_path, "i", IDS_FIRST)
    with pytest.raises(UserError, match=rf"\); .*text_field={suggested}' "):
        _texts(str(tmp_path / name), path)


@pytest.mark.parametrize("name", ["u.jsonl", "u.parquet"])
def test_a_list_whose_element_holds_no_text_field_lists_its_string_fields_to_choose_from(tmp_path, name):
    _both_kinds(tmp_path, "u", [{"passages": [{"docid": "d1", "title": "A title", "n": 1}]}])
    with pytest.raises(UserError) as exc:
        _texts(str(tmp_path / name), "passages.body")
    problem, fix = str(exc.value).split("; name the text field", 1)
    assert problem.endswith(
        ("string fields of passages.0: docid, title)", "string fields of passages.0: title, docid)")
    )
    assert "text_field=passages.0.FIELD'" in fix


def test_a_json_list_s_fix_reads_the_first_element_that_holds_text(tmp_path):
    """A null first element named no field: the fix was `text_field=FIELD`."""
    (tmp_path / "n.jsonl").write_text(json.dumps({"passages": [None, {"docid": "d", "text": "x"}]}) + "\n")
    with pytest.raises(UserError, match=r"text_field=passages.0.text'"):
        _texts(str(tmp_path / "n.jsonl"), "passages.body")


def _hub(tmp_path, monkeypatch, name: str, rows: list[dict]) -> str:
    """`rows` as the one parquet data file of the mirrored hub dataset `acme/NAME`; its source."""
    repo = tmp_path / "hub" / "acme" / name / "data"
    repo.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), repo / "train-00000-of-00001.parquet")
    monkeypatch.setenv(HUB_DATA_ENV, str(tmp_path / "hub"))
    return f"hf:acme/{name}"


@pytest.mark.parametrize(
    ("path", "problem", "suggested"),
    [
        ("passages.body", "has no field 'passages.body' (passages is a list", "passages.0.text"),
        ("passages.title", "has no field 'passages.title' (passages is a list", "passages.0.title"),
        ("passages", "field 'passages' holds list, not text (passages is a list", "passages.0.text"),
    ],
)
def test_a_hub_record_s_list_names_the_index_path_to_its_text(
    tmp_path, monkeypatch, path, problem, suggested
):
    """Was "...; fix #text_field" alone, where JSON lines and parquet name the path (`fieldpath.list_guess`)."""
    source = _hub(tmp_path, monkeypatch, "ids", IDS_FIRST)
    with pytest.raises(UserError) as exc:
        _texts(source, path)
    line = str(exc.value)
    assert line.startswith(
        f"hub dataset 'acme/ids' {problem}, entered by index: passages.0 is its first element"
    )
    assert line.endswith(f"; fix #text_field, e.g. #text_field={suggested}")


def test_a_hub_record_s_list_whose_element_holds_no_text_field_lists_its_string_fields(tmp_path, monkeypatch):
    source = _hub(
        tmp_path, monkeypatch, "untexted", [{"passages": [{"docid": "d1", "title": "A title", "n": 1}]}]
    )
    with pytest.raises(UserError) as exc:
        _texts(source, "passages.body")
    problem, fix = str(exc.value).rsplit("; fix #text_field", 1)
    assert problem.endswith(("passages.0: docid, title)", "passages.0: title, docid)")), problem
    assert fix == ", e.g. #text_field=passages.0.FIELD"
