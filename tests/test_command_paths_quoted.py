"""The commands that refusals give run as written for a folder whose path a shell would split (`paths.typed`,
as commit 7d1de69b did for `study status`): `encoderlab study run /tmp/my study/out` ran `study run` on two
arguments. These refusals still wrote the path bare; each command is read back with `shlex.split`, as a
shell would, and must give the path as one argument."""

from __future__ import annotations

import re
import shlex

import pytest

from encoderlab.data.merge import _parts
from encoderlab.errors import UserError
from encoderlab.study.localmodels import check_model
from encoderlab.study.prepared import prepared_meta


def _command(line: str) -> list[str]:
    """The words of the first `encoderlab ...` command quoted in `line`, split as a shell splits them."""
    found = re.search(r"`(encoderlab [^`]*)`", line)
    assert found, line
    return shlex.split(found.group(1))


def test_a_gone_model_folders_refusal_reruns_the_study_folder_as_one_argument(tmp_path):
    study = tmp_path / "my study" / "out"
    with pytest.raises(UserError) as refused:
        check_model(str(tmp_path / "model"), "keyed", {}, study)
    assert _command(str(refused.value)) == ["encoderlab", "study", "run", str(study)]


def test_a_merge_without_parts_names_the_prepare_of_its_out_as_one_argument(tmp_path):
    out = tmp_path / "my data" / "merged"
    with pytest.raises(UserError) as refused:
        _parts(out)
    assert _command(str(refused.value))[-1] == str(out)


def test_a_prepared_folder_without_meta_names_the_prepare_of_it_as_one_argument(tmp_path):
    folder = tmp_path / "my data"
    folder.mkdir()
    with pytest.raises(UserError) as refused:
        prepared_meta(folder, "wiki")
    words = _command(str(refused.value))
    assert words[words.index("--out") + 1] == str(folder)
