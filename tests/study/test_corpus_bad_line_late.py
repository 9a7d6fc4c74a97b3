"""A bad record past the first of a study's local corpus is refused before the study folder is made.

The start checks read each local corpus file's first document (`check_first_documents`), so a line cut short
further on passed `study plan`, and `study run` made the study folder (study.json, graph.json, nodes/) before
its prepare node met the line. The checks now read every document, streamed (`whole=True`).
"""

from __future__ import annotations

from fake_study import tiny_corpus
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import MINE, polarity_task_file


def test_a_bad_line_late_in_a_corpus_is_one_line_and_no_study_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 300)
    lines = corpus.read_text().splitlines(keepends=True)
    lines[250] = '{"id": "250", "text": "cut short\n'  # line 251 of 300
    corpus.write_text("".join(lines))
    polarity_task_file(tmp_path)
    (tmp_path / "my-study.yaml").write_text(MINE)
    before = world_state(tmp_path)
    for argv in (
        ["plan", tmp_path / "my-study.yaml"],
        ["run", tmp_path / "my-study.yaml", "--out", tmp_path / "s"],
    ):
        code, err = cli(["study", *argv], capsys)
        assert_one_line(
            code,
            err,
            rf"^encoderlab: error: study my-study, dataset main: {corpus}:251 is not valid JSON \(.*\); fix or "
            r"remove it$",
        )
        assert_unchanged(before)  # was: s/ with study.json, graph.json and nodes/prepare/
