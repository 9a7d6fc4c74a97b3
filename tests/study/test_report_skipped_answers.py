"""The study report carries the note `eval` prints for QA training answers skipped at a wrong `answer_start`.

`eval` and `eval --check` say, beside a QA task's score, how many training answers the context does not hold at
their `answer_start` (skipped: the model trained on part of the questions). A study evaluating such a task said
nothing of it: its report showed the score alone. The report now lists the note once a task under "Skipped
training answers", from the counts the eval nodes' records hold, not the task's data read again. The study, its
nodes and the model are real.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fake_study import tiny_corpus
from tests.eval.fixtures import model_folder, qa_offset_task

from encoderlab.eval.tasks.splits import skipped_answers_note
from encoderlab.study import real_backend
from encoderlab.study.files import load_study_file
from encoderlab.study.reportpage import md_text
from encoderlab.study.runner import run_study


def _report(root: Path, off: set[int]) -> str:
    """report.md of a study evaluating a model folder as is on the QA task `qa_offset_task(off)`."""
    tiny_corpus(root / "corpus.jsonl", 40)
    qa_offset_task(root, off)
    model_folder(root / "model", seed=0)
    shutil.copytree(root / "model", root / "tok")
    (root / "s.yaml").write_text(
        "name: mine\nsize: tiny\nseq_len: 32\n"
        "data: [{name: main, corpus: [corpus.jsonl], tokenizer: tok, decontaminate: false}]\n"
        f"runs: [{{name: start, init: {root / 'model'}}}]\n"
        "eval: {suite: null, task_files: [task.yaml], lrs: [0.002], seeds: [0], max_steps: 1}\n"
        "baseline: start\nclaims: []\n"
    )
    run_study(load_study_file(root / "s.yaml"), root / "out", real_backend(), progress=False)
    return (root / "out" / "report" / "report.md").read_text()


def test_the_report_notes_a_qa_task_s_skipped_training_answers(tmp_path):
    off = {3, 7}
    report = _report(tmp_path, off)
    # one answer a question: each skipped answer leaves its question without one
    note = skipped_answers_note({"skipped_answers": len(off), "skipped_questions": len(off)})
    expected = f"## Skipped training answers\n\n- {md_text(f'where: {note}')}\n"
    assert expected in report, report  # was: not there


def test_a_qa_task_whose_answers_are_at_their_offsets_gets_no_note(tmp_path):
    assert "Skipped training answers" not in _report(tmp_path, off=set())
