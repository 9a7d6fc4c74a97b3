"""Names outside an id: one ending in a line break is refused like any other character; é is named
as outside ASCII.

`ID`, `FOLDER_NAME` (`study/spec.py`) and a task file's `NAME` (`eval/tasks/custom.py`) were anchored
with `$`, which also matches before a final line break, so a YAML block scalar (`name: |`) or a quoted
`"mlm\\n"` passed: the plan printed the run's row over two lines, the study named its default folder
`runs/mini\\n-custom`, and the report's tables broke, which is what those patterns exist to prevent.
"""

from __future__ import annotations

import pytest
import yaml
from tests.reliability.test_hostile_arguments import write_texts

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.study.files import load_study_file

STUDY = {
    "name": "mini",
    "data": [{"name": "main", "corpus": ["texts.txt"], "vocab_size": 300}],
    "runs": [
        {"name": "a", "recipe": "smoke-mlm"},
        {"name": "b", "recipe": "smoke-clm"},
    ],
    "baseline": "a",
    "claims": [{"id": "x", "kind": "beats", "a": "a", "b": "b", "text": "t"}],
}


def _with_line_break(field: str) -> tuple[dict, str]:
    """STUDY with the name `field` given a final line break, and that name."""
    study = yaml.safe_load(yaml.safe_dump(STUDY))
    if field == "study name":
        study["name"] = name = "mini\n"
    elif field == "run name":
        study["runs"][1]["name"] = study["claims"][0]["b"] = name = "b\n"
    elif field == "dataset name":
        study["data"][0]["name"] = name = "main\n"
        for run in study["runs"]:
            run["data"] = name
    else:
        study["claims"][0]["id"] = name = "x\n"
    return study, name


@pytest.mark.parametrize("field", ["study name", "run name", "dataset name", "claim id"])
def test_a_name_ending_in_a_line_break_is_refused(tmp_path, field):
    write_texts(tmp_path)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(STUDY))
    load_study_file(tmp_path / "s.yaml")  # the study as written loads: only the line break is refused
    study, name = _with_line_break(field)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(UserError) as exc:
        load_study_file(tmp_path / "s.yaml")
    assert f"{field} {name!r} may hold only" in str(exc.value)  # repr: 'b\\n', the break shown


def test_a_task_name_ending_in_a_line_break_is_refused(tmp_path):
    (tmp_path / "t.yaml").write_text(
        "name: |\n  polarity\nfamily: sc\ndata: {train: train.csv, test: test.csv}\n"
        "columns: {text: review, label: stars}\nlabels: [bad, good]\n"
    )
    with pytest.raises(UserError, match=r"name 'polarity\\n' may hold only ASCII letters"):
        task_from_file(tmp_path / "t.yaml")


def test_a_name_with_a_letter_outside_ascii_says_ascii(tmp_path):
    """`clmé` was refused as holding something other than "letters", which é is: the line says ASCII."""
    write_texts(tmp_path)
    study = yaml.safe_load(yaml.safe_dump(STUDY))
    study["runs"][1]["name"] = study["claims"][0]["b"] = "clmé"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study, allow_unicode=True), encoding="utf-8")
    with pytest.raises(UserError, match=r"run name 'clmé' may hold only ASCII letters, digits"):
        load_study_file(tmp_path / "s.yaml")
