"""A model or tokenizer argument shaped `owner/name` is a relative path as well as a hub id.

`encoderlab export runs/my-run --out hf/my-run` (docs/models.md) run where there is no `runs/my-run`
was refused with the hub's line alone ("cannot download model 'runs/my-run' ..."), as if the user had
meant a repo: the line now names the folder it did not find too, and the path as the first fix. The
hub is simulated (a failing `snapshot_download`, an empty mirror root): nothing downloads.

A name that can only be a path here (`./x`, `a/b/c`, `/x/y`, `~/x`) or a bare name that is no asset is
refused offline with its nearest name, a tokenizer's as a model's (`data.localpath.check_source`), and
the hub is never asked.
"""

from __future__ import annotations

import re
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError
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

    def snapshot_download(repo_id, local_files_only=False, **kwargs):
        if local_files_only:  # a look into the local hub cache (`guarded_folder`): no network, and empty
            raise LocalEntryNotFoundError("not in the local cache")
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


@pytest.mark.parametrize("form", ["./toks/mien", "toks/../toks/mien", "{tmp}/toks/mien", "toks/mine/../mien"])
def test_a_tokenizer_path_with_a_typo_names_the_nearest_name_offline(tmp_path, monkeypatch, form):
    """Was "'./toks/mien' is not an existing path, nor a model id of the form OWNER/NAME; fix it", which
    took a path for a mistyped hub id: now the folder that exists and its nearest entry, the hub not asked."""
    save_tiny_tokenizer(tmp_path / "toks" / "mine")
    monkeypatch.chdir(tmp_path)
    asked = _hub_failing(monkeypatch, ConnectionError("refused"))
    name = form.format(tmp=tmp_path)
    with pytest.raises(UserError) as err:
        load_tokenizer(name)
    assert str(err.value) == (
        f"tokenizer '{name}' does not exist: {Path(name).parent} holds no 'mien' (mine?); pass a tokenizer or "
        "model folder, an asset name or a hub id (org/name)"
    )
    assert asked == []


def test_a_bare_tokenizer_name_that_is_no_folder_or_asset_is_refused_as_a_models_is(tmp_path, monkeypatch):
    """`--tokenizer tokz` beside `toks/` went to the hub as a repo named `tokz`, and came back as a failed
    download; a model's bare name never did (no hub repo is a bare NAME)."""
    save_tiny_tokenizer(tmp_path / "toks")
    monkeypatch.chdir(tmp_path)
    asked = _hub_failing(monkeypatch, ConnectionError("refused"))
    with pytest.raises(UserError) as err:
        load_tokenizer("tokz")
    assert re.fullmatch(
        r"tokenizer 'tokz' \(toks\?\) is not a folder, an asset \(.*\) or a hub id \(org/name\); pass one of these",
        str(err.value),
    ), err.value
    with pytest.raises(UserError, match=r"^model source 'minlm' \(minilm\?\) is not a folder, an asset"):
        load_pretrained("minlm")  # the nearest asset name, by the same check
    assert asked == []


def test_a_tokenizer_under_the_home_folder_is_read(tmp_path, monkeypatch):
    """`~/toks/mine` was "not an existing path": the tokenizer's name was not expanded, the model's was."""
    save_tiny_tokenizer(tmp_path / "toks" / "mine")
    monkeypatch.setenv("HOME", str(tmp_path))
    _hub_failing(monkeypatch, ConnectionError("refused"))
    assert load_tokenizer("~/toks/mine").get_vocab()
    with pytest.raises(
        UserError, match=r"^tokenizer '~/toks/mien' does not exist: .*toks holds no 'mien' \(mine\?\)"
    ):
        load_tokenizer("~/toks/mien")
