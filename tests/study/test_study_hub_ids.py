"""A study's start model or tokenizer named by a hub id (OWNER/NAME) that the hub cannot give.

Such an id is a relative path too, which a study file reads beside itself (`study/files.py`). With no
hub to reach, `study run sub/s.yaml` made the study folder, prepared the corpus, and only the
pretraining node refused the id, naming the working folder (`there is no folder CWD/someone/enc`), not
the study file's folder where the id was looked for as a path. Now `study run` and `study plan` refuse
it first (`study.checks.check_hub_ids`), in one line naming the study file's folder, before anything
is written. The hub is simulated (HF_HUB_OFFLINE, or a failing `HfApi.repo_info`): nothing downloads.
"""

from __future__ import annotations

import re

import huggingface_hub
import pytest
import yaml
from tests.reliability.test_hostile_arguments import assert_refused_untouched, model_folder, write_texts
from tests.reliability.test_hostile_study_files import MINI_STUDY

from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.errors import UserError
from encoderlab.study.files import load_study_file


def check_hub_ids(spec):
    from encoderlab.study.checks import check_hub_ids  # lazy: the run and plan cases hold on any code

    check_hub_ids(spec)


OFFLINE = (
    r"study mini, run b: model 'someone/enc' is not a folder or asset, and the hub is offline \(HF_HUB_OFFLINE=1\), "
    r"and there is no folder {sub}/someone/enc; run once with the hub reachable \(HF_HUB_OFFLINE unset\), or "
    r"`hf download someone/enc`; or pass a local folder, or mirror the repo and set ENCODERLAB_HUB_MODELS$"
)


@pytest.fixture
def hworld(tmp_path):
    """`sub/study_hub_init.yaml`: MINI_STUDY with run b starting from `someone/enc`, its corpus beside it."""
    sub = tmp_path / "sub"
    sub.mkdir()
    write_texts(sub)
    study = yaml.safe_load(yaml.safe_dump(MINI_STUDY))
    study["runs"][1]["init"] = "someone/enc"
    (sub / "study_hub_init.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return tmp_path


@pytest.mark.parametrize("command", ["run {w}/sub/study_hub_init.yaml --out {w}/s"])
def test_a_hub_id_the_hub_cannot_give_is_refused_naming_the_study_files_folder(
    hworld, capsys, monkeypatch, command
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    pattern = OFFLINE.format(sub=re.escape(str(hworld / "sub")))
    assert_refused_untouched(
        hworld, capsys, monkeypatch, "study-hub-id-not-there", f"study {command}", pattern
    )


def test_an_unreachable_hub_is_named_with_the_study_files_folder(hworld, monkeypatch):
    """HF_HUB_OFFLINE unset, nothing cached and the hub unreachable: the download's own line, asked once."""
    asked = []

    def repo_info(self, repo_id, **kwargs):
        asked.append(repo_id)
        raise ConnectionError("Connection refused")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", repo_info)
    spec = load_study_file(hworld / "sub" / "study_hub_init.yaml")
    with pytest.raises(UserError) as info:
        check_hub_ids(spec)
    assert str(info.value) == (
        "study mini, run b: cannot download model 'someone/enc' from the Hugging Face hub (ConnectionError: "
        f"Connection refused), and there is no folder {hworld / 'sub' / 'someone' / 'enc'}; check the path, "
        "or the network, or set HF_HUB_OFFLINE=1 to use the local hub cache"
    )
    assert asked == ["someone/enc"]


def test_a_plan_asks_no_hub_and_leaves_hub_ids_without_a_mirror_to_the_run(hworld, monkeypatch):
    """`study plan` reads nothing that is not on this machine, as for corpora: offline, or online with
    the hub unreachable (a login node without the network, HF_HUB_OFFLINE unset), with no mirror, a hub
    id is the run's to check; it printed the plans of paper 1 and 2 before the hub-id check, and must."""
    from encoderlab.study.checks import check_hub_ids as checks_of

    def repo_info(self, repo_id, **kwargs):
        raise AssertionError("the hub was asked")

    spec = load_study_file(hworld / "sub" / "study_hub_init.yaml")
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", repo_info)
    for offline in ("1", "0"):
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
        checks_of(spec, fetched=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="the hub is offline"):
        checks_of(spec, fetched=True)


def test_a_mirror_without_the_repo_names_the_study_files_folder(hworld, monkeypatch):
    (hworld / "mirror").mkdir()
    monkeypatch.setenv(HUB_MODELS_ENV, str(hworld / "mirror"))
    spec = load_study_file(hworld / "sub" / "study_hub_init.yaml")
    with pytest.raises(
        UserError, match=rf"and there is no folder {re.escape(str(hworld / 'sub'))}/someone/enc; "
    ):
        check_hub_ids(spec)


def test_a_hub_id_that_is_a_folder_beside_the_study_file_or_cached_is_not_refused(hworld, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_folder(hworld / "sub" / "someone")  # sub/someone/model: not the id yet
    (hworld / "sub" / "someone" / "model").rename(hworld / "sub" / "someone" / "enc")
    spec = load_study_file(hworld / "sub" / "study_hub_init.yaml")
    assert spec.run("b").init == str(hworld / "sub" / "someone" / "enc")
    check_hub_ids(spec)


def test_the_study_files_folder_is_never_recorded(hworld):
    """`StudySpec.folder` says where the file was read from: not in study.json, keys or `study show`."""
    from encoderlab.config import to_dict
    from encoderlab.study.files import dump_study

    spec = load_study_file(hworld / "sub" / "study_hub_init.yaml")
    assert spec.folder == str(hworld / "sub")
    assert "folder" not in to_dict(spec) and "\nfolder:" not in dump_study(spec)
    (hworld / "sub" / "with_folder.yaml").write_text(
        (hworld / "sub" / "study_hub_init.yaml").read_text() + f"folder: {hworld}\n"
    )
    with pytest.raises(UserError, match=r"unknown field folder"):
        load_study_file(hworld / "sub" / "with_folder.yaml")


def test_a_hub_id_the_hub_cannot_give_is_refused_before_the_studys_assets_are_fetched(
    hworld, capsys, monkeypatch
):
    """The hub ids were checked only once the study's assets were fetched: `study run paper1-cpt --scale
    gpu-210m` offline fetched minilm and smollm2-135m (minutes, 600 MB into ENCODERLAB_HOME), then refused
    its EuroBERT tokenizer. Here the fetch would write into ENCODERLAB_HOME, which the refusal must not."""
    from encoderlab.data import assets

    study = yaml.safe_load((hworld / "sub" / "study_hub_init.yaml").read_text())
    study["cka"] = [{"a": "a", "b": "b", "texts": "moby-dick"}]  # an asset the study fetches
    (hworld / "sub" / "study_hub_init.yaml").write_text(yaml.safe_dump(study, sort_keys=False))

    def fetch(names, *args, **kwargs):  # as a real fetch would: into ENCODERLAB_HOME
        for name in names:
            (hworld / "home" / "assets" / name).mkdir(parents=True)

    monkeypatch.setattr(assets, "fetch", fetch)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    pattern = OFFLINE.format(sub=re.escape(str(hworld / "sub")))
    command = "study run {w}/sub/study_hub_init.yaml --out {w}/s"
    assert_refused_untouched(hworld, capsys, monkeypatch, "study-hub-id-not-there", command, pattern)
