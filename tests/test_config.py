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
        == f'task file t.yaml.labels[0]: expected str, got {value!r}; quote it ("{value}") to give it as text'
    )


def test_a_boolean_or_a_list_where_text_is_expected_keeps_the_plain_line():
    with pytest.raises(UserError, match=r"name: expected str, got True$"):
        from_dict(_Spec, {"name": True}, "t")
