"""QA training answers not at their `answer_start` are said, not only counted.

`qa_example` skips a training answer whose text the context does not hold at its offset (and drops a
question left with none), as documented. That was counted in results.jsonl's `counts` and said nowhere:
`eval --check` printed "train 94" of a 95-row file and `eval` the score, so a file whose offsets were off
trained on part of its questions without a word. The note is now said by both, as the other split notes.
"""

from __future__ import annotations

from tests.eval.fixtures import model_folder, run_cli, write_jsonl, write_task_file


def _rows(n: int, off: set[int]) -> list[dict]:
    """SQuAD-style rows; the answer_start of the rows in `off` points one character early."""
    rows = []
    for i in range(n):
        city = ("Paris", "Lyon", "Rome", "Oslo")[i % 4]
        context = f"Note {i}: person {i} lives in {city} and works there."
        start = context.index(city) - (1 if i in off else 0)
        rows.append({"question": f"Where does person {i} live?", "context": context,
                     "answers": {"text": [city], "answer_start": [start]}})  # fmt: skip
    return rows


def _check(tmp_path, capsys, off: set[int]) -> str:
    data = {"train": write_jsonl(tmp_path / "train.jsonl", _rows(40, off)),
            "validation": write_jsonl(tmp_path / "dev.jsonl", _rows(6, set())),
            "test": write_jsonl(tmp_path / "test.jsonl", _rows(10, set())[::-1])}  # fmt: skip
    task = write_task_file(tmp_path, name="where", family="qa", data=data, allow_overlap=True, max_length=128, options={"stride": 32},
                           finetune={"max_steps": 1, "batch_size": 2, "micro_batch_size": 2})  # fmt: skip
    argv = ["eval", str(model_folder(tmp_path / "model")), "--task-file", str(task)]
    code, out, err = run_cli(
        [*argv, "--lrs", "1e-4", "--seeds", "0", "--out", str(tmp_path / "e"), "--check"], capsys
    )
    assert code in (0, None), err
    return out


def test_skipped_training_answers_are_noted_by_the_check(tmp_path, capsys):
    out = _check(tmp_path, capsys, off={3, 7})
    notes = [line.strip() for line in out.splitlines() if line.strip().startswith("note:")]
    assert notes == [
        "note: 2 training answers skipped: the context does not hold the answer's text at its answer_start; "
        "2 questions left without one are not trained on; answer_start is the answer's 0-based character "
        "offset in the context"
    ], out


def test_answers_at_their_offsets_get_no_note(tmp_path, capsys):
    out = _check(tmp_path, capsys, off=set())
    assert "skipped" not in out, out
