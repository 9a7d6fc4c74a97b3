"""config.coerce: a value of the wrong type is one line that names the field and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from encoderlab.config import KEYED_WHEN_SET, UNRECORDED, from_dict, to_dict
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


def test_a_boolean_where_text_is_expected_names_yamls_reading_and_the_fix():
    with pytest.raises(UserError, match=r"name: expected str, got True \(YAML reads .*\); quote it"):
        from_dict(_Spec, {"name": True}, "t")


@dataclass
class _Outer:
    inner: _Spec
    seed: int = 0


def test_a_field_right_below_a_file_is_not_read_as_part_of_its_name():
    # was "t.yaml.seed: expected int", read as a file named t.yaml.seed
    with pytest.raises(
        UserError, match=r"^t\.yaml: seed: expected int, got 'lots'; give a whole number such as 1000$"
    ):
        from_dict(_Outer, {"inner": {}, "seed": "lots"}, "t.yaml")
    with pytest.raises(UserError, match=r"^t\.yaml: inner\.name: expected str, got True \("):
        from_dict(_Outer, {"inner": {"name": True}}, "t.yaml")
    with pytest.raises(
        UserError, match=r"^run\.inner\.name: expected str"
    ):  # below a field: dotted, as before
        from_dict(_Outer, {"inner": {"name": True}}, "run")


def test_an_unknown_field_names_the_field_it_is_close_to():
    # was "unknown field(s) lables, colour; valid: labels, name": the typo was left to the reader
    with pytest.raises(
        UserError, match=r"^t\.yaml: unknown fields colour, lables \(labels\?\); valid: labels, name$"
    ):
        from_dict(_Spec, {"lables": ["a"], "colour": "red"}, "t.yaml")


def test_a_key_given_twice_is_refused_at_any_depth_and_a_merge_may_still_override(tmp_path):
    """Was: PyYAML kept the last of two `lr:` lines, silently (a config, study or task file)."""
    from encoderlab.config import read_mapping

    for text, line in [
        ("seed: 1\nseed: 2\n", r"key 'seed' is given twice \(lines 1 and 2\); keep one"),
        ("optim:\n  lr: 1.0e-4\n  lr: 3.0e-4\n", r"key 'lr' is given twice \(lines 2 and 3\)"),
        # was "(lines 2 and 2)"
        ("runs:\n  - {name: a, recipe: r, name: b}\n", r"key 'name' is given twice on line 2; keep one"),
    ]:
        (tmp_path / "c.yaml").write_text(text)
        with pytest.raises(UserError, match=rf"config file .*c.yaml: {line}"):
            read_mapping(tmp_path / "c.yaml")
    (tmp_path / "m.yaml").write_text("base: &b {x: 1, y: 2}\nrun:\n  <<: *b\n  y: 3\n")
    assert read_mapping(tmp_path / "m.yaml")["run"] == {"x": 1, "y": 3}


def test_valid_json_that_pyyaml_cannot_read_is_read_as_json(tmp_path):
    """A tab-indented JSON config (`json.dump(indent="\\t")`, Go's MarshalIndent) and one with an escaped
    slash were "not valid YAML (...); fix the syntax": PyYAML reads YAML 1.1, which JSON is not quite a
    subset of. A repeated key stays refused, and text that is neither keeps the YAML error."""
    import json

    from encoderlab.config import read_mapping

    config = {"seed": 3, "optim": {"lr": 0.001}, "out": "runs/a"}
    (tmp_path / "tabs.json").write_text(json.dumps(config, indent="\t"))
    (tmp_path / "slash.json").write_text('{"seed": 3, "optim": {"lr": 0.001}, "out": "runs\\/a"}')
    for name in ("tabs.json", "slash.json"):
        assert read_mapping(tmp_path / name) == config
    (tmp_path / "twice.json").write_text('{\n\t"seed": 1,\n\t"seed": 2\n}\n')
    with pytest.raises(UserError, match=r"^config file .*twice.json: key 'seed' is given twice; keep one$"):
        read_mapping(tmp_path / "twice.json")
    (tmp_path / "broken.json").write_text('{\n\t"seed": \n}\n')
    with pytest.raises(
        UserError,
        match=r"^config file .*broken.json is not valid YAML at line 2, column \d+: found character '\\t' .*; fix",
    ):
        read_mapping(tmp_path / "broken.json")


def test_an_empty_command_line_value_is_the_empty_text_not_null():
    """`--set model.init=` and `--param data=$DATA` with DATA unset: YAML's null for "", so a text field
    said "expected str, got None", a value nobody wrote. `null` still gives None."""
    from encoderlab.config import parse_scalar

    assert [parse_scalar(t) for t in ("", "  ", "null", "~", "1e-3", "abc")] == [
        "",
        "",
        None,
        None,
        0.001,
        "abc",
    ]


def test_a_required_value_left_empty_says_null_and_the_fix(tmp_path):
    """A study file's `- {name: , recipe: pfs-clm}` or `name: null` said "expected str, got None": Python's
    value, which nobody wrote, and no fix."""
    from encoderlab.config import coerce

    for tp in (str, int, float, bool):
        with pytest.raises(
            UserError, match=rf"^runs\[1\]\.name: expected {tp.__name__}, got null \(.*\); give it a value$"
        ):
            coerce(None, tp, "runs[1].name")


def test_an_override_on_through_a_value_is_one_line():
    """`layout.seq_len.x=1` was a TypeError traceback; `seed.a.b=1` said "no field 'a'; valid: none"."""
    from encoderlab.config import apply_overrides
    from encoderlab.train.recipes import build_recipe

    cfg = build_recipe("smoke-mlm")
    for item, parent in (("layout.seq_len.x=1", "layout.seq_len"), ("seed.a.b=1", "seed")):
        with pytest.raises(
            UserError, match=rf"is a value \(.*\), not a section with fields; set it as {parent}=VALUE$"
        ):
            apply_overrides(cfg, [item])


@dataclass
class _Options:
    options: dict


def test_a_list_where_a_plain_dict_is_expected_is_one_line():
    with pytest.raises(
        UserError,
        match=r"^t.yaml: options: expected a mapping, got the list \['pooling'\]; give one 'name: value' line per "
        r"entry below it, or \{name: value\} on one line$",
    ):
        from_dict(_Options, {"options": ["pooling"]}, "t.yaml")


def test_type_is_no_field_of_an_untagged_section_and_must_match_a_tagged_one():
    """`schedule: {type: cosine}` was dropped without a word (every mapping lost its `type`), and the
    run trained on the default constant schedule; a top-level `type:` likewise."""
    from encoderlab.train.config import RunConfig
    from encoderlab.train.recipes import build_recipe

    cfg = build_recipe("smoke-mlm")
    assert from_dict(RunConfig, to_dict(cfg)) == cfg  # the `type` to_dict writes for an objective reads back
    data = to_dict(cfg)
    data["phases"][0]["schedule"]["type"] = "cosine"
    with pytest.raises(UserError, match=r"^phases\[0\]\.schedule: unknown field type; valid: .*kind"):
        from_dict(RunConfig, data)
    with pytest.raises(UserError, match=r"^RunConfig: unknown field type; valid: "):
        from_dict(RunConfig, {**to_dict(cfg), "type": "run"})
    objective = type(cfg.phases[0].objective)
    with pytest.raises(UserError, match=r"^o: 'type' must be 'mlm' here, got 'clm'$"):
        from_dict(objective, {"type": "clm"}, "o")


def test_anchors_for_a_repeated_value_still_read():
    """The alias-expansion cap refuses a file that writes out into a flood, not an anchor reused."""
    from encoderlab.yamltext import read_yaml

    text = "base: &b {lr: 1.0e-4, steps: 10}\none: *b\ntwo: {<<: *b, steps: 20}\nlrs: &l [1, 2]\nagain: *l\n"
    data = read_yaml(text)
    assert data["one"] == {"lr": 1e-4, "steps": 10} and data["two"] == {"lr": 1e-4, "steps": 20}
    assert data["again"] == [1, 2]
    wide = "x: &x [" + ", ".join(["1"] * 1000) + "]\n" + "".join(f"k{i}: *x\n" for i in range(90))
    assert len(read_yaml(wide)) == 91  # 91,091 values written out: under the cap


def test_an_alias_flood_in_a_command_line_value_names_the_flag():
    """`--set`/`--param` values are read as YAML too, so a one-line flood reached the config walk."""
    from encoderlab.config import apply_overrides
    from encoderlab.train.recipes import build_recipe

    levels = ["&a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 8)]
    flood = "[" + ", ".join(levels) + "]"
    with pytest.raises(
        UserError, match=r"^override 'out' = '\[&a0 .*\.\.\.': its aliases \(\*name\) expand it"
    ):
        apply_overrides(build_recipe("smoke-mlm"), [f"out={flood}"])
    with pytest.raises(
        UserError, match=r"^recipe parameter 'steps' = '\{a: 1, a: 2\}': key 'a' is given twice"
    ):
        build_recipe("smoke-mlm", ["steps={a: 1, a: 2}"])


@pytest.mark.parametrize("what", ["task", "study"])
def test_an_alias_flood_in_a_task_or_study_file_is_one_line(tmp_path, capsys, what):
    from tests.reliability.hostile_world import LAUGHS

    from encoderlab.cli import main

    path = tmp_path / f"{what}.yaml"
    path.write_text("name: x\ndescription:\n" + "".join(f"  {line}\n" for line in LAUGHS.splitlines()))
    argv = ["eval", "m", "--task-file", str(path)] if what == "task" else ["study", "plan", str(path)]
    with pytest.raises(SystemExit):
        main(argv)
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"encoderlab: error: {what} file {path}: its aliases (*name) expand it to over 100,000 values; "
        + "write the values out, or use fewer aliases"
    )


def test_a_whole_float_is_an_integer_and_a_fraction_is_refused():
    """`--param steps=1e3` said "expected int, got 1000.0" with no fix, for exactly 1000."""
    from encoderlab.train.recipes import build_recipe

    assert (
        build_recipe("smoke-mlm", ["steps=1e3"]).total_steps
        == build_recipe("smoke-mlm", ["steps=1000"]).total_steps
    )
    assert from_dict(_Steps, {"steps": 2.0e4}).steps == 20000
    assert type(from_dict(_Steps, {"steps": 2.0e4}).steps) is int
    with pytest.raises(UserError, match=r"^steps: expected int, got 2.5; give a whole number such as 1000$"):
        from_dict(_Steps, {"steps": 2.5})
    with pytest.raises(UserError, match=r"^steps: expected int, got inf; give a whole number such as 1000$"):
        from_dict(_Steps, {"steps": float("inf")})


@dataclass
class _Steps:
    steps: int = 1


def test_yaml_booleans_and_dates_where_text_is_expected_name_the_quoting_fix():
    """`labels: [yes, no]` said "labels[0]: expected str, got True" and `name: 2024-01-01` "expected
    str, got datetime.date(2024, 1, 1)": YAML 1.1's readings, with no fix named."""
    from encoderlab.config import parse_scalar
    from encoderlab.yamltext import read_yaml

    with pytest.raises(
        UserError, match=r"^t\.labels\[0\]: expected str, got True \(YAML reads an unquoted yes/no"
    ):
        from_dict(_Spec, read_yaml("labels: [yes, no]"), "t")
    # the written spelling is lost: the fix fits `on` and `true` too (it said `quote it ("yes")` to them)
    for written in ("on", "true", "no"):
        with pytest.raises(UserError) as err:
            from_dict(_Spec, read_yaml(f"labels: [{written}]"), "t")
        assert str(err.value).endswith('boolean); quote it as written (e.g. "yes", "on") to give it as text')
    with pytest.raises(
        UserError, match=r'^t\.name: expected str, got the date 2024-01-01; quote it \("2024-01-01"\)'
    ):
        from_dict(_Spec, read_yaml("name: 2024-01-01"), "t")
    assert from_dict(_Spec, read_yaml('labels: ["yes", "no"]\nname: "2024-01-01"'), "t").labels == (
        "yes",
        "no",
    )
    assert parse_scalar("2024-01-01") == "2024-01-01"  # `--set out=2024-01-01`: no field is a date


def test_a_tilde_in_a_config_files_out_or_data_path_is_the_home_folder(tmp_path, monkeypatch):
    """`out: ~/runs/x` in a config file meets no shell: pretrain made a folder named `~` in the working
    folder (one `rm -rf ~` away from the real home)."""
    from encoderlab.config import apply_overrides
    from encoderlab.train.recipes import build_recipe

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cfg = apply_overrides(build_recipe("smoke-mlm"), ["out=~/runs/x", "data.path=~/data"])
    assert cfg.out == str(tmp_path / "home" / "runs" / "x")
    assert cfg.data.path == str(tmp_path / "home" / "data")


@dataclass(frozen=True, kw_only=True)
class _Inner:
    type_tag = "inner"
    where: Path = Path("a/b")


@dataclass(frozen=True, kw_only=True)
class _Written:
    n: int = 1
    inner: tuple[_Inner, ...] = (_Inner(),)
    extra: str = field(default="d", metadata=KEYED_WHEN_SET)
    folder: str | None = field(default=None, metadata=UNRECORDED)


def test_to_dict_writes_a_keyed_when_set_field_once_set_and_never_an_unrecorded_one():
    # to_dict reads each class's fields once (cached per type): both field kinds, nesting and tags still apply
    plain = {"n": 1, "inner": [{"type": "inner", "where": "a/b"}]}
    assert to_dict(_Written(folder="x")) == plain
    assert to_dict(_Written(extra="e")) == {**plain, "extra": "e"}
    assert to_dict(_Written(), complete=True) == {**plain, "extra": "d"}
    assert from_dict(_Written, to_dict(_Written(extra="e"))) == _Written(extra="e")


def test_an_exponent_without_a_dot_in_a_file_is_the_number_the_command_line_reads(tmp_path, capsys):
    # was: `lrs: [1e-3]` in a study file, `weight_decay: 1e-2` in a task file or `lr: 1e-4` in a config
    # was "expected float, got '1e-3'" (PyYAML reads YAML 1.1, where an exponent needs a dot and a sign),
    # though `--param lr=1e-3` read the number and YAML 1.2 and JSON read it so too
    from encoderlab.config import parse_scalar
    from encoderlab.eval.spec import FinetuneConfig
    from encoderlab.yamltext import read_yaml

    text = "a: 1e-3\nb: 1.0e5\nc: -.5e2\nd: [1e-4, 2E+4]\ne: '1e-3'\nf: 1e\ng: x1e3\nh: 1.5\ni: 7"
    assert read_yaml(text) == {
        "a": 0.001,
        "b": 100000.0,
        "c": -50.0,
        "d": [0.0001, 20000.0],
        "e": "1e-3",  # quoted: text, as written
        "f": "1e",
        "g": "x1e3",
        "h": 1.5,
        "i": 7,
    }
    assert read_yaml("lr: 1e-3") == {"lr": parse_scalar("1e-3")}
    assert (
        from_dict(FinetuneConfig, read_yaml("weight_decay: 1e-2\nmax_steps: 1e2"), "t").weight_decay == 0.01
    )
    assert yaml.safe_load("a: 1e-3") == {"a": "1e-3"}  # PyYAML's own loader is left as it is


@pytest.mark.parametrize("written", ["1e5", "1.0e+5", "-.5E2"])
def test_a_number_where_text_is_expected_is_quoted_as_written(written):
    # was 'quote it ("100000.0")' for `labels: [1e5]` or `--set name=1e5`: following it gave the
    # name "100000.0", not the "1e5" the user wrote
    from encoderlab.config import parse_scalar
    from encoderlab.yamltext import read_yaml

    line = f'labels[0]: expected str, got {written}; quote it ("{written}") to give it as text'
    with pytest.raises(UserError) as err:
        from_dict(_Spec, read_yaml(f"labels: [{written}, b]"), "task file t.yaml")
    assert str(err.value) == f"task file t.yaml: {line}"
    with pytest.raises(UserError) as err:
        from_dict(_Spec, {"labels": [parse_scalar(written), "b"]}, "task file t.yaml")
    assert str(err.value) == f"task file t.yaml: {line}"


def test_a_number_as_written_is_a_plain_float_in_a_config():
    from encoderlab.eval.spec import FinetuneConfig
    from encoderlab.yamltext import read_yaml

    value = from_dict(FinetuneConfig, read_yaml("weight_decay: 1e-2"), "t").weight_decay
    assert type(value) is float and value == 0.01


def test_a_number_as_written_dumps_as_the_float_it_is():
    # a float subclass that reached PyYAML's safe dumper was "cannot represent an object"
    from encoderlab.config import coerce
    from encoderlab.yamltext import read_yaml

    data = read_yaml("a: 1e5\nb: [2.5e-3]")
    assert yaml.safe_load(yaml.safe_dump(data)) == {"a": 100000.0, "b": [0.0025]}
    assert type(coerce(data, Any, "t")["b"][0]) is float


@pytest.mark.parametrize(("written", "value"), [("010", 8), ("0x1f", 31), ("1:30", 90), ("1_000", 1000)])
def test_an_int_written_otherwise_than_python_writes_it_is_quoted_as_written(written, value):
    # was 'quote it ("8")' for `labels: [010, b]` (YAML 1.1 reads 010 as octal 8): following it gave the
    # name "8", not the zero-padded code "010" the data holds
    from encoderlab.eval.spec import FinetuneConfig
    from encoderlab.yamltext import read_yaml

    with pytest.raises(UserError) as err:
        from_dict(_Spec, read_yaml(f"labels: [{written}, b]"), "task file t.yaml")
    assert str(err.value) == (
        f'task file t.yaml: labels[0]: expected str, got {written}; quote it ("{written}") to give it as text'
    )
    steps = from_dict(FinetuneConfig, read_yaml(f"max_steps: {written}"), "t").max_steps
    assert type(steps) is int and steps == value  # an int field reads it as the plain int it is
    data = read_yaml(f"a: {written}\nb: 12")
    assert yaml.safe_load(yaml.safe_dump(data)) == {"a": value, "b": 12}
    assert type(read_yaml("b: 12")["b"]) is int  # a plain spelling stays a plain int


def test_an_objectives_own_refusal_names_the_phase_it_is_in():
    """`mlm mask_ratio must be between 0 and 1` named no phase, from `--set` or a config file: a run of two
    MLM phases did not say which one held the bad ratio. It is said at its place now, as a bad
    `replacement` was already ("phases[1].objective.replacement: must be one of ...")."""
    from encoderlab.config import apply_overrides
    from encoderlab.train.recipes import build_recipe

    cfg = build_recipe("smoke-clm-mlm", [])
    with pytest.raises(UserError) as caught:
        apply_overrides(cfg, ["phases.1.objective.mask_ratio=1"])
    assert (
        str(caught.value)
        == "phases[1].objective: mlm mask_ratio must be between 0 and 1 (exclusive), got 1.0"
    )


@dataclass
class _Scalars:
    lr: float = 0.0
    steps: int = 0
    progress: bool = False


@pytest.mark.parametrize(
    "key, fix",
    [
        ("lr", "a number such as 3e-4"),
        ("steps", "a whole number such as 1000"),
        ("progress", "true or false"),
    ],
)
def test_a_scalar_of_the_wrong_type_names_the_form_to_give(key, fix):
    """`--set optim.lr=abc` said "expected float, got 'abc'" and no fix; each scalar type names its form."""
    kind = {"lr": "float", "steps": "int", "progress": "bool"}[key]
    with pytest.raises(UserError) as refused:
        from_dict(_Scalars, {key: "abc"}, "optim")
    assert str(refused.value) == f"optim.{key}: expected {kind}, got 'abc'; give {fix}"


def test_set_with_a_word_for_a_number_names_the_fix(tmp_path, capsys):
    from encoderlab.cli import main

    with pytest.raises(SystemExit) as done:
        main(["pretrain", "--recipe", "smoke-mlm", "--set", "optim.lr=abc", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2
    assert err == "encoderlab: error: optim.lr: expected float, got 'abc'; give a number such as 3e-4", err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "key, value, kind",
    [("lr", "1e-4", "float"), ("steps", "3", "int"), ("progress", "true", "bool")],
)
def test_a_scalar_written_in_quotes_names_the_quotes_to_drop(key, value, kind):
    """`progress: "true"` said "expected bool, got 'true'; give true or false", which it was: the fix is the
    quotes, which make it text."""
    with pytest.raises(UserError) as refused:
        from_dict(_Scalars, {key: value}, "optim")
    assert (
        str(refused.value)
        == f"optim.{key}: expected {kind}, got '{value}'; write {value} without quotes (quoted, it is text)"
    )
    for other in ("lots", "inf"):  # not a number, or one YAML reads as text unquoted too
        with pytest.raises(UserError, match=r"; give (a number|a whole number|true or false)"):
            from_dict(_Scalars, {key: other}, "optim")


@pytest.mark.parametrize("quoted", ['"7"', "'7'", '"1e-3"', "'010'"])
def test_a_value_quoted_on_the_command_line_is_the_text_as_written(quoted):
    """`--param freeze=7` was refused with `quote it ("7") to give it as text`; following it
    (`--param freeze='"7"'`) was refused again with the same line: the quoted text was turned back into
    the number 7.0, so no command-line value could be a name or layer spec that looks like a number."""
    from encoderlab.config import apply_overrides, parse_scalar
    from encoderlab.train.recipes import build_recipe

    text = quoted[1:-1]
    value = parse_scalar(quoted)
    assert type(value) is str and value == text
    assert type(parse_scalar(text)) is not str  # unquoted, it is still the number it reads as
    cfg = build_recipe("smoke-detour", [])
    with pytest.raises(UserError, match=r"to give it as text: freeze='\"7\"'$"):
        build_recipe("detour", ["freeze=7"])
    assert build_recipe("detour", ['freeze="7"']).phases[0].freeze == "7"
    assert apply_overrides(cfg, [f"model.mask_token={quoted}"]).model.mask_token == text
