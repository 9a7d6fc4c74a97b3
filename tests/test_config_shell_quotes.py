"""The fix of a text value YAML read as another type names the quotes in the form its source needs.

`--param freeze=7` was refused with `quote it ("7") to give it as text`: typed as `freeze="7"`, the shell
strips those quotes and the same refusal came back; only `freeze='"7"'` works. A command-line value now
gets the shell's form, a YAML file's value YAML's. Each hint is followed here as a shell would read it
(`shlex.split`), so a form the shell undoes fails the test.
"""

from __future__ import annotations

import re
import shlex

import pytest

from encoderlab.config import apply_overrides, load_yaml, save_yaml
from encoderlab.errors import UserError
from encoderlab.train.config import RunConfig
from encoderlab.train.recipes import build_recipe


def _typed_fix(line: str) -> str:
    """The `key=value` a refusal's fix says to type, as the shell passes it on (quotes undone)."""
    found = re.search(r"quote it inside the shell's quotes to give it as text: (\S+)$", line)
    assert found, line
    (item,) = shlex.split(found.group(1))
    return item


@pytest.mark.parametrize("raw, kind", [("7", "number"), ("[M]", "list"), ("yes", "boolean")])
def test_a_set_value_hint_gives_the_shell_form_and_following_it_works(raw, kind):
    cfg = build_recipe("smoke-mlm", [])
    with pytest.raises(UserError) as refused:
        apply_overrides(cfg, [f"model.mask_token={raw}"])
    line = str(refused.value)
    assert line.startswith("model.mask_token: expected str, got "), line
    item = _typed_fix(line)
    assert item.startswith("model.mask_token=")
    assert apply_overrides(cfg, [item]).model.mask_token == raw


def test_a_param_hint_names_the_param_and_an_indexed_set_its_path():
    with pytest.raises(UserError) as refused:
        build_recipe("detour", ["freeze=7"])
    item = _typed_fix(str(refused.value))
    assert item == 'freeze="7"'
    assert build_recipe("detour", [item]).phases[0].freeze == "7"
    cfg = build_recipe("smoke-detour", [])
    with pytest.raises(UserError) as refused:
        apply_overrides(cfg, ["phases.0.freeze=7"])
    item = _typed_fix(str(refused.value))
    assert apply_overrides(cfg, [item]).phases[0].freeze == "7"


def test_a_yaml_file_value_keeps_yaml_quotes(tmp_path):
    cfg = build_recipe("smoke-mlm", [])
    path = tmp_path / "run.yaml"
    save_yaml(cfg, path)
    text = path.read_text()
    assert "mask_token: ''" in text
    path.write_text(text.replace("mask_token: ''", "mask_token: 7"))
    with pytest.raises(UserError) as refused:
        load_yaml(RunConfig, path)
    assert str(refused.value).endswith('mask_token: expected str, got 7; quote it ("7") to give it as text')
    assert "shell" not in str(refused.value)


_PHASE = "{objective: {type: clm}, steps: 2, freeze: ITEM}"


@pytest.mark.parametrize("item, text", [("7", "7"), ("[low]", "[low]"), ("yes", "yes"), ("1e5", "1e5")])
def test_an_item_inside_a_typed_list_gets_the_whole_value_back_and_following_it_works(item, text):
    """`--set 'phases=[{..., freeze: 7}]'` was told YAML's `quote it ("7")` (and `'[low]'` for a list):
    inside the shell's single quotes that a flow value needs, `'[low]'` ends them and the shell passed the
    same value on again; a boolean's fix named no spelling at all. The fix is now the whole value, the item
    quoted in it, and typing it as the shell reads it (`shlex.split`) gives the item as written."""
    cfg = build_recipe("smoke-detour", [])
    typed = f"phases=[{_PHASE.replace('ITEM', item)}]"
    with pytest.raises(UserError) as refused:
        apply_overrides(cfg, [typed])
    line = str(refused.value)
    assert line.startswith("phases[0].freeze: expected str, got "), line
    found = re.search(r"quote it inside the shell's quotes to give it as text: (.+)$", line)
    assert found, line
    (fixed,) = shlex.split(found.group(1))
    assert fixed.startswith("phases=[{objective: {type: clm}, steps: 2, freeze: "), fixed
    assert apply_overrides(cfg, [fixed]).phases[0].freeze == text


def test_an_item_fix_keeps_the_rest_of_the_value_as_typed_with_its_own_quotes():
    """A value holding a single quote of its own (`name: 'x y'`) is still passed on whole by the shell."""
    cfg = build_recipe("smoke-detour", [])
    typed = "phases=[{objective: {type: clm}, steps: 2, name: 'a b', freeze: 7}]"
    with pytest.raises(UserError) as refused:
        apply_overrides(cfg, [typed])
    (fixed,) = shlex.split(str(refused.value).split("to give it as text: ", 1)[1])
    phase = apply_overrides(cfg, [fixed]).phases[0]
    assert (phase.name, phase.freeze) == ("a b", "7")
