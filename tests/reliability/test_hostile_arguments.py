"""The hostile-input catalogue, argument and study-file cases (rows in docs/errors.md): numbers out of
range, devices that do not exist and study files whose values only a later node would have refused.

Each goes through `encoderlab.cli.main([...])` as a user's command line would and must exit 2 with
one `encoderlab: error:` line (a study file lists its problems on indented lines below it, as every
study-file error does), no traceback, and nothing created or changed. Each case failed on the code
before its fix: a traceback (a ZeroDivisionError, numpy's "expected non-negative integer", torch's
device parser), or a study that created its folder before a node refused the value.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.reliability.test_hostile_inputs import cli, snapshot

from encoderlab.model.io import save_model_folder


def _study_files(root: Path) -> None:
    """The demo paper1-pfs study as a file, and copies with one bad value each."""
    from encoderlab.config import to_dict
    from encoderlab.study.catalog import get_study

    base = to_dict(get_study("paper1-pfs", "demo"))
    edits = {
        "study_micro_batch0": lambda s: s.update(micro_batch=0),
    }
    for name, edit in edits.items():
        study = yaml.safe_load(yaml.safe_dump(base))  # a deep copy
        edit(study)
        (root / f"{name}.yaml").write_text(yaml.safe_dump(study, sort_keys=False))


@pytest.fixture(scope="module")
def aworld(tmp_path_factory):
    """A tiny model folder with its tokenizer, texts, and study files with one bad value each."""
    root = tmp_path_factory.mktemp("hostile-arguments")
    tok = make_tokenizer(vocabulary_texts())
    save_model_folder(tiny_model(len(tok)), root / "model", tok)
    _study_files(root)
    return root


# (id, argv with {w} for the shared folder, pattern of the error)
ARGUMENT_CASES = [
    (
        "recipe-micro-batch-zero",
        "pretrain --recipe pfs-mlm --param micro_batch_size=0 --out {w}/o",
        r"recipe parameter micro_batch_size must be >= 1, got 0; pass --param micro_batch_size=N",
    ),
    (
        "study-micro-batch-zero",
        "study plan {w}/study_micro_batch0.yaml",
        r"micro_batch must be >= 1 when set, got 0; give a positive micro_batch or null",
    ),
]


def assert_refused(code: int, err: str, pattern: str) -> None:
    """Exit 2, one error line (a study file's problems indented below it), no traceback."""
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert lines and lines[0].startswith("encoderlab: error: "), err
    assert all(line.startswith("  ") for line in lines[1:]), err
    assert re.search(pattern, err), err


@pytest.mark.parametrize("argv,pattern", [c[1:] for c in ARGUMENT_CASES], ids=[c[0] for c in ARGUMENT_CASES])
def test_bad_argument_is_refused_before_anything_is_written(aworld, capsys, monkeypatch, argv, pattern):
    monkeypatch.setenv("ENCODERLAB_HOME", str(aworld / "home"))  # no case may need a fetched asset
    monkeypatch.chdir(aworld)  # a default output folder would land here, and be seen
    before, top = snapshot(aworld), sorted(p.name for p in aworld.iterdir())
    code, err = cli(argv.format(w=aworld).split(), capsys)
    assert_refused(code, err, pattern)
    assert snapshot(aworld) == before, "a refused command changed or wrote files"
    assert sorted(p.name for p in aworld.iterdir()) == top, "a refused command made a folder"
