"""A `data.path` that does not exist names the folder a relative one was read from (commit a50d44ad's second
branch, which the catalogue's `no-data` case, an absolute path, does not reach). Before, both said "is not a
folder; run `encoderlab data prepare` first" of a path that is nothing."""

from __future__ import annotations

import re

import pytest

from encoderlab.errors import UserError
from encoderlab.train.build import prepared_meta
from encoderlab.train.config import DataConfig


def test_a_relative_data_path_that_does_not_exist_names_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as refused:
        prepared_meta(DataConfig(path="prepared/wiki"))
    said = (
        f"data.path prepared/wiki does not exist (read from the working directory, {tmp_path}); give the folder "
        "`encoderlab data prepare --out` wrote, or prepare one there first"
    )
    assert str(refused.value) == said
    assert list(tmp_path.iterdir()) == []  # refused before anything is made


def test_an_absolute_one_names_no_working_directory(tmp_path):
    with pytest.raises(UserError, match=re.escape(f"data.path {tmp_path / 'nope'} does not exist; give")):
        prepared_meta(DataConfig(path=str(tmp_path / "nope")))
