"""Task files a new user wrote from docs/evaluation.md (an audit of one per family: pair-sc, regression,
multi-label sc, tc with pre-split words, qa, ir): each mistake found is one line naming the field and
the fix, before anything is written."""

from __future__ import annotations

import json
import math

import pytest
from tests.eval.fixtures import model_folder, run_cli, sentiment_files, write_csv, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _ir_files(tmp_path) -> dict:
    for split, n in (("train", 30), ("test", 10)):
        rows = [{"query": f"query {split} {i}", "document": f"document about {split} {i}"} for i in range(n)]
        write_csv(tmp_path / f"{split}.csv", rows)
    return {"family": "ir", "data": {"train": "train.csv", "test": "test.csv"}, "max_length": 64}


def _refused_by_eval_and_check(argv: list, line: str, row: str, tmp_path, capsys) -> None:
    """`argv` (an eval into tmp_path/e) refused with the one line `line` (a regex), by eval and eval --check
    alike, as docs/errors.md's row `row` prints it, leaving no output folder."""
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        assert_one_line(code, err, line)
        assert_printed_as_documented(row, err, tmp_path)
        assert not (tmp_path / "e").exists()


def test_an_id_column_no_split_has_is_refused_not_dropped(tmp_path, capsys):
    # was: accepted, the ids silently hashes of the texts (optional columns are read where a split has them)
    spec = {**_ir_files(tmp_path), "columns": {"query_id": "qid"}}
    path = write_task_file(tmp_path, "task_id_column_missing.yaml", name="my-ir", **spec)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    _refused_by_eval_and_check(
        argv,
        rf"^encoderlab: error: task file {path}: columns.query_id: no split has column 'qid' \(train split, "
        r"train.csv: columns query, document\); name a column the data has, or leave query_id out of `columns:`$",
        "task-file-id-column-missing",
        tmp_path,
        capsys,
    )


def test_an_id_column_some_split_has_is_read(tmp_path):
    spec = _ir_files(tmp_path)
    rows = [{"query": f"query train {i}", "document": f"doc {i}", "qid": f"q{i}"} for i in range(30)]
    write_csv(tmp_path / "train.csv", rows)  # the test split has no qid: its ids are hashes, as before
    path = write_task_file(tmp_path, name="my-ir", **spec, columns={"query_id": "qid"})
    assert [t.name for t in load_task_files([str(path)])] == ["my-ir"]


def test_qa_answers_in_a_csv_cell_say_to_write_json_lines(tmp_path):
    # was: the shape SQuAD's answers must have, not that a CSV cell is one text, never a struct
    rows = []
    for i in range(20):
        context = f"the answer is word{i} here"
        answers = {"text": [f"word{i}"], "answer_start": [context.index(f"word{i}")]}
        rows.append({"question": f"what is it {i}?", "context": context, "answers": json.dumps(answers)})
    write_csv(tmp_path / "train.csv", rows)
    write_csv(tmp_path / "test.csv", [{**r, "question": r["question"] + " now"} for r in rows])
    data = {"train": "train.csv", "test": "test.csv"}
    path = write_task_file(tmp_path, name="my-qa", family="qa", data=data, allow_overlap=True)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value).startswith(f"task file {path}: train split, line ")
    assert str(err.value).endswith("; a CSV or TSV cell is one text: write the rows in JSON lines or parquet")


@pytest.mark.parametrize(
    "metric, fix",
    [
        ("pearson", "pearson scores a regression: add `options: {regression: true}` if the labels are numbers"),
        ("micro_f1", "micro_f1 scores a multi-label task: add `options: {multilabel: true}` if each label cell is a list"),
        # was: "(qa's: if the task is qa, write `family: qa`)", to a GLUE user asking for MRPC's binary F1
        # then: "is not scored here; write macro_f1 ...": now it is, as `f1` (tests/eval/test_binary_f1.py)
        ("binary_f1", "binary_f1: the F1 of one class, as GLUE's MRPC and QQP report it, is `metric: f1` here"),
    ],
)  # fmt: skip
def test_a_metric_of_another_label_kind_names_its_option(tmp_path, metric, fix):
    # was: the task's metrics listed, the option that reports the one written left unsaid
    path = write_task_file(tmp_path, name="reviews", **sentiment_files(tmp_path), metric=metric)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: metric {metric!r} is not one of sc's: accuracy, macro_f1, weighted_f1, f1 ({fix})"
    )


def test_a_pair_template_without_a_and_b_names_the_template_field(tmp_path):
    # was: "task file ...: options: a pair template needs ...": a task file's template is no option
    spec = {
        **sentiment_files(tmp_path),
        "family": "pair-sc",
        "columns": {"text": "sentence", "text_pair": "other", "label": "polarity"},
    }
    path = write_task_file(tmp_path, name="pairs", **spec, template="{premise} / {hypothesis}")
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: template: a pair template needs exactly the fields {{a}} and {{b}}, "
        "got '{premise} / {hypothesis}'"
    )


@pytest.mark.parametrize("place", ["", "finetune."])
@pytest.mark.parametrize("key", ["learning_rate", "lr"])
def test_a_learning_rate_in_a_task_file_says_the_grid_sets_it(tmp_path, place, key):
    # was: "unknown fields learning_rate; valid: batch_size, ...", not that the LRs are `--lrs`
    spec = sentiment_files(tmp_path)
    spec = {**spec, "finetune": {key: 2e-5}} if place else {**spec, key: 2e-5}
    path = write_task_file(tmp_path, name="reviews", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: {place}{key}: a task file sets no learning rate, the grid does: `encoderlab eval MODEL "
        "--task-file FILE --lrs 1e-4 5e-4` (a study's `eval: {lrs: [...]}`); remove it"
    )


def test_an_lm_evaluation_harness_config_is_named_as_such(tmp_path):
    # was: "unknown fields dataset_path, doc_to_text, output_type, task; valid: ..."
    spec = {
        "task": "my-task",
        "dataset_path": "owner/data",
        "output_type": "multiple_choice",
        "doc_to_text": "{{q}}",
    }
    path = write_task_file(tmp_path, **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path} is an lm-evaluation-harness task config (it has `task:`, `dataset_path:`, "
        "`doc_to_text:`, `output_type:`), which encoderlab does not read: it fine-tunes on labelled examples; "
        "write `name`, `family`, `data` and `columns` (docs/evaluation.md, Your own tasks)"
    )


def test_check_gives_a_qa_epoch_schedules_steps_as_a_lower_bound_the_run_reaches(tmp_path, capsys):
    # was: "3 optimizer steps each" from the examples, where the run trained 4 on the contexts' windows
    rows = []
    for i in range(30):
        context = " ".join(["the red house by the green river"] * 3) + f" and the answer is w{i} here"
        answer = {"text": [f"w{i}"], "answer_start": [context.index(f" w{i} ") + 1]}
        rows.append({"question": f"what is it {i}?", "context": context, "answers": answer})
    for split, part in (("train", rows[:20]), ("test", rows[20:])):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
    finetune = {"max_steps": None, "epochs": 1, "batch_size": 5, "micro_batch_size": 5}
    data = {"train": "train.jsonl", "test": "test.jsonl", "validation_fraction": 0.25}
    options = {"stride": 16}
    path = write_task_file(
        tmp_path, name="qa", family="qa", data=data, options=options, max_length=48, finetune=finetune
    )
    argv = [
        "eval",
        str(model_folder(tmp_path / "model")),
        "--task-file",
        str(path),
        "--lrs",
        "1e-4",
        "--seeds",
        "0",
    ]
    code, printed, err = run_cli([*argv, "--out", str(tmp_path / "e"), "--check"], capsys)
    assert code == 0, err
    at_least = (
        "  fine-tuning: 1 run, at least 3 optimizer steps each (batch 5; trained on windows of the contexts"
    )
    assert at_least in printed, printed  # 15 training examples (5 cut for validation) in batches of 5
    code, _, err = run_cli([*argv, "--out", str(tmp_path / "e")], capsys)
    assert code == 0, err
    record = json.loads((tmp_path / "e" / "results.jsonl").read_text().splitlines()[0])
    assert record["steps"] > 3  # ceil(windows / 5): a context spans several windows


def test_tokens_and_tags_of_different_lengths_say_the_fix(tmp_path, capsys):
    # was: "a row has 3 tokens but 2 tags", the fix unsaid
    rows = [{"tokens": [f"w{i}", "b"], "tags": ["O", "B-X"]} for i in range(10)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "test.jsonl").write_text(json.dumps({"tokens": ["x", "y", "z"], "tags": ["O", "B-X"]}) + "\n")
    data = {"train": "train.jsonl", "test": "test.jsonl"}
    path = write_task_file(tmp_path, "task_tags_count.yaml", name="t", family="tc", data=data)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0"], capsys)
    assert_one_line(
        code,
        err,
        rf"^encoderlab: error: task file {path}: test split, line 1 of test.jsonl: a row has 3 tokens but 2 tags; "
        r"give each word one tag, in order \(tags\[i\] tags tokens\[i\]\)$",
    )
    assert_printed_as_documented("task-file-tc-tags-count", err, tmp_path)
    assert not (tmp_path / "e").exists()


def test_epochs_alone_run_an_epoch_schedule(tmp_path):
    # was: `finetune: {epochs: 3}` kept the task file's default 300 steps, the epochs read as nothing
    # (Hugging Face's Trainer counts `num_train_epochs` while `max_steps` is unset)
    path = write_task_file(tmp_path, name="s", **sentiment_files(tmp_path), finetune={"epochs": 3})
    (task,) = load_task_files([str(path)])
    assert (task.finetune.max_steps, task.finetune.epochs) == (None, 3)
    assert task.finetune.total_steps(40) == 3 * math.ceil(40 / task.finetune.batch_size)


def test_epochs_beside_max_steps_is_one_line(tmp_path, capsys):
    # was: accepted, max_steps deciding the run's length and epochs read as nothing, unsaid
    finetune = {"epochs": 3, "max_steps": 100}
    path = write_task_file(tmp_path, "lengths.yaml", name="s", **sentiment_files(tmp_path), finetune=finetune)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    _refused_by_eval_and_check(
        argv,
        rf"^encoderlab: error: task file {path}: finetune: epochs 3 and max_steps 100 both set the run's "
        r"length, and max_steps would decide alone; keep one \(epochs alone runs that many passes over train\)$",
        "task-file-epochs-and-max-steps",
        tmp_path,
        capsys,
    )


def test_a_task_folder_leaves_out_a_study_file_beside_its_task_files(tmp_path):
    # was: "task file DIR/study.yaml is a study file": docs/studies.md's example keeps the study file beside
    # the task files it names, so `--task-file DIR` refused that folder
    write_task_file(tmp_path, name="reviews", **sentiment_files(tmp_path))
    study = {
        "name": "mine",
        "runs": [{"name": "m", "recipe": "smoke-mlm"}],
        "eval": {"task_files": ["task.yaml"]},
    }
    write_task_file(tmp_path, "study.yaml", **study)
    assert [t.name for t in load_task_files([str(tmp_path)])] == ["reviews"]
    with pytest.raises(UserError, match=r"study\.yaml is a study file \(it has `runs:`, not `family:`\)"):
        load_task_files([str(tmp_path / "study.yaml")])  # named itself, it is still said to be one


def test_a_task_file_given_to_tasks_says_task_file(tmp_path, capsys):
    # was: "unknown task 'reviews.yaml'; valid: <every built-in task>", to a user writing `--tasks` as
    # lm-evaluation-harness takes a task's YAML
    path = write_task_file(tmp_path, "reviews.yaml", name="reviews", **sentiment_files(tmp_path))
    argv = ["eval", model_folder(tmp_path / "model"), "--tasks", path, "--out", tmp_path / "e"]
    _refused_by_eval_and_check(
        argv,
        rf"^encoderlab: error: task '{path}' is a task file, not a task's name; pass it with --task-file "
        rf"{path} \(a study: eval: {{task_files: \[{path}\]}}\)$",
        "task-file-given-to-tasks",
        tmp_path,
        capsys,
    )
