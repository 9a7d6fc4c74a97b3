"""The suite's own pytest settings, checked by running pytest on a one-test sample.

CI shares its disk with earlier runs; the suite writes gigabytes of checkpoints under
pytest's temp root, so a passing test's folder must not outlive the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_a_passing_tests_temp_folder_is_removed_after_the_run(tmp_path):
    sample = tmp_path / "sample"
    sample.mkdir()
    (sample / "test_sample.py").write_text(
        "def test_writes(tmp_path):\n    (tmp_path / 'ckpt.bin').write_bytes(b'0' * 1024)\n"
    )
    root = tmp_path / "temproot"
    root.mkdir()
    env = {**os.environ, "PYTEST_DEBUG_TEMPROOT": str(root)}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-c",
        str(PYPROJECT),
        "--rootdir",
        str(sample),
        str(sample / "test_sample.py"),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=sample)
    assert proc.returncode == 0, proc.stdout[-2000:]
    left = [p.name for p in root.rglob("ckpt.bin")]
    assert left == [], f"a passing test's temp folder was kept: {left}"
