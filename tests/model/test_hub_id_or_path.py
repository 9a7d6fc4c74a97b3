"""A model or tokenizer argument shaped `owner/name` is a relative path as well as a hub id.

`encoderlab export runs/my-run --out hf/my-run` (docs/models.md) run where there is no `runs/my-run`
was refused with the hub's line alone ("cannot download model 'runs/my-run' ..."), as if the user had
meant a repo: the line now names the folder it did not find too, and the path as the first fix. The
hub is simulated (a failing `snapshot_download`, an empty mirror root): nothing downloads.
"""

from __future__ import annotations

import re

import huggingface_hub
import pytest
from huggingface_hub.errors import RepositoryNotFoundError
from model_fixtures import save_tiny_tokenizer

from encoderlab.cli import main
from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.data.tokenizer import load_tokenizer
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained


def _not_found() -> RepositoryNotFoundError:
    exc = RepositoryNotFoundError.__new__(RepositoryNotFoundError)  # its __init__ wants an HTTP response
    Exception.__init__(exc, "404 Client Error: Repository Not Found")
    return exc


def _hub_failing(monkeypatch, exc: Exception) -> list[str]:
    asked: list[str] = []

    def snapshot_download(repo_id, **kwargs):
        asked.append(repo_id)
        raise exc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return asked


@pytest.mark.parametrize(
    "exc, hub_part, fix",
    [
        (
            ConnectionError("[Errno 111] Connection refused"),
            r"cannot download model 'runs/my-run' from the Hugging Face hub \(ConnectionError: .*\)",
            "check the path, or the network",
        ),
        (
            _not_found(),
            r"model 'runs/my-run' is not on the Hugging Face hub, or is private",
            "check the path or the id",
        ),
    ],
    ids=["hub-unreachable", "not-on-the-hub"],
)
def test_export_of_a_missing_run_folder_names_the_folder_and_the_hub(
    tmp_path, monkeypatch, capsys, exc, hub_part, fix
):
    (tmp_path / "runs" / "other-run").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    asked = _hub_failing(monkeypatch, exc)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["export", "runs/my-run", "--out", "hf/my-run"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1, err
    folder = re.escape(str(tmp_path / "runs" / "my-run"))
    assert re.search(f"^encoderlab: error: {hub_part}, and there is no folder {folder}; {fix}", err), err
    assert asked == ["runs/my-run"]  # the resolution order is unchanged: the hub was still asked
    assert not (tmp_path / "hf").exists()


def test_a_tokenizer_and_a_mirrored_model_name_the_folder_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _hub_failing(monkeypatch, ConnectionError("refused"))
    with pytest.raises(
        UserError, match=rf"there is no folder {re.escape(str(tmp_path / 'toks' / 'mine'))}; check the path"
    ):
        load_tokenizer("toks/mine")
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "mirror"))
    with pytest.raises(
        UserError,
        match=rf"has no mirror of runs/my-run, and there is no folder {re.escape(str(tmp_path / 'runs' / 'my-run'))}; "
        r"check the path, or download it with: hf download runs/my-run",
    ):
        load_pretrained("runs/my-run")


def test_an_existing_folder_still_wins_over_the_hub(tmp_path, monkeypatch):
    """The folder named like a hub id is read, and the hub is never asked."""
    save_tiny_tokenizer(tmp_path / "toks" / "mine")
    monkeypatch.chdir(tmp_path)
    asked = _hub_failing(monkeypatch, ConnectionError("refused"))
    assert load_tokenizer("toks/mine").get_vocab() and asked == []


def test_a_path_whose_folder_exists_names_that_folders_near_name_not_every_asset(tmp_path, monkeypatch):
    # was: "model source 'runs/mlm/fina' is not a folder, an asset (bbc-news, biomed, ... 24 names) or a
    # hub id (org/name); pass one of these": a typo in a run's path answered with the asset list
    (tmp_path / "runs" / "mlm" / "final").mkdir(parents=True)
    (tmp_path / "runs" / "mlm" / "checkpoints").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as err:
        load_pretrained("runs/mlm/fina")
    assert str(err.value) == (
        "model source 'runs/mlm/fina' does not exist: runs/mlm holds no 'fina' (final?); pass a model or run "
        "folder, an asset name or a hub id (org/name)"
    )
    with pytest.raises(UserError, match=r"is not a folder, an asset \(.*\) or a hub id"):
        load_pretrained("fina")  # no folder named: any source it might have been
