"""`python sigterm_study_script.py fake-study --out OUT`: the fake study (tests/study/fake_study.py) run
through `encoderlab.cli.main` as a command, so a signal meets the CLI's own handling and the study
runner's real worker processes (test_signals.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "study"))  # fake_study, as the study tests import it


def fake_study(out: Path, jobs: int = 2) -> None:
    """Run the fake study into OUT with JOBS worker processes."""
    from fake_study import backend, small_spec

    from encoderlab.study.runner import run_study

    run_study(small_spec(), out, backend(), progress=False, jobs=jobs)


if __name__ == "__main__":
    from encoderlab import cli

    cli.COMMANDS["fake-study"] = "__main__:fake_study"
    cli.main(sys.argv[1:])
