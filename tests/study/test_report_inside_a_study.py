"""`study report` given a folder inside a study folder (its report/, a node's folder) names the study folder.

It said "S/report is not a study folder (no study.json/graph.json); run: encoderlab study run NAME --out
S/report", a fix that would start a second study inside the first (and that `study run` refuses).
"""

from __future__ import annotations

from tests.reliability.test_hostile_arguments import assert_refused_untouched


def test_a_folder_inside_a_study_folder_names_the_study_folder(tmp_path, capsys, monkeypatch):
    (tmp_path / "s" / "report").mkdir(parents=True)
    (tmp_path / "s" / "study.json").write_text("{}")
    assert_refused_untouched(
        tmp_path,
        capsys,
        monkeypatch,
        "report-inside-a-study",
        "study report {w}/s/report",
        rf"{tmp_path}/s/report lies inside the study folder {tmp_path}/s and is not one itself; give {tmp_path}/s$",
    )
