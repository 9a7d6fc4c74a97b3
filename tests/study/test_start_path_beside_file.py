"""A study file's start model path that is not there is named from the file's folder, where the study
reads it: the check named it from the working folder ("/ holds no 'models'"), while the tokenizer's
check of the same file already looked beside the file."""

from __future__ import annotations

from fake_study import tiny_corpus
from tests.eval.fixtures import write_task_file
from tests.reliability.test_hostile_inputs import assert_one_line, cli


def test_a_missing_start_model_path_is_named_beside_the_study_file(tmp_path, capsys, monkeypatch):
    folder, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (folder / "models" / "mine").mkdir(parents=True)
    elsewhere.mkdir()
    tiny_corpus(folder / "corpus.jsonl", 50)
    rows = [f"film {i} was {'good' if i % 2 else 'bad'},{'good' if i % 2 else 'bad'}\n" for i in range(30)]
    (folder / "train.csv").write_text("text,label\n" + "".join(rows[:20]))
    (folder / "test.csv").write_text("text,label\n" + "".join(rows[20:]))
    write_task_file(
        folder, "reviews.yaml", name="reviews", family="sc", data={"train": "train.csv", "test": "test.csv"}
    )
    study = folder / "study.yaml"
    study.write_text(
        "name: mine\nsize: tiny\nsteps: 20\nseq_len: 32\nmicro_batch: 2\n"
        "data: [{name: main, corpus: [corpus.jsonl], vocab_size: 300}]\n"
        "runs:\n  - {name: mlm, recipe: pfs-mlm}\n  - {name: asis, init: ./models/mien}\n"
        "eval: {suite: null, task_files: [reviews.yaml], lrs: [5.0e-4], seeds: [0], max_steps: 2}\n"
        "baseline: mlm\n"
    )
    monkeypatch.chdir(elsewhere)  # the working folder holds no models/: the line must not name it
    code, err = cli(["study", "plan", study], capsys)
    assert_one_line(
        code,
        err,
        rf"study mine, run asis: model source './models/mien' does not exist: {folder / 'models'} holds no "
        r"'mien' \(mine\?\); pass a model or run folder",
    )
