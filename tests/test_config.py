"""config.coerce: a value of the wrong type is one line that names the field and the fix."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from encoderlab.config import from_dict
from encoderlab.errors import UserError


@dataclass
class _Spec:
    labels: tuple[str, ...] = ()
    name: str = "x"


@pytest.mark.parametrize("value", [0, 1.5])
def test_a_number_where_text_is_expected_names_the_quoting_fix(value):
    # was "labels[0]: expected str, got 0": YAML reads `labels: [0, 1]` as numbers, and the line
    # did not say that quoting them (`labels: ["0", "1"]`, as docs/evaluation.md writes) is the fix
    with pytest.raises(UserError) as err:
        from_dict(_Spec, {"labels": [value, "b"]}, "task file t.yaml")
    assert (
        str(err.value)
        == f'task file t.yaml: labels[0]: expected str, got {value!r}; quote it ("{value}") to give it as text'
    )


def test_a_boolean_or_a_list_where_text_is_expected_keeps_the_plain_line():
    with pytest.raises(UserError, match=r"name: expected str, got True$"):
        from_dict(_Spec, {"name": True}, "t")


@dataclass
class _Outer:
    inner: _Spec
    seed: int = 0


def test_a_field_right_below_a_file_is_not_read_as_part_of_its_name():
    # was "t.yaml.seed: expected int", read as a file named t.yaml.seed
    with pytest.raises(UserError, match=r"^t\.yaml: seed: expected int, got 'lots'$"):
        from_dict(_Outer, {"inner": {}, "seed": "lots"}, "t.yaml")
    with pytest.raises(UserError, match=r"^t\.yaml: inner\.name: expected str, got True$"):
        from_dict(_Outer, {"inner": {"name": True}}, "t.yaml")
    with pytest.raises(
        UserError, match=r"^run\.inner\.name: expected str"
    ):  # below a field: dotted, as before
        from_dict(_Outer, {"inner": {"name": True}}, "run")


def test_an_unknown_field_names_the_field_it_is_close_to():
    # was "unknown field(s) lables, colour; valid: labels, name": the typo was left to the reader
    with pytest.raises(
        UserError, match=r"^t\.yaml: unknown field\(s\) colour, lables \(labels\?\); valid: labels, name$"
    ):
        from_dict(_Spec, {"lables": ["a"], "colour": "red"}, "t.yaml")
