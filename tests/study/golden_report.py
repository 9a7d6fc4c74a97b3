"""The report's numbers as data, to compare a fake study's report with a saved one.

`python tests/study/golden_report.py` writes tests/study/golden/fake_report.json from the fake study
(`fake_study.small_spec`) with the current code; test_golden_report.py checks the code still writes
the same numbers. Regenerate only for a change whose effect on the numbers is stated in CHANGELOG.
"""

from __future__ import annotations

import csv
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "fake_report.json"


def _section(md: str, title: str) -> list[str]:
    """The lines of a '## title' section of report.md."""
    lines = md.splitlines()
    start = lines.index(f"## {title}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line.strip()]


def report_numbers(study_dir: Path) -> dict:
    """What the report says with numbers: table, claims, figure data, results section of report.md."""
    report = Path(study_dir) / "report"
    results = json.loads((report / "results.json").read_text())
    figures = {p.stem: list(csv.DictReader(p.open())) for p in sorted((report / "figures").glob("*.csv"))}
    md = (report / "report.md").read_text()
    return {
        "table": results["table"],
        "claims": results["claims"],
        "figures": figures,
        "results_md": _section(md, "Results"),
        "claims_md": _section(md, "Claims of the study at this scale"),
    }


def make_fake_report(out: Path) -> dict:
    from fake_study import backend, small_spec

    from encoderlab.study.report import write_report
    from encoderlab.study.runner import run_study

    run_study(small_spec(), out, backend(), progress=False)
    write_report(out)  # with figures
    return report_numbers(out)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    with tempfile.TemporaryDirectory() as tmp:
        numbers = make_fake_report(Path(tmp))
    GOLDEN.write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
