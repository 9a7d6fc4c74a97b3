# ruff: noqa: F811 (the fixture, imported)
"""An evaluation records the commit of each hub dataset its task read (`EvalRecord.hub_datasets`,
`eval.tasks.hubcommits`), as a prepared folder records its hub corpus's: before, no record named it, and
the study report's `hub inputs` row said "the commit read not recorded" for every evaluation dataset.
The hub is the local hub cache as huggingface_hub lays it out (`snapshots/COMMIT/`, read offline by the
real `snapshot_download`) and the simulated hub of `test_hub_csv_snapshot` (nothing downloads)."""

from __future__ import annotations

import json

import pytest
from datasets import Dataset
from tests.eval import hub_fixtures as hub
from tests.eval.conftest import sc_examples
from tests.eval.fixtures import model_folder, write_task_file
from tests.eval.hub_snapshot_fixtures import (  # noqa: F401
    QRELS,
    SERVED_COMMIT,
    cache,
    cache_snapshot,
    hub_online,
    qrels_repo,
)
from tests.reliability.test_hostile_inputs import cli

from encoderlab.eval.spec import HubRepo
from encoderlab.eval.summary import HubRead
from encoderlab.eval.tasks import hubcommits
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

pytestmark = pytest.mark.usefixtures("isolated_tasks")


@pytest.fixture(autouse=True)
def _fresh_reads(monkeypatch):
    monkeypatch.setattr(hubcommits, "_READ", {})


def test_a_hub_cache_snapshot_read_offline_records_its_commit(tmp_path, cache):
    cache_snapshot(cache, QRELS, qrels_repo(tmp_path / "served"), ["train.tsv", "dev.tsv", "test.tsv"])
    load_hub(HubSource(QRELS))
    assert hubcommits.commits_read([HubRepo(QRELS), HubRepo("other/repo")]) == (
        HubRead(QRELS, None, SERVED_COMMIT),
        HubRead("other/repo", None, None),  # not read: no commit
    )


def test_a_dataset_datasets_resolved_on_the_hub_records_the_commit_of_its_files(tmp_path, cache, monkeypatch):
    rows = Dataset.from_dict({"text": ["a", "b"], "label": [0, 1]})
    splits = {"default": {"train": ("data/train-00000-of-00001.parquet", rows)}}
    folder = hub.write_repo(tmp_path / "served", "me/tiny", splits, card=False)
    hub_online(monkeypatch, cache, "me/tiny", folder)
    load_hub(HubSource("me/tiny"))
    assert hubcommits.commits_read([HubRepo("me/tiny")]) == (HubRead("me/tiny", None, SERVED_COMMIT),)


@pytest.mark.parametrize("recorded", [True, False], ids=["downloaded", "copied"])
def test_a_mirror_records_the_commit_its_download_records_name(tmp_path, cache, monkeypatch, recorded):
    """A mirror written by `hf download --revision SERVED_COMMIT --local-dir`: the commit its records name for every
    file; one copied in without them: none (not known, so not recorded)."""
    from tests.data.hub_cache_fixtures import download_record

    folder = qrels_repo(tmp_path / "mirror")
    for name in ("train.tsv", "dev.tsv", "test.tsv") if recorded else ():
        download_record(folder, name, SERVED_COMMIT)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirror"))
    load_hub(HubSource(QRELS))
    commit = SERVED_COMMIT if recorded else None
    assert hubcommits.commits_read([HubRepo(QRELS)]) == (HubRead(QRELS, None, commit),)


def _csv(rows: list[dict]) -> str:
    return "text,label\n" + "".join(f"{r['text']},{r['label']}\n" for r in rows)


def test_an_eval_of_a_task_reading_a_hub_dataset_records_the_commit_read(tmp_path, cache, capsys):
    """`eval --task-file` of a task whose data is a hub dataset in the local hub cache, offline: each
    result record names the dataset and the commit of the snapshot read (before: neither)."""
    served = tmp_path / "served" / "me" / "mood"
    served.mkdir(parents=True)
    names = []
    for k, (split, n) in enumerate((("train", 32), ("validation", 16), ("test", 16))):
        (served / f"{split}.csv").write_text(_csv(sc_examples(n, k)))
        names.append(f"{split}.csv")
    cache_snapshot(cache, "me/mood", served, names)
    spec = {
        "name": "mood",
        "family": "sc",
        "data": {"hub": "me/mood"},
        "columns": {"text": "text", "label": "label"},
        "finetune": {"max_steps": 2, "batch_size": 8, "micro_batch_size": 8},  # the record, not learning
    }
    task = write_task_file(tmp_path, "mood.yaml", **spec, max_length=32)
    model = model_folder(tmp_path / "model")
    argv = ["eval", model, "--task-file", task, "--lrs", "1e-4", "--seeds", "0", "--out", tmp_path / "out"]
    code, err = cli(argv, capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [r["hub_datasets"] for r in records] == [
        [{"hub_id": "me/mood", "revision": None, "commit": SERVED_COMMIT}]
    ]


def _line(**fields) -> dict:
    base = dict(model="m", task="t", family="sc", task_signature="s", metric="acc", lr=1e-5, seed=0)
    return base | dict(val={}, test={}, val_score=0.0, test_score=0.0) | fields


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (
            {"hub_datasets": [{"hub_id": "me/mood", "revision": "v1", "commit": SERVED_COMMIT}]},
            (HubRead("me/mood", "v1", SERVED_COMMIT),),
        ),
        ({"hub_datasets": []}, ()),  # a task that read no hub dataset
        ({}, None),  # a record from before they were recorded: not recorded, not "none read"
    ],
    ids=["read", "none-read", "older"],
)
def test_results_jsonl_s_hub_datasets_read_back_typed_and_write_as_they_were(tmp_path, written, read):
    """`EvalRecord.hub_datasets` is `HubRead`s (were plain dicts the report checked key by key), read from
    results.jsonl by `from_dict` as every record field is, and written back in the same JSON shape: a
    record of before (no field) stays without one."""
    from encoderlab.config import to_dict
    from encoderlab.eval.protocol import ResultsStore

    (tmp_path / "results.jsonl").write_text(json.dumps(_line(**written)) + "\n")
    [record] = ResultsStore(tmp_path / "results.jsonl").records.values()
    assert record.hub_datasets == read
    out = to_dict(record)  # what `ResultsStore.add` writes
    assert {k: out.get(k) for k in _line(**written)} == _line(**written)
    assert ("hub_datasets" in out) == ("hub_datasets" in written)


def test_a_damaged_hub_datasets_entry_in_results_jsonl_is_refused_naming_the_line(tmp_path):
    """A hand-edited entry (a commit that is no string) is refused as any other field of the wrong type;
    the report skipped such a record as one from before, saying its commit was not recorded."""
    from encoderlab.errors import UserError
    from encoderlab.eval.protocol import ResultsStore

    damaged = {"hub_datasets": [{"hub_id": "me/mood", "revision": None, "commit": 7}]}
    (tmp_path / "results.jsonl").write_text(json.dumps(_line(**damaged)) + "\n")
    with pytest.raises(
        UserError, match=r"results.jsonl line 1 is not a result record \(hub_datasets\[0\].commit: "
    ):
        ResultsStore(tmp_path / "results.jsonl")


@pytest.mark.parametrize("recorded", [True, False], ids=["downloaded", "copied"])
def test_a_built_in_task_read_from_a_mirror_downloaded_at_a_commit_records_that_commit(
    tmp_path, cache, monkeypatch, recorded
):
    """The pin docs/reproduce.md gives for a built-in task, whose hub datasets are read unpinned: a mirror
    written by `hf download --repo-type dataset --revision SHA REPO --local-dir DIR/REPO`, read with
    `--hub-data DIR`. The task's own loader (`paper-record`'s, not a bare `load_hub`) then reads that commit
    and its hub_repos name it; a mirror copied in without the download records names none."""
    from tests.data.hub_cache_fixtures import download_record

    from encoderlab.eval.tasks import TASKS, load_task

    folder = hub.record(tmp_path / "mirror")
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    assert "README.md" in files and any(f.endswith(".parquet") for f in files)
    for name in files if recorded else ():
        download_record(folder, name, SERVED_COMMIT)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirror"))
    task = TASKS["paper-record"]
    load_task(task)
    assert hubcommits.commits_read(task.hub_repos) == (
        HubRead("hgissbkh/record", None, SERVED_COMMIT if recorded else None),
    )
