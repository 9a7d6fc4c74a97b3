"""matplotlib is imported when a figure is drawn, not with the command: importing pyplot writes its font
cache and config folder into $HOME (or MPLCONFIGDIR), which a refused `analyze` or `advise` did too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "curves", "{t}/nope.yaml", "--out", "{t}/o"],
        ["analyze", "cka", "{t}/nope", "{t}/nope", "--texts", "{t}/t.txt", "--out", "{t}/o"],
        ["advise", "{t}/nope.csv", "--out", "{t}/o", "--target-flops", "1e18"],
    ],
    ids=["curves", "cka", "advise"],
)
def test_a_refused_command_leaves_home_empty_and_matplotlib_unimported(tmp_path, argv):
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")
    }
    env.update(HOME=str(home), PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}")
    code = (
        "import sys\nfrom encoderlab.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
        "    print('matplotlib' in sys.modules, e.code)\n"
    )
    args = [a.format(t=tmp_path) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.stdout.split() == ["False", "2"], proc.stdout + proc.stderr
    assert proc.stderr.startswith("encoderlab: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert list(home.iterdir()) == []  # was .cache/matplotlib/fontlist-*.json and .config/matplotlib
    assert not (tmp_path / "o").exists()
