"""No file a command reads runs code: a YAML tag that builds a Python object, a dataset loading script, a
module in the working folder that a command's worker processes (and their own workers) or `bench
data`'s measuring processes would import, and a pickled weight file under torch's
`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`.

Each file below is crafted to write a marker file if its code ever ran. The YAML files (a config, a study
file, a task file) go through `yamltext.read_yaml`, a `SafeLoader`: the tag is refused in one line, as any
YAML error is. A hub dataset mirror folder holding a loading script (`datasets` ran those before 4.0, which
pyproject.toml's floor leaves out: tests/test_dependency_floors.py) is refused by `datasets` itself, and
the task's read says so in one line. Weights, checkpoints and tokenizers have their own tests
(tests/model/test_remote_code.py, tests/train/test_checkpoint_security.py, `pickle-weights`), as do
torch.compile's cache (test_compile_cache.py) and the assets' sdists (tests/data/test_assets_sdist.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.eval.fixtures import model_folder, sentiment_rows, write_csv, write_task_file
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

TAG = '!!python/object/apply:os.system ["touch {marker}"]'
CASES = {  # what the file is, the YAML holding the tag, the command reading it ({f}: the file)
    "config": ("model: {tag}\n", ["pretrain", "--config", "{f}", "--out", "{w}/o"]),
    "study file": ("name: {tag}\n", ["study", "plan", "{f}"]),
    "task file": ("name: {tag}\nfamily: sc\n", ["eval", "{w}/m", "--task-file", "{f}", "--out", "{w}/e"]),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_yaml_tag_that_builds_an_object_is_refused_and_runs_nothing(kind, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker, text_of, argv = tmp_path / "pwned", *CASES[kind]
    path = tmp_path / "file.yaml"
    path.write_text(text_of.format(tag=TAG.format(marker=marker)))
    before = world_state(tmp_path)
    code, err = cli([a.format(f=path, w=tmp_path) for a in argv], capsys)
    assert_one_line(code, err, rf"{kind} .*file.yaml is not valid YAML .*python/object/apply:os.system")
    assert not marker.exists()
    assert_unchanged(before)


def test_a_hub_mirror_with_a_loading_script_is_refused_and_runs_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mirror, marker = tmp_path / "hub" / "me" / "reviews", tmp_path / "pwned"
    rows = sentiment_rows(40, 0)
    write_csv(mirror / "train.csv", rows[:30])
    write_csv(mirror / "test.csv", rows[30:])
    (mirror / "reviews.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    columns = {"text": "sentence", "label": "polarity"}
    task = write_task_file(tmp_path, name="reviews", family="sc", data={"hub": "me/reviews"}, columns=columns)
    model = model_folder(tmp_path / "model")
    argv = [
        "eval",
        model,
        "--task-file",
        task,
        "--hub-data",
        tmp_path / "hub",
        "--out",
        tmp_path / "e",
        "--check",
    ]
    code, err = cli(argv, capsys)
    assert_one_line(code, err, r"cannot load me/reviews from .*: Dataset scripts are no longer supported")
    assert not marker.exists() and not Path(tmp_path / "e").exists()


SHADOW = """import os, pathlib, sys
pathlib.Path({marker!r}).write_text("ran")
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules[__name__]
import multiprocessing as _standard
sys.modules[__name__] = _standard
"""
"""A `multiprocessing` package that records its import, then hands over to the standard one."""


def _plant(folder: Path) -> Path:
    """A `multiprocessing/` in `folder` that writes the returned marker when imported."""
    marker = folder / "pwned"
    (folder / "multiprocessing").mkdir()
    (folder / "multiprocessing" / "__init__.py").write_text(SHADOW.format(marker=str(marker)))
    return marker


def test_a_module_in_the_working_folder_is_not_imported_by_a_commands_workers(tmp_path, capsys, monkeypatch):
    """`data tokenizer` trains in a spawned process, `python -c ...`, which put the working folder first on
    its path: a `multiprocessing/` there was imported in place of the standard one, and its code ran."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    marker = _plant(tmp_path)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    lines = (" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)) for i in range(300))
    (tmp_path / "corpus.txt").write_text("\n".join(lines) + "\n")
    argv = ["data", "tokenizer", "--source", "corpus.txt", "--vocab-size", "300", "--out", tmp_path / "t"]
    code, err = cli(argv, capsys)
    assert code == 0, err
    assert not marker.exists(), "a worker imported the working folder's multiprocessing"
    assert "PYTHONSAFEPATH" not in os.environ  # for the command's length only


def test_a_workers_own_workers_do_not_import_from_the_working_folder(tmp_path, monkeypatch):
    """A study's worker spawns `data prepare`'s pool: `PYTHONSAFEPATH` reaches the worker's own workers."""
    import multiprocessing

    from tests.reliability import spawn_chain

    from encoderlab import launchenv

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    marker = _plant(tmp_path)
    with launchenv.children_without_working_folder():
        process = multiprocessing.get_context("spawn").Process(target=spawn_chain.child)
        process.start()
        process.join()
    assert process.exitcode == 0
    assert not marker.exists(), "a worker's worker imported the working folder's multiprocessing"
    assert "PYTHONSAFEPATH" not in os.environ  # for the command's length only


PLANTED_JSON = """import os, pathlib, sys
pathlib.Path({marker!r}).write_text("ran")
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules[__name__]
import json as _standard
sys.modules[__name__] = _standard
"""
"""A `json.py` that records its import, then hands over to the standard one."""


def test_bench_datas_measuring_process_imports_nothing_from_the_working_folder(tmp_path, monkeypatch):
    """Each `bench data` measurement runs as `python -m encoderlab.bench.measure`, which put the working folder
    first on its path where PYTHONSAFEPATH does not reach (the Python API): the module's own
    `import json` ran a `json.py` planted there."""
    from tests.data.corpus_fixtures import corpus_records, write_jsonl

    from encoderlab.bench.data import FLOOR, _run_isolated
    from encoderlab.data.sources import SourceConfig
    from encoderlab.data.tokenizer import train_tokenizer

    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(20))
    train_tokenizer(SourceConfig(location=str(corpus)), 300, tmp_path / "tok", progress=False)
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "pwned"
    (tmp_path / "json.py").write_text(PLANTED_JSON.format(marker=str(marker)))
    result = _run_isolated(FLOOR, Path("corpus.jsonl"), Path("tok"), 1, Path("work"))
    assert result["tokens"] > 0
    assert not marker.exists(), "the measuring process imported the working folder's json.py"


def test_a_pickled_weight_file_runs_nothing_whatever_torchs_environment_says(tmp_path, monkeypatch):
    """The Python API's `allow_pickle=True` reads `pytorch_model.bin` with `torch.load(weights_only=True)`;
    torch's `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`, left set for another tool, must not turn that off
    (torch >= 2.6 lets it override only a call that does not name `weights_only`)."""
    import torch
    from tests.train.helpers import PlantedPayload, save_tiny_bert

    from encoderlab.errors import UserError
    from encoderlab.model.hub import read_hf_weights

    save_tiny_bert(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").unlink()
    marker = tmp_path / "pwned"
    torch.save({"w": PlantedPayload(marker)}, tmp_path / "m" / "pytorch_model.bin")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(UserError, match="cannot read .*pytorch_model.bin safely"):
        read_hf_weights(tmp_path / "m", allow_pickle=True)
    assert not marker.exists()
