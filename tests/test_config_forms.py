"""A config value of the wrong shape names the form to give (`configforms`): a list field given one value, a
mapping or section given a value, a value given a list or mapping. Each said only "expected a list, got 5",
"expected a mapping ..., got 64" or "expected int, got [3]; give a whole number such as 1000", which did not
say that the brackets were the trouble. One line each, the problem kept apart from the fix (`problem_of`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from encoderlab.config import from_dict
from encoderlab.errors import UserError, WrongType, problem_of


@dataclass
class _Section:
    seq_len: int = 8
    world_size: int = 1


@dataclass
class _Shapes:
    sizes: list[int] = field(default_factory=list)
    sinks: tuple[Literal["tensorboard", "wandb"], ...] = ()
    names: list[str] = field(default_factory=list)
    rate: float = 0.1
    seed: int = 0
    quiet: bool = False
    options: dict = field(default_factory=dict)
    section: _Section = field(default_factory=_Section)


LIST_FORM = "[a, b] on one line or one '- ' line per item"
MAPPING_FORM = "give one 'name: value' line per entry below it, or {name: value} on one line"

CASES = [
    ({"sizes": 5}, f"sizes: expected a list, got 5; give a list: [5] for this one value, {LIST_FORM}"),
    ({"sinks": "wandb"}, f"sinks: expected a list, got 'wandb'; give a list: [wandb] for this one value, {LIST_FORM}"),
    ({"names": True}, f"names: expected a list, got True; give a list: {LIST_FORM}"),  # [true] is no name
    ({"sizes": {"a": 1}}, f"sizes: expected a list, got the mapping {{'a': 1}}; give a list: {LIST_FORM}"),
    ({"seed": [3]}, "seed: expected int, got the list [3]; write 3 without the brackets (one value, not a list)"),
    ({"quiet": [True]}, "quiet: expected bool, got the list [True]; write true without the brackets (one value, not a list)"),
    ({"rate": [0.1, 0.2]}, "rate: expected float, got the list [0.1, 0.2]; give one value, a number such as 3e-4, not a list"),
    ({"seed": ["x"]}, "seed: expected int, got the list ['x']; give one value, a whole number such as 1000, not a list"),
    ({"rate": {"lr": 1}}, "rate: expected float, got the mapping {'lr': 1}; give one value, a number such as 3e-4, not a mapping"),
    ({"options": 5}, f"options: expected a mapping, got 5; {MAPPING_FORM}"),
    ({"section": 64}, f"section: expected a mapping of _Section fields, got 64; {MAPPING_FORM} (fields: seq_len, world_size)"),
    ({"section": [64]}, f"section: expected a mapping of _Section fields, got the list [64]; {MAPPING_FORM} (fields: seq_len, world_size)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "line"), CASES, ids=[f"{next(iter(d))}={d[next(iter(d))]!r}" for d, _ in CASES]
)
def test_a_value_of_the_wrong_shape_names_the_form_to_give(data, line):
    with pytest.raises(WrongType) as refused:
        from_dict(_Shapes, data, "t.yaml")
    assert str(refused.value) == f"t.yaml: {line}"
    assert problem_of(refused.value) == f"t.yaml: {line.split('; ')[0]}"  # the fix kept apart


def test_a_one_item_list_of_the_right_form_is_taken():
    """The fix given is one the load takes: `[5]` for `sizes: 5`."""
    assert from_dict(_Shapes, {"sizes": [5], "sinks": ["wandb"], "section": {"seq_len": 4}}).sizes == [5]


def test_a_study_files_section_of_the_wrong_shape_names_the_form(tmp_path):
    """A study file's sections are read by their own builder (`study/files.py`), which names the same forms."""
    from encoderlab.study.files import load_study_file

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nruns: 5\n")
    with pytest.raises(
        UserError, match=rf"runs: expected a list, got 5; give a list: {LIST_FORM}".replace("[", r"\[")
    ):
        load_study_file(path)
