"""A folder prepared from local files (`data prepare --source ...`) matched against a study's corpus entries.

Before, the match compared locations only, each resolved from the working directory of the check:
a folder prepared from `c.jsonl#text_field=title` was accepted for a study reading `c.jsonl#text_field=content`
(the study then trained on the titles, in silence); a folder prepared from the glob `parts/*.jsonl` was
refused for a study naming the same glob, even run from the same folder; and a folder prepared from a
relative path was refused once the study ran from another directory."""

from __future__ import annotations

import json

import pytest

from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig, parse_source
from encoderlab.data.tokenizer import train_tokenizer
from encoderlab.errors import UserError
from encoderlab.study.prepared import check_corpus


def _write(path, n=12):
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"content": f"body number {i} of the corpus", "title": f"title {i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    _write(root / "c.jsonl")
    _write(root / "parts" / "a.jsonl")
    _write(root / "parts" / "b.jsonl")
    tok = root / "tok"
    train_tokenizer(
        SourceConfig(location=str(root / "c.jsonl"), text_field="content"), 300, tok, progress=False
    )
    return root


def _prepared(project, out, *sources):
    """Prepare `sources` as a user would, from the project's folder (relative locations)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        cfg = PrepareConfig(sources=tuple(map(parse_source, sources)), tokenizer="tok", decontaminate=())
        return read_meta(prepare(cfg, out, progress=False, workers=1))


def test_another_text_field_or_weight_is_another_corpus(project, tmp_path):
    meta = _prepared(project, tmp_path / "titles", "c.jsonl#text_field=title")
    with pytest.raises(
        UserError,
        match=r"^dataset main: .*titles was prepared from c.jsonl#text_field=title, not from its corpus",
    ):
        check_corpus(meta, (f"{project}/c.jsonl#text_field=content",), "main", tmp_path / "titles")
    check_corpus(meta, (f"{project}/c.jsonl#text_field=title",), "main", tmp_path / "titles")
    mixed = _prepared(
        project, tmp_path / "mixed", "c.jsonl#text_field=title", "parts#text_field=title,weight=3"
    )
    with pytest.raises(UserError, match="not from its corpus"):
        check_corpus(
            mixed, (f"{project}/c.jsonl#text_field=title", f"{project}/parts#text_field=title"), "main", "m"
        )
    # the same shares written with other numbers are the same mixture
    check_corpus(
        mixed,
        (f"{project}/c.jsonl#text_field=title,weight=2", f"{project}/parts#text_field=title,weight=6"),
        "d",
        "m",
    )


def test_relative_locations_and_globs_are_matched_where_they_were_read(project, tmp_path, monkeypatch):
    meta = _prepared(project, tmp_path / "glob", "parts/*.jsonl#text_field=content")
    monkeypatch.chdir(project)
    check_corpus(meta, (f"{project}/parts/*.jsonl#text_field=content",), "main", tmp_path / "glob")
    plain = _prepared(project, tmp_path / "plain", "c.jsonl#text_field=content")
    monkeypatch.chdir(tmp_path)  # a study run from elsewhere: the recorded place is the project's
    check_corpus(plain, (f"{project}/c.jsonl#text_field=content",), "main", tmp_path / "plain")
    check_corpus(meta, (f"{project}/parts/*.jsonl#text_field=content",), "main", tmp_path / "glob")
    (tmp_path / "c.jsonl").write_text((project / "c.jsonl").read_text())
    with pytest.raises(UserError, match="not from its corpus"):  # a copy elsewhere is another location
        check_corpus(plain, (f"{tmp_path}/c.jsonl#text_field=content",), "main", tmp_path / "plain")
