"""README.md's quickstart runs as written (issue 18, item 5).

The bash block and the Python block of the `## Quickstart` section are parsed out of README.md,
so the test follows every edit of the README and the README cannot drift from what works. Each
command line goes through `encoderlab.cli.main` as typed (comments stripped), in a scratch folder.

What differs from a user's machine is only size and the network, listed here (`SIZES`):
  * assets: `wiki-leads`, `tweets`, `wnut16` and `brown-pos` (the demo's tagging task) are small stand-ins in the real record schemas,
    written into a private $ENCODERLAB_HOME with valid manifests, so `assets fetch` finds them
    fetched (the real fetch is tested in tests/data/test_assets_fetch.py);
  * pretraining: `smoke-clm-mlm` trains 20 steps instead of its 40 (still both phases, a checkpoint
    every 10 steps and the last step validated, as at 40);
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
from encoderlab.train.config import RunConfig

README = Path(__file__).resolve().parents[1] / "README.md"

SIZES = {
    "smoke_steps": 20,
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


def _smoke_clm_mlm(
    steps: int = SIZES["smoke_steps"], clm_fraction: float = 0.25, data: str = "synthetic"
) -> RunConfig:
    """`smoke-clm-mlm` of `SIZES`' steps by default: the recipe's parameters and types, as the command reads them."""
    from encoderlab.train.recipes import smoke_clm_mlm

    return smoke_clm_mlm(steps=steps, clm_fraction=clm_fraction, data=data)


@pytest.fixture
def tiny_world(tmp_path, monkeypatch):
    from encoderlab.eval.tasks import TASKS
    from encoderlab.study.scales import SCALES
    from encoderlab.train.recipes import RECIPES

    _write_assets(tmp_path / "home")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for name in ("tweets", "wnut16"):
        task = TASKS[name]
        short = dataclasses.replace(task.finetune, max_steps=SIZES["finetune_steps"])
        monkeypatch.setitem(TASKS, name, dataclasses.replace(task, finetune=short))
    monkeypatch.setitem(SCALES, "demo", dataclasses.replace(SCALES["demo"], **SIZES["demo"]))
    monkeypatch.setitem(RECIPES, "smoke-clm-mlm", _smoke_clm_mlm)
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


def cli_table_commands(text: str) -> set[tuple[str, ...]]:
    """The command words of every command README's `## CLI` table lists: a row's first span names the
    group (`encoderlab study list`), its other spans more commands of it (`plan NAME`, or `bench
    train` with the group repeated), `a\\|b` alternatives each; `encoderlab --version` is no command."""
    from encoderlab.cli import COMMANDS

    section = text[text.index("## CLI") :]
    section = section[: section.index("\n## ", 3)]
    found = set()
    for row in re.findall(r"^\| (.*?) \| ", section, re.M):
        spans = [s.split() for s in re.findall(r"`([^`]+)`", row)]
        if not spans or spans[0][0] != "encoderlab" or spans[0][1].startswith("--"):
            continue
        group = spans[0][1]
        if not isinstance(COMMANDS.get(group), dict):
            found.add((group,))
            continue
        for words in [spans[0][2:], *spans[1:]]:
            words = words[1:] if words and words[0] == group else words
            found |= {(group, w) for w in re.split(r"\\?\|", words[0]) if w} if words else set()
    return found


def test_the_cli_table_lists_every_command():
    """README's CLI table is where a newcomer looks for a command; one missing from it (or listed
    without existing) is found here, not by reading `--help`."""
    from tests.test_doc_commands import leaf_commands

    assert cli_table_commands(README.read_text(encoding="utf-8")) == set(leaf_commands())


def test_the_cli_table_reader_sees_rows():
    text = (
        "## CLI\n\n| command | what |\n|---|---|\n| `encoderlab assets list` / `fetch [NAME...\\|--all]` | x |\n"
        "| `encoderlab analyze cka\\|probe` | y |\n| `encoderlab bench data` / `bench train [--profile F]` | z |\n"
        "| `encoderlab recipes` | r |\n| `encoderlab --version` | v |\n\n## Next\n"
    )
    assert cli_table_commands(text) == {
        ("assets", "list"),
        ("assets", "fetch"),
        ("analyze", "cka"),
        ("analyze", "probe"),
        ("bench", "data"),
        ("bench", "train"),
        ("recipes",),
    }


def test_the_setup_names_make_targets_and_extras_that_exist():
    """README's set-up section runs `make test` / `make demo` and installs `.[dev]`, `.[track]`,
    `.[hub]`, `.[zstd]`; the docs point at `encoderlab[hub]` and the like. Each must be a Makefile
    target or a pyproject extra."""
    import tomllib

    root = README.parent
    targets = set(re.findall(r"^([\w-]+):", (root / "Makefile").read_text(encoding="utf-8"), re.M))
    extras = set(tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    docs = [README, *sorted((root / "docs").glob("*.md"))]
    text = "\n".join(p.read_text(encoding="utf-8") for p in docs)
    named = set(re.findall(r"`make ([\w-]+)`", text)) | {
        m for line, _ in bash_lines(README) for m in re.findall(r"^make ([\w-]+)", line)
    }
    wanted = set(re.findall(r"(?:\.|encoderlab)\[([\w-]+)\]", text))
    assert {"test", "demo"} <= named and {"dev", "hub"} <= wanted  # the reader still finds them
    assert named <= targets, sorted(named - targets)
    assert wanted <= extras, sorted(wanted - extras)


def bash_lines(path: Path) -> list[tuple[str, int]]:
    """(line, number) of every line in a ```bash block of `path`."""
    out, block = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            block = line.strip() == "```bash"
            continue
        if block:
            out.append((line, number))
    return out
