"""README.md's quickstart runs as written (issue 18, item 5).

The bash block and the Python block of the `## Quickstart` section are parsed out of README.md,
so the test follows every edit of the README and the README cannot drift from what works. Each
command line goes through `encoderlab.cli.main` as typed (comments stripped), in a scratch folder.

What differs from a user's machine is only size and the network, listed here (`SIZES`):
  * assets: `wiki-leads`, `tweets`, `wnut16` and `brown-pos` (the demo's tagging task) are small stand-ins in the real record schemas,
    written into a private $ENCODERLAB_HOME with valid manifests, so `assets fetch` finds them
    fetched (the real fetch is tested in tests/data/test_assets_fetch.py);
  * fine-tuning: `tweets` and `wnut16` train 10 steps instead of their pocket protocol;
  * the study's `demo` scale: 4 pretraining steps, 1 LR x 1 seed, 2 fine-tuning steps.
"""

from __future__ import annotations

import dataclasses
import random
import re
import shlex
from pathlib import Path

import pytest
from tests.eval.conftest import FILLER, NAMES, TOPICS

from encoderlab.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"

SIZES = {
    "finetune_steps": 10,
    "demo": dict(steps=4, max_docs=200, vocab_size=600, lrs=(5e-4,), seeds=(0,), finetune_steps=2),
}

WORDS = [*FILLER, *NAMES, *TOPICS]


def quickstart() -> tuple[list[str], str]:
    """(command lines of the bash block, source of the Python block) of README's Quickstart."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quickstart") :]
    section = section[: section.index("\n## ", 3)]
    bash = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in bash.splitlines()]
    return [line for line in lines if line], python


def _write_assets(home: Path) -> None:
    from tests.eval.fixtures import write_asset

    rng = random.Random(0)
    prose = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) + "." for _ in range(200)]
    write_asset(home, "wiki-leads", [{"id": f"wiki-leads/{i}", "text": t} for i, t in enumerate(prose)])
    moods = {"positive": "good great fine", "negative": "bad awful poor", "neutral": "the a of"}
    tweets = []
    for i in range(240):
        label = list(moods)[i % 3]
        text = " ".join(rng.choice(WORDS) for _ in range(8)) + " " + rng.choice(moods[label].split())
        tweets.append({"id": str(i), "text": text, "meta": {"label": label, "confidence": 1.0}})
    write_asset(home, "tweets", tweets)
    wnut = []
    for i in range(120):
        tokens = [rng.choice(WORDS) for _ in range(6)] + ["paris"]
        tags = ["O"] * 6 + ["B-geo-loc"]
        wnut.append({"id": str(i), "text": " ".join(tokens), "meta": {"tokens": tokens, "tags": tags}})
    write_asset(home, "wnut16", wnut)
    tagged = {"nn": NAMES, "jj": ["good", "bad", "awful"], "at": ["the", "a"], "nn-tl": TOPICS}
    brown = []
    for i in range(160):
        tags = [rng.choice(list(tagged)) for _ in range(8)]
        tokens = [rng.choice(tagged[t]) for t in tags]
        meta = {"tokens": tokens, "tags": tags, "genre": "news", "doc": f"ca{i // 8:02d}"}
        brown.append({"id": f"ca{i // 8:02d}-{i % 8}", "text": " ".join(tokens), "meta": meta})
    write_asset(home, "brown-pos", brown)


@pytest.fixture
def tiny_world(tmp_path, monkeypatch):
    from encoderlab.eval.tasks import TASKS
    from encoderlab.study.scales import SCALES

    _write_assets(tmp_path / "home")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for name in ("tweets", "wnut16"):
        task = TASKS[name]
        short = dataclasses.replace(task.finetune, max_steps=SIZES["finetune_steps"])
        monkeypatch.setitem(TASKS, name, dataclasses.replace(task, finetune=short))
    monkeypatch.setitem(SCALES, "demo", dataclasses.replace(SCALES["demo"], **SIZES["demo"]))
    return tmp_path


@pytest.mark.slow
def test_the_quickstart_runs_as_written(tiny_world, capsys):
    commands, python = quickstart()
    assert commands and all(c.startswith("encoderlab ") for c in commands), commands
    for command in commands:
        code = 0
        try:
            main(shlex.split(command)[1:])
        except SystemExit as exc:
            code = exc.code
        assert code == 0, f"{command!r} failed: {capsys.readouterr().err}"
    assert (tiny_world / "runs" / "hf" / "README.md").is_file()  # the model card, with the eval scores
    assert "| tweets |" in (tiny_world / "runs" / "hf" / "README.md").read_text()
    assert (tiny_world / "runs" / "demo" / "report" / "report.md").is_file()
    exec(compile(python, str(README), "exec"), {"__name__": "readme"})
    assert "Estimate(mean=" in capsys.readouterr().out


def test_the_quickstart_is_found():
    commands, python = quickstart()
    assert any(c.startswith("encoderlab pretrain") for c in commands)
    assert "pretrain(" in python and "evaluate(" in python
