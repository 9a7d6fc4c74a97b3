"""matplotlib is imported when a figure is drawn, not with the command: importing pyplot writes its font
cache and config folder into $HOME (or MPLCONFIGDIR), which a refused `analyze` or `advise` did too.

The three refused commands run one after another in one fresh interpreter (`refused`), which says after each
whether matplotlib is imported and what $HOME holds: once imported it stays so, and a written $HOME stays
written, so the command that did it is the first one whose answer shows it. A fresh interpreter per command
spent most of its CPU importing torch three times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

COMMANDS = {
    "curves": ["analyze", "curves", "{t}/nope.yaml", "--out", "{t}/o"],
    "cka": ["analyze", "cka", "{t}/nope", "{t}/nope", "--texts", "{t}/t.txt", "--out", "{t}/o"],
    "advise": ["advise", "{t}/nope.csv", "--out", "{t}/o", "--target-flops", "1e18"],
}

CHILD = """
import json, os, sys, tempfile
from encoderlab.cli import main

answers = {}
for name, argv in json.loads(sys.argv[1]).items():
    with tempfile.TemporaryFile() as err:  # fd 2 itself: whatever writes there, Python or not
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        code = 0
        try:
            main(argv)
        except SystemExit as e:
            code = e.code
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        err.seek(0)
        said = err.read().decode()
    home = sorted(os.listdir(os.environ["HOME"]))
    answers[name] = {"matplotlib": "matplotlib" in sys.modules, "code": code, "stderr": said, "home": home}
print(json.dumps(answers), flush=True)
"""


@pytest.fixture(scope="module")
def refused(tmp_path_factory) -> tuple[dict, dict[str, Path]]:
    """(each command's answer, each command's own scratch folder): the COMMANDS run in order in one fresh
    interpreter with an empty $HOME and no matplotlib settings."""
    root = tmp_path_factory.mktemp("lazy_matplotlib")
    home = root / "home"
    home.mkdir()
    folders = {name: root / name for name in COMMANDS}
    for folder in folders.values():
        folder.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")
    }
    env.update(HOME=str(home), PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}")
    argvs = {name: [a.format(t=folders[name]) for a in argv] for name, argv in COMMANDS.items()}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argvs)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), folders


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_refused_command_leaves_home_empty_and_matplotlib_unimported(refused, name):
    answers, folders = refused
    said = answers[name]
    assert (said["matplotlib"], said["code"]) == (False, 2), said
    assert said["stderr"].startswith("encoderlab: error: ") and said["stderr"].count("\n") == 1, said[
        "stderr"
    ]
    assert said["home"] == []  # was .cache/matplotlib/fontlist-*.json and .config/matplotlib
    assert not (folders[name] / "o").exists()
