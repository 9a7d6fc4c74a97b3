"""A local test file whose labels are -1, the mark of labels a dataset does not publish (GLUE's test splits,
as a `run_glue.py` user's export writes them beside labelled train rows). The refusal told the user to add
-1 to `labels:`, which made it a class no training row has: every test row scored wrong, unsaid. It is now the
hidden label's one line (`refuse_hidden_labels`, as a hub split's), with the fixes of the split it is in."""

from __future__ import annotations

import re

import pytest
from tests.eval.fixtures import write_csv, write_jsonl, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.registry import load_task

pytestmark = pytest.mark.usefixtures("isolated_tasks")

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _task(tmp_path, suffix: str, labels: list[str] | None):
    """Train rows of ids 0 and 1, a test file of -1s, in `suffix` files; `labels:` where given."""
    write = write_csv if suffix == "csv" else write_jsonl
    write(
        tmp_path / f"train.{suffix}",
        [{"text": f"train {w} {i}", "label": i % 2} for i, w in enumerate(WORDS * 5)],
    )
    write(tmp_path / f"test.{suffix}", [{"text": f"test {w}", "label": -1} for w in WORDS])
    spec = {"family": "sc", "data": {"train": f"train.{suffix}", "test": f"test.{suffix}"}}
    return write_task_file(
        tmp_path, "glue.yaml", name="glue", **spec, **({"labels": labels} if labels else {})
    )


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
@pytest.mark.parametrize("labels", [None, ["neg", "pos"]], ids=["names-from-train", "ids-in-labels"])
def test_a_test_file_of_minus_one_labels_is_told_it_is_unpublished_not_to_add_the_class(
    tmp_path, suffix, labels
):
    path = _task(tmp_path, suffix, labels)
    with pytest.raises(UserError) as refused:
        load_task(task_from_file(path))
    said = str(refused.value)
    assert said.startswith(f"task file {path}: ") and "\n" not in said
    hidden = r"test split, test\.\w+: 6 rows of 6 \(e\.g\. line \d\) have the label -1 in 'label', the dataset's hidden label"
    assert re.search(
        hidden + r"; name a labelled file in data\.test, or cut test from train with data\.test_fraction$",
        said,
    )
    assert "add it to `labels:`" not in said and "name every class in `labels:`" not in said


def test_the_command_refuses_in_the_documented_line_and_writes_nothing(tmp_path, capsys):
    """`encoderlab eval` of such a task file: exit 2, docs/errors.md's line, no output folder."""
    from tests.eval.fixtures import model_folder

    path = _task(tmp_path, "csv", None)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--lrs", "1e-4", "--seeds", "0"]
    code, err = cli([*argv, "--out", tmp_path / "e"], capsys)
    assert_one_line(
        code, err, r"test split, test\.csv: 6 rows of 6 \(e\.g\. line 2\) have the label -1 in 'label'"
    )
    assert_printed_as_documented("task-file-hidden-labels-in-file", err, tmp_path)
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    ("split", "fix"),
    [
        (
            "validation",
            r"name a labelled file in data\.validation, or leave it out to cut validation from train$",
        ),
        ("train", r"drop those rows from the train file .*, or name a labelled file in data\.train$"),
    ],
)
def test_minus_one_labels_outside_test_are_given_their_own_splits_fix(tmp_path, split, fix):
    """-1 in a validation file, or in a train file beside `labels:` (SNLI's unlabelled rows), was told to
    cut test from train with data.test_fraction: a fix of the test split, which leaves the -1 rows read."""
    rows = [{"text": f"train {w} {i}", "label": i % 2} for i, w in enumerate(WORDS * 5)]
    test = [{"text": f"test {w}", "label": i % 2} for i, w in enumerate(WORDS)]
    files = {"train": rows, "test": test}
    if split == "validation":
        files["validation"] = [{"text": f"dev {w}", "label": -1} for w in WORDS]
    else:
        rows[3] = {**rows[3], "label": -1}
    for name, content in files.items():
        write_jsonl(tmp_path / f"{name}.jsonl", content)
    spec = {"family": "sc", "data": {s: f"{s}.jsonl" for s in files}, "labels": ["neg", "pos"]}
    path = write_task_file(tmp_path, "glue.yaml", name="glue", **spec)
    with pytest.raises(UserError) as refused:
        load_task(task_from_file(path))
    said = str(refused.value)
    assert f"{split} split" in said and "-1" in said and "\n" not in said
    assert re.search(fix, said) and "test_fraction" not in said


@pytest.mark.parametrize("labels", [None, ["neg", "pos"]], ids=["names-from-train", "ids-in-labels"])
def test_minus_one_labels_are_refused_before_a_one_row_train_files_cut(tmp_path, labels):
    """A test file of -1 beside a one-row train file was told that validation's cut leaves nothing to train
    on; a user who added train rows learnt only then that the test file could never be scored."""
    write_jsonl(tmp_path / "train.jsonl", [{"text": "train alpha", "label": 1}])
    write_jsonl(tmp_path / "test.jsonl", [{"text": f"test {w}", "label": -1} for w in WORDS])
    spec = {"family": "sc", "data": {"train": "train.jsonl", "test": "test.jsonl"}}
    path = write_task_file(
        tmp_path, "glue.yaml", name="glue", **spec, **({"labels": labels} if labels else {})
    )
    with pytest.raises(
        UserError, match=r"test split, test\.jsonl: 6 rows of 6 .* the dataset's hidden label;"
    ):
        load_task(task_from_file(path))


def test_minus_one_in_train_without_labels_is_a_class(tmp_path):
    """-1, 0 and 1 sentiment in train, no `labels:`: -1 is one of its classes, read as one, not refused."""
    rows = [{"text": f"train {w} {i}", "label": i % 3 - 1} for i, w in enumerate(WORDS * 5)]
    write_jsonl(tmp_path / "train.jsonl", rows)
    write_jsonl(
        tmp_path / "test.jsonl", [{"text": f"test {w}", "label": i % 3 - 1} for i, w in enumerate(WORDS)]
    )
    spec = {"family": "sc", "data": {"train": "train.jsonl", "test": "test.jsonl"}}
    data = load_task(task_from_file(write_task_file(tmp_path, "s.yaml", name="s", **spec)))[1]
    assert "-1" in data.labels


def test_a_hub_splits_plain_minus_one_labels_get_the_hubs_fix():
    """A hub split's plain label column (ints, no class names) of -1 was told to name a labelled file, which
    a hub task has none of; it is told to map the split to a labelled one, as a class-label column's is."""
    from encoderlab.eval.tasks.hiddenlabels import refuse_unpublished_labels
    from encoderlab.eval.tasks.rowplaces import hub_places

    raw = {"train": [{"label": i % 2} for i in range(6)], "test": [{"label": -1} for _ in range(3)]}
    places = {s: hub_places(s, len(rows)) for s, rows in raw.items()}
    with pytest.raises(
        UserError, match=r"test split: 3 rows of 3 .*; map test to a labelled split in data\.splits"
    ):
        refuse_unpublished_labels(("0", "1"), raw, places, ("label", "label"), "task file t.yaml")


def test_a_local_parquet_class_label_column_of_minus_one_gets_a_local_fix(tmp_path):
    """A local parquet file's class-label column of -1 was told to map test to a labelled split in
    data.splits, which is refused beside local files ("read only with data.hub")."""
    from datasets import ClassLabel, Dataset, Features, Value

    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    for split, labels in (("train", [i % 2 for i in range(30)]), ("test", [-1] * 6)):
        texts = [f"{split} {WORDS[i % 6]} {i}" for i in range(len(labels))]
        Dataset.from_dict({"text": texts, "label": labels}, features=features).to_parquet(
            tmp_path / f"{split}.parquet"
        )
    spec = {"family": "sc", "data": {"train": "train.parquet", "test": "test.parquet"}}
    path = write_task_file(tmp_path, "glue.yaml", name="glue", **spec)
    with pytest.raises(UserError) as refused:
        load_task(task_from_file(path))
    said = str(refused.value)
    assert re.search(
        r"test split, test\.parquet: 6 rows of 6 .*hidden label; name a labelled file in data\.test", said
    )
    assert "data.splits" not in said


def test_a_class_label_column_of_minus_one_is_refused_before_a_one_row_train_files_cut(tmp_path):
    from datasets import ClassLabel, Dataset, Features, Value

    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    for split, labels in (("train", [1]), ("test", [-1] * 6)):
        texts = [f"{split} {WORDS[i % 6]} {i}" for i in range(len(labels))]
        Dataset.from_dict({"text": texts, "label": labels}, features=features).to_parquet(
            tmp_path / f"{split}.parquet"
        )
    spec = {"family": "sc", "data": {"train": "train.parquet", "test": "test.parquet"}}
    path = write_task_file(tmp_path, "glue.yaml", name="glue", **spec)
    with pytest.raises(
        UserError, match=r"test split, test\.parquet: 6 rows of 6 .*the dataset's hidden label;"
    ):
        load_task(task_from_file(path))
