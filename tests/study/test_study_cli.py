"""`encoderlab study ...` command lines: the study folder arguments of `report`, `status` and `plan --out`."""

from __future__ import annotations

import pytest

from encoderlab.cli import main

FIX = "give the folder `study run --out` wrote (runs/NAME-SCALE by default)"


def _refused(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    return err[0].removeprefix("encoderlab: error: ")


@pytest.mark.parametrize("command", ["report", "status"])
def test_a_file_given_as_the_study_folder_is_named_a_file(tmp_path, monkeypatch, capsys, command):
    """Was "cannot use some.json/study.json: Not a directory; choose another path or fix its permissions"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some.json").write_text("{}")
    assert (
        _refused(capsys, ["study", command, "some.json"]) == f"some.json is a file, not a study folder; {FIX}"
    )
    assert _refused(capsys, ["study", command, "some.json/s"]) == (
        f"some.json/s cannot be a study folder: some.json is a file; {FIX}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.json"]
    assert (tmp_path / "some.json").read_text() == "{}"


def test_plan_out_that_is_a_file_is_refused(tmp_path, monkeypatch, capsys):
    """Was planned as a folder without prepared data ("holds no finished prepared data"), exit 0."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some.json").write_text("{}")
    assert _refused(capsys, ["study", "plan", "paper1-pfs", "--out", "some.json"]) == (
        f"--out some.json is a file, not a study folder; {FIX}, or drop --out for estimated counts"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.json"]
