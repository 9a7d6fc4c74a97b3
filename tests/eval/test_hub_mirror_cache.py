"""A hub mirror's prepared Arrow cache follows its files: an edited data file is read again, an
unchanged mirror is not prepared twice (`hubmirror.mirror_state`)."""

from __future__ import annotations

import datasets
import pytest
from datasets import Dataset
from tests.eval import hub_fixtures as hub

from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

TRAIN = "data/train-00000-of-00001.parquet"


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    rows = Dataset.from_dict({"text": ["old one", "old two"], "label": [0, 1]})
    return hub.write_repo(tmp_path / "hub", "lab/tiny", {"default": {"train": (TRAIN, rows)}})


def _prepared(monkeypatch) -> list[str]:
    """The configs `datasets` prepares (writes an Arrow cache for) from now on."""
    seen: list[str] = []
    real = datasets.builder.DatasetBuilder._download_and_prepare

    def counted(self, *args, **kwargs):
        seen.append(self.config.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(datasets.builder.DatasetBuilder, "_download_and_prepare", counted)
    return seen


@pytest.mark.parametrize(
    "source",
    [HubSource("lab/tiny"), HubSource("lab/tiny", data_files=(("train", "data/train-*"),))],
    ids=["card-config", "data-files"],
)
def test_an_edited_file_of_a_mirror_with_a_card_is_read_again(mirror, source):
    assert (mirror / "README.md").read_text().count("configs") == 1  # the card declares `configs`
    assert load_hub(source)["train"]["text"] == ["old one", "old two"]
    Dataset.from_dict({"text": ["new one", "new two", "new three"], "label": [0, 1, 1]}).to_parquet(
        mirror / TRAIN
    )
    assert load_hub(source)["train"]["text"] == ["new one", "new two", "new three"]


def test_an_unchanged_mirror_is_prepared_once(mirror, monkeypatch):
    prepared = _prepared(monkeypatch)
    first = load_hub(HubSource("lab/tiny"))["train"]
    second = load_hub(HubSource("lab/tiny"))["train"]
    assert prepared == ["default"]
    assert second["text"] == first["text"] == ["old one", "old two"]
