"""QA training answers not at their `answer_start` are said, not only counted.

`qa_example` skips a training answer whose text the context does not hold at its offset (and drops a
question left with none), as documented. That was counted in results.jsonl's `counts` and said nowhere:
`eval --check` printed "train 94" of a 95-row file and `eval` the score, so a file whose offsets were off
trained on part of its questions without a word. The note is now said by both, as the other split notes.
"""

from __future__ import annotations

from tests.eval.fixtures import model_folder, qa_offset_task, run_cli

NOTE = (
    "2 training answers skipped: the context does not hold the answer's text at its answer_start; 2 questions "
    "left without one are not trained on; answer_start is the answer's 0-based character offset in the context"
)


def _eval(tmp_path, capsys, off: set[int], *flags: str) -> str:
    task = qa_offset_task(tmp_path, off)
    argv = ["eval", str(model_folder(tmp_path / "model")), "--task-file", str(task)]
    code, out, err = run_cli(
        [*argv, "--lrs", "1e-4", "--seeds", "0", "--out", str(tmp_path / "e"), *flags], capsys
    )
    assert code in (0, None), err
    return out


def _check(tmp_path, capsys, off: set[int]) -> str:
    return _eval(tmp_path, capsys, off, "--check")


def test_skipped_training_answers_are_noted_by_the_check(tmp_path, capsys):
    out = _check(tmp_path, capsys, off={3, 7})
    notes = [line.strip() for line in out.splitlines() if line.strip().startswith("note:")]
    assert notes == [f"note: {NOTE}"], out


def test_answers_at_their_offsets_get_no_note(tmp_path, capsys):
    out = _check(tmp_path, capsys, off=set())
    assert "skipped" not in out, out


def test_the_summary_md_an_eval_writes_carries_the_note_it_prints(tmp_path, capsys):
    """`eval` printed the note beside the score; the summary.md it wrote, read later in place of the output,
    did not. It now lists it under "Skipped training answers", from the records' counts."""
    out = _eval(tmp_path, capsys, off={3, 7})
    assert f"note: {NOTE}" in [line.strip() for line in out.splitlines()], out
    summary = (tmp_path / "e" / "summary.md").read_text()
    assert f"**Skipped training answers**:\n\n- where: {NOTE}\n" in summary, summary  # was: not there
