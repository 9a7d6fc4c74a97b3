"""A task whose `max_length` is more than the evaluated model's positions is refused up front, in one line
naming the task, both lengths and the fix, by the run and by `eval --check` (`eval.taskruns.check_positions`).

Before, `eval --check` printed the task as runnable and the run failed mid-fine-tuning, with a traceback:
our Encoder's "sequence length N exceeds max_seq_len M", a Hugging Face model's index error past its
position table (a CUDA device-side assert on a GPU). The models here are the tests' tiny ones: ours of
256 positions (`fixtures.model_folder`) and a Hugging Face BERT folder of 64; one text of the task is
longer than the model's positions, so the old run reached the failure.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fixtures import model_folder, run_cli, write_jsonl, write_task_file
from tests.eval.conftest import vocabulary_texts
from tests.model.model_fixtures import bert_config, roberta_config, save_tiny_tokenizer
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.errors import UserError
from encoderlab.eval.spec import MODEL_LENGTH_FRACTION
from encoderlab.eval.taskruns import check_positions
from encoderlab.eval.tasks import TASKS
from encoderlab.eval.tasks.registry import BUILTIN
from encoderlab.train.start import scratch_positions

pytestmark = pytest.mark.usefixtures("isolated_tasks")

FINETUNE = {"epochs": 1, "max_steps": None, "batch_size": 4, "micro_batch_size": 4}


def _task_file(folder: Path, words: list[str], longest: int, **extra) -> Path:
    """A two-class task file whose first training text is `longest` words, the others 10."""
    rng = random.Random(0)

    def rows(n: int) -> list[dict]:
        size = [longest if split_first else 10 for split_first in [True] + [False] * (n - 1)]
        return [{"text": " ".join(rng.choices(words, k=k)), "label": "ab"[i % 2]} for i, k in enumerate(size)]

    data = {
        split: write_jsonl(folder / f"{split}.jsonl", rows(n))
        for split, n in (("train", 8), ("validation", 4), ("test", 4))
    }
    return write_task_file(
        folder, name="long", family="sc", data=data, finetune=FINETUNE, allow_overlap=True, **extra
    )


def _refused(argv: list[str], out: Path, capsys, how: str = "--check") -> str:
    """The one line `eval --check` (or the run) gives, --out never made; the other gives the same."""
    flags = {"--check": ["--check"], "run": ["--device", "cpu"]}
    code, printed, err = run_cli([*argv, *flags[how]], capsys)
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, (code, printed, err)
    assert not out.exists()
    other = flags["run" if how == "--check" else "--check"]
    assert run_cli([*argv, *other], capsys)[1:] == ("", err)  # the run trains nothing
    assert not out.exists()
    return err.strip()


@pytest.mark.parametrize("how", ["--check", "run"])
def test_a_task_file_longer_than_our_models_positions_is_refused_by_the_run_and_the_check(
    tmp_path, capsys, how
):
    model = model_folder(tmp_path / "m")  # max_seq_len 256
    path = _task_file(tmp_path, " ".join(vocabulary_texts()).split(), longest=400)  # the default 512
    out = tmp_path / "e"
    argv = ["eval", str(model), "--task-file", str(path), "--lrs", "1e-4", "--seeds", "0", "--out", str(out)]
    line = _refused(argv, out, capsys, how)
    assert line == (
        "encoderlab: error: task long: max_length 512 is more than the model's 256 positions; set "
        "`max_length:` to at most 256 in its task file, or null for 0.99 x the model's"
    )
    assert_printed_as_documented("task-max-length-over-positions", line, tmp_path)


def test_a_task_file_longer_than_a_hugging_face_folders_positions_is_refused(tmp_path, capsys):
    from transformers import BertForMaskedLM

    folder = tmp_path / "bert"
    BertForMaskedLM(bert_config()).save_pretrained(str(folder))  # 64 positions
    tok = save_tiny_tokenizer(folder)
    capsys.readouterr()  # the save's progress bar
    words = [w for w in tok.get_vocab() if not w.startswith("[")]  # its word tokens, t5 .. t96
    path = _task_file(tmp_path, words, longest=100, max_length=128)
    out = tmp_path / "e"
    argv = ["eval", str(folder), "--task-file", str(path), "--lrs", "1e-4", "--seeds", "0", "--out", str(out)]
    assert _refused(argv, out, capsys).endswith(
        "task long: max_length 128 is more than the model's 64 positions; set `max_length:` to at most 64 "
        "in its task file, or null for 0.99 x the model's"
    )


@pytest.mark.parametrize("max_length", [256, None], ids=["the-positions", "the-models"])
def test_a_task_file_within_the_positions_is_checked_as_before(tmp_path, capsys, max_length):
    model = model_folder(tmp_path / "m")
    path = _task_file(tmp_path, " ".join(vocabulary_texts()).split(), longest=400, max_length=max_length)
    argv = ["eval", str(model), "--task-file", str(path), "--check", "--out", str(tmp_path / "e")]
    code, printed, err = run_cli(argv, capsys)
    length = max_length or round(MODEL_LENGTH_FRACTION * 256)
    assert code == 0 and f"metric accuracy, max_length {length}" in printed, (printed, err)


def test_a_built_in_task_names_a_larger_model_as_its_fix():
    task = next(t for t in TASKS.values() if t.name in BUILTIN and t.max_length is not None)
    with pytest.raises(UserError, match=r"evaluate a model of at least \d+ positions, or leave the task out"):
        check_positions(task, task.max_length - 1)
    check_positions(task, task.max_length)  # as many positions as it reads: runs


def test_built_in_tasks_fit_every_model_built_from_scratch():
    """A scratch model has at least 2,048 positions (`train.start.scratch_positions`): no built-in task is
    refused on it."""
    for name in BUILTIN:
        check_positions(TASKS[name], scratch_positions(1))


def _roberta_folder(tmp_path: Path):
    """A RoBERTa folder of 66 position rows, pad id 0: positions 1..65, so 65 usable."""
    from transformers import RobertaForMaskedLM

    folder = tmp_path / "roberta"
    RobertaForMaskedLM(roberta_config()).save_pretrained(str(folder))
    tok = save_tiny_tokenizer(folder)
    return folder, [w for w in tok.get_vocab() if not w.startswith("[")]


def test_a_roberta_folder_counts_the_rows_its_offset_leaves_usable(tmp_path, capsys):
    folder, words = _roberta_folder(tmp_path)
    capsys.readouterr()
    path = _task_file(tmp_path, words, longest=100, max_length=66)  # its table's rows: one too many
    out = tmp_path / "e"
    argv = ["eval", str(folder), "--task-file", str(path), "--lrs", "1e-4", "--seeds", "0", "--out", str(out)]
    assert _refused(argv, out, capsys).endswith(
        "task long: max_length 66 is more than the model's 65 positions; "
        "set `max_length:` to at most 65 in its task file, or null for "
        "0.99 x the model's"
    )


def test_a_roberta_folder_runs_a_task_at_its_usable_positions(tmp_path, capsys):
    folder, words = _roberta_folder(tmp_path)
    path = _task_file(tmp_path, words, longest=100, max_length=65)  # truncation fills every position
    out = tmp_path / "e"
    argv = ["eval", str(folder), "--task-file", str(path), "--lrs", "1e-4", "--seeds", "0", "--out", str(out)]
    code, printed, err = run_cli([*argv, "--device", "cpu"], capsys)
    assert code == 0, err
    assert (out / "summary.json").is_file()
