"""A task file's label column as the user has it: one label per row, a list of labels (multi-label),
or a cell that fits neither; each documented kind trains, each misfit is one documented line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import datasets
import pytest
import yaml
from tests.eval.conftest import TOPICS, filler
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.families import MultiLabelClassification, family_ops
from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.tasks import TASKS, load_task
from encoderlab.eval.tasks.custom import task_from_file


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    before, bars = dict(TASKS), not datasets.utils.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # "Generating train split" on stderr, above the one error line
    yield
    TASKS.clear()
    TASKS.update(before)
    if bars:
        datasets.enable_progress_bars()


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path.name


def _spec(tmp_path: Path, file: str = "task.yaml", **spec) -> Path:
    path = tmp_path / file
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _topics(n: int, seed: int) -> list[dict]:
    """Multi-label rows as a user writes them: the (0-2) colour words of the text, by name."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        names = sorted(rng.sample(TOPICS[:4], rng.randrange(0, 3)))
        words = [*filler(rng, 5), *names, f"n{seed}-{i}"]
        rng.shuffle(words)
        out.append({"body": " ".join(words), "colours": names})
    return out


def _topic_files(tmp_path: Path, **change) -> Path:
    data = {s: _jsonl(tmp_path / f"{s}.jsonl", _topics(n, k)) for k, (s, n) in enumerate(
        (("train", 256), ("validation", 32), ("test", 64)))}  # fmt: skip
    spec = {
        "name": "colours",
        "family": "sc",
        "data": data,
        "columns": {"text": "body", "label": "colours"},
        "options": {"multilabel": True},
        "metric": "macro_f1",
        "max_length": 64,
        "finetune": {"batch_size": 16, "micro_batch_size": 16, "max_steps": 120},
        **change,
    }
    return _spec(tmp_path, **spec)


def test_a_multilabel_task_file_trains_on_label_sets(tmp_path, model, tokenizer):
    # was: the label lists were read as classes named "['blue', 'red']", then a KeyError 'labels'
    # traceback once fine-tuning prepared the examples
    task, data = load_task(task_from_file(_topic_files(tmp_path)))
    assert family_ops(task) is MultiLabelClassification and task.metric == "macro_f1"
    assert task.labels == tuple(sorted(TOPICS[:4]))  # the names seen in train, not their lists
    first = _topics(256, 0)[0]
    assert [task.labels[x] for x in data.train[0]["labels"]] == first["colours"]
    result = run_one(task, model, tokenizer, prepare(task, tokenizer, data), lr=2e-3, seed=0)
    scores = result["test"]["test"]
    assert scores["macro_f1"] > 85 and scores["micro_f1"] > 85  # the colour words are the labels
    row = result["predictions"]["test"][0]
    assert set(row["gold"]) <= set(task.labels) and isinstance(row["pred"], list)


def test_micro_f1_is_only_for_multilabel_tasks(tmp_path):
    assert task_from_file(_topic_files(tmp_path, metric="micro_f1")).metric == "micro_f1"
    with pytest.raises(
        UserError, match=r"metric 'micro_f1' is not one of sc's: accuracy, macro_f1, weighted_f1$"
    ):
        task_from_file(_topic_files(tmp_path, options={}, metric="micro_f1"))


@pytest.mark.parametrize(
    ("case", "file", "change", "pattern"),
    [
        (
            "task-file-label-list-not-multilabel",
            "task_label_lists.yaml",
            {"options": {}},
            r"a row's label is a list \(\[.*\]\); for several labels per example set `options: "
            r"\{multilabel: true\}`, else give one label per row",
        ),
        (
            "task-file-multilabel-not-lists",
            "task_multilabel_names.yaml",
            {"columns": {"text": "body", "label": "first"}},
            r"with `multilabel: true` each label cell must be a list of labels \(JSON lines or parquet; "
            r"\[\] for none\), got '",
        ),
    ],
)
def test_a_label_cell_that_does_not_fit_the_task_is_one_line(tmp_path, capsys, case, file, change, pattern):
    # was: a list became one class named "['blue', 'red']" (silently), or a KeyError traceback
    from tests.eval.fixtures import model_folder

    spec = _topic_files(tmp_path, **change)
    for split in ("train", "validation", "test"):  # a column of single names beside the lists
        path = tmp_path / f"{split}.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        _jsonl(path, [{**r, "first": (r["colours"] or ["none"])[0]} for r in rows])
    spec.rename(tmp_path / file)
    model = model_folder(tmp_path / "model")
    code, err = cli(
        [
            "eval",
            model,
            "--task-file",
            tmp_path / file,
            "--lrs",
            "1e-4",
            "--seeds",
            "0",
            "--out",
            tmp_path / "e",
        ],
        capsys,
    )
    assert_one_line(code, err, pattern)
    assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "e").exists()
