"""`python sigterm_study_script.py fake-study --out OUT`: the fake study (tests/study/fake_study.py) run
through `encoderlab.cli.main` as a command, so a signal meets the CLI's own handling and the study
runner's real worker processes (test_signals.py). `fake-study-fetching --out OUT --ready FILE`: the same
study missing an asset, whose fetch writes FILE and then waits to be interrupted, so that a test signals
it at a known moment rather than after a guessed delay (test_interrupted_study.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "study"))  # fake_study, as the study tests import it


def fake_study(out: Path, jobs: int = 2) -> None:
    """Run the fake study into OUT with JOBS worker processes."""
    from fake_study import backend, small_spec

    from encoderlab.study.runner import run_study

    run_study(small_spec(), out, backend(), progress=False, jobs=jobs)


def fake_study_fetching(out: Path, ready: Path) -> None:
    """Run the fake study into OUT, one asset missing; its fetch writes READY and waits for a signal."""
    import time

    from fake_study import backend, small_spec

    from encoderlab.data import assets
    from encoderlab.study.runner import run_study

    def fetch(names: list[str]) -> None:
        ready.write_text(" ".join(names))
        time.sleep(600)  # a slow download, until the test's Ctrl-C

    assets.fetch = fetch
    b = backend()
    b.required_assets = lambda spec: ["tweets"]
    run_study(small_spec(), out, b, progress=False)


if __name__ == "__main__":
    from encoderlab import cli

    cli.COMMANDS["fake-study"] = "__main__:fake_study"
    cli.COMMANDS["fake-study-fetching"] = "__main__:fake_study_fetching"
    cli.main(sys.argv[1:])
