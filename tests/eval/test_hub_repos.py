"""`Task.hub_repos`, what each hub task's loader reads, and the refusal it allows: with
`--hub-data`, a dataset without a mirror is named before any run, not when the grid reaches its task
(on the paper suite, hours of earlier tasks in)."""

from __future__ import annotations

import os

import datasets
import pytest
from tests.eval import bigbio_fixtures as bigbio
from tests.eval import hub_fixtures as hub
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.eval.spec import HubRepo
from encoderlab.eval.tasks import TASKS, load_task

HUB_TASKS = [n for n, t in TASKS.items() if n.startswith(("paper-", "biomed-"))]


def _write_every_mirror(root) -> None:
    for write in (hub.glue, hub.conll2003_en, hub.uner_en, hub.ontonotes5, hub.squad, hub.record):
        write(root)
    hub.squad(root, v2=True)
    for write in (hub.msmarco_pairs, hub.msmarco, hub.nq, hub.mldr_en):
        write(root)
    for config in ("jnlpba", "ncbi_disease"):
        bigbio.blurb(root, config)
    for write in (bigbio.gad, bigbio.hoc, bigbio.anatem, bigbio.chemprot, bigbio.bc5cdr):
        write(root)


def test_every_hub_task_declares_the_repositories_its_loader_reads(tmp_path, monkeypatch):
    from encoderlab.eval.tasks import hubsource as loading

    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    _write_every_mirror(tmp_path / "hub")
    seen: list[HubRepo] = []
    real = loading.dataset_location

    def recorded(repo: str, revision: str | None = None) -> str:
        seen.append(HubRepo(repo, revision))
        return real(repo, revision)

    monkeypatch.setattr(loading, "dataset_location", recorded)
    assert len(HUB_TASKS) == 19
    for name in HUB_TASKS:
        seen.clear()
        load_task(TASKS[name])
        assert set(seen) == set(TASKS[name].hub_repos), name


def test_a_missing_mirror_is_named_before_any_run(tmp_path, capsys, monkeypatch):
    """Only GLUE mirrored: `--suite paper` ran SST-2, MNLI and QQP (hours at paper scale) before
    CoNLL-2003's loader found no mirror; now nothing runs and no folder is made."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))  # as --hub-data sets it; undone after
    hub.glue(tmp_path / "hub")
    argv = f"eval {tmp_path / 'model'} --suite paper --hub-data {tmp_path / 'hub'} --out {tmp_path / 'e'}"
    code, err = cli(argv.split(), capsys)
    assert_one_line(
        code,
        err,
        r"task paper-conll2003: ENCODERLAB_HUB_DATA=.*hub has no mirror of hgissbkh/conll2003-en; download it "
        r"with: hf download --repo-type dataset hgissbkh/conll2003-en --local-dir .*hub/hgissbkh/conll2003-en$",
    )
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("task", ["paper-msmarco", "biomed-gad"])
def test_an_export_mirror_names_its_revision(tmp_path, capsys, monkeypatch, task):
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))  # as --hub-data sets it; undone after
    suite = task.split("-")[0]
    argv = f"eval {tmp_path / 'model'} --suite {suite} --tasks {task} --hub-data {tmp_path / 'hub'} --out {tmp_path / 'e'}"
    if task == "paper-msmarco":
        hub.msmarco_pairs(tmp_path / "hub")
        hub.msmarco(tmp_path / "hub")
        (tmp_path / "hub" / "BeIR" / "msmarco").rename(tmp_path / "hub" / "BeIR" / "gone")
    code, err = cli(argv.split(), capsys)
    assert_one_line(
        code,
        err,
        r"no mirror of (BeIR/msmarco|bigbio/gad); download it with: hf download --repo-type dataset --revision refs/convert/parquet",
    )


def test_hub_data_is_set_for_its_command_only(tmp_path, capsys, monkeypatch):
    """`--hub-data` set $ENCODERLAB_HUB_DATA for the rest of the process: a later command in the same
    process (a notebook, a test calling `main` again) read that mirror without being asked to."""
    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    (tmp_path / "model").mkdir()
    (tmp_path / "tasks").mkdir()  # no task file: refused after the flag is taken in
    argv = f"eval {tmp_path / 'model'} --task-file {tmp_path / 'tasks'} --hub-data {tmp_path / 'hub'} --out {tmp_path / 'e'}"
    code, err = cli(argv.split(), capsys)
    assert code == 2 and "holds no .yaml" in err, err
    assert "ENCODERLAB_HUB_DATA" not in os.environ
