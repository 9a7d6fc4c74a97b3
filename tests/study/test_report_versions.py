"""The report folder across versions of a study: report/ is one folder for all of them."""

from __future__ import annotations

from dataclasses import replace

from fake_study import backend, small_spec

from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study


def test_a_figure_of_an_earlier_version_of_the_study_is_not_left_beside_its_report(tmp_path):
    """report/ is one folder for every version of a study: a CKA analysis removed from the study file, the
    report rebuilt no longer showed its figure, but figures/ kept its PNG and CSV, the removed analysis's
    numbers beside the report of a study that no longer has it."""
    out = tmp_path / "s"
    run_study(small_spec(), out, backend(), progress=False)
    write_report(out)  # with figures
    figures = out / "report" / "figures"
    cka = {p.name for p in figures.glob("cka*")}
    assert cka  # the CKA analysis's figure, as the first version drew it
    spec = small_spec()
    changed = replace(spec, cka=(), claims=tuple(c for c in spec.claims if c.kind != "cka_low_layers"))
    run_study(changed, out, backend(), progress=False)
    write_report(out)
    assert not cka & {p.name for p in figures.iterdir()}
    assert {p.stem for p in figures.glob("*.png")} == {p.stem for p in figures.glob("*.csv")}
    assert "figures/results.csv" in (out / "report" / "report.md").read_text()
