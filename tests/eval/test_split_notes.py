"""A validation read from the data's test split, or a test read from its validation split, is said:
beside the task's score in `eval`'s output, in summary.md and by `eval --check`
(`tasks.splits.read_across`, `split_notes`), for every loader that reads one so: a task file's hub
mapping (`data.splits: {test: validation}`), paper 1's GLUE and SQuAD-format tasks (the validation split
is the test), its NQ (halves of the test qrels), and the pocket tasks read from an official dev split.
Before, nothing said that a score called test was on the data's validation split, or that the LR was
picked on test-split data, unless the reader knew the loader or the task file."""

from __future__ import annotations

import datasets
import pytest
from tests.eval import hub_fixtures as hub
from tests.eval.fixtures import model_folder, run_cli, write_asset, write_task_file

from encoderlab.eval.tasks import TASKS, load_task
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.splits import FROM_OTHER_SPLIT, split_notes, split_role

pytestmark = pytest.mark.usefixtures("isolated_tasks")
TEST_FROM_VALIDATION, VALIDATION_FROM_TEST = FROM_OTHER_SPLIT["test"], FROM_OTHER_SPLIT["validation"]
SST2 = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}, "max_length": 32}


@pytest.fixture
def root(tmp_path, monkeypatch):
    """The simulated hub's root, with `datasets`' cache kept inside the test's folder."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    return tmp_path / "hub"


@pytest.mark.parametrize(
    ("name", "role"),
    [("validation", "validation"), ("validation_matched", "validation"), ("dev", "validation")]
    + [
        ("valid", "validation"),
        ("test", "test"),
        ("test_mismatched", "test"),
        ("train", None),
        ("extra", None),
    ],
)
def test_a_split_name_says_its_part(name, role):
    assert split_role(name) == role


def test_a_task_files_hub_validation_read_as_test_is_counted_and_its_own_test_is_not(tmp_path, root):
    hub.glue(root)
    mapped = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": None}}
    data = task_from_file(write_task_file(tmp_path, "mapped.yaml", **SST2, data=mapped)).loader()
    assert data.counts[TEST_FROM_VALIDATION] == len(data.tests["test"]) > 0
    assert VALIDATION_FROM_TEST not in data.counts
    mnli = {"hub": "nyu-mll/glue", "config": "mnli", "splits": {"test": "validation_matched"}}
    spec = {**SST2, "name": "my-mnli", "family": "pair-sc", "template": "{a} | {b}"}
    spec["columns"] = {"text": "premise", "text_pair": "hypothesis"}
    data = task_from_file(write_task_file(tmp_path, "mnli.yaml", **spec, data=mnli)).loader()
    assert data.counts[TEST_FROM_VALIDATION] == len(data.tests["test"])


def test_paper_tasks_reading_the_other_split_count_it_and_the_others_do_not(root):
    hub.glue(root)
    hub.squad(root)
    hub.msmarco_pairs(root)
    hub.nq(root)
    hub.msmarco(root)
    for name in ("paper-sst2", "paper-mnli", "paper-squad"):
        _, data = load_task(TASKS[name])
        assert data.counts[TEST_FROM_VALIDATION] == len(data.tests["test"]), name
    _, nq = load_task(TASKS["paper-nq"])
    assert nq.counts[VALIDATION_FROM_TEST] == len(nq.val.queries) and TEST_FROM_VALIDATION not in nq.counts
    _, msmarco = load_task(TASKS["paper-msmarco"])  # BEIR's dev qrels and TREC-DL's test: their own parts
    assert not set(FROM_OTHER_SPLIT.values()) & set(msmarco.counts)


def test_pocket_boolq_whose_test_is_the_official_dev_split_counts_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path))
    records = [
        {
            "id": str(i),
            "text": f"passage {i} about thing {i}",
            "meta": {"question": f"is thing {i} here", "label": "true" if i % 2 else "false"}
            | ({"split": "dev"} if i % 4 == 0 else {}),
        }
        for i in range(80)
    ]
    write_asset(tmp_path, "boolq", records)
    _, data = load_task(TASKS["boolq"])
    dev = sum(r["meta"].get("split") == "dev" for r in records)
    assert data.counts[TEST_FROM_VALIDATION] == len(data.tests["test"]) == dev
    assert all(int(e["text_pair"].split()[1]) % 4 == 0 for e in data.tests["test"])


def test_eval_and_check_say_the_test_is_the_datas_validation_and_summary_md_keeps_it(tmp_path, root, capsys):
    hub.glue(root)
    mapped = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": None}}
    finetune = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}
    task = write_task_file(tmp_path, **SST2, data=mapped, finetune=finetune)
    n = len(task_from_file(task).loader().tests["test"])
    note = (
        f"test is {n} examples of the data's validation split (compare the score with scores on that split, "
        "not on the data's test split)"
    )
    out = tmp_path / "e"
    argv = ["eval", str(model_folder(tmp_path / "m")), "--task-file", str(task), "--out", str(out)]
    argv += ["--device", "cpu", "--seeds", "0", "--lrs", "1e-3"]  # one LR: the small cut is not noted
    code, said, err = run_cli([*argv, "--check"], capsys)
    assert code == 0 and said.splitlines().count(f"  note: {note}") == 1, (said, err)
    code, said, err = run_cli(argv, capsys)
    assert code == 0 and said.splitlines().count(f"  note: {note}") == 1, (said, err)
    assert f"- my-sst2: {note}" in (out / "summary.md").read_text()
    assert split_notes({TEST_FROM_VALIDATION: n}, "sc", [1e-3]) == [note]
