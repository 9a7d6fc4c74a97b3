"""A continued-pretraining run (`model.init` set) resumes from its own checkpoint, whatever its `init` path
holds now: moved or deleted, the resume was refused ("model source ... does not exist") as the model was
rebuilt from `init` before the checkpoint loaded; another model put there gave the run that model's shape.
Each resume is compared bit for bit with the same run uninterrupted, and says in one line that `init` is
not read."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tests.train.helpers import metrics, save_tiny_encoder, tiny_run

from encoderlab.config import load_yaml
from encoderlab.errors import UserError
from encoderlab.objectives import MLM
from encoderlab.train import Phase, pretrain
from encoderlab.train.config import ModelSpec, RunConfig

PHASES = (Phase(objective=MLM(mask_ratio=0.3), steps=4),)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted CPT run every resume is compared with."""
    root = tmp_path_factory.mktemp("whole")
    cfg = tiny_run(
        root / "run", phases=PHASES, model=ModelSpec(init=str(save_tiny_encoder(root / "init", seed=0)))
    )
    pretrain(cfg)
    return cfg


def _assert_same_run(cut, whole) -> None:
    assert [(r["step"], r["loss"]) for r in metrics(cut.out)] == [
        (r["step"], r["loss"]) for r in metrics(whole.out)
    ]
    wa, wb = (load_file(f"{run.out}/final/model.safetensors") for run in (whole, cut))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def _stopped(tmp_path: Path):
    """The same run stopped after step 2, from an init identical to the uninterrupted run's."""
    cfg = tiny_run(
        tmp_path / "run",
        phases=PHASES,
        model=ModelSpec(init=str(save_tiny_encoder(tmp_path / "init", seed=0))),
    )
    pretrain(cfg, until_step=2)
    return cfg


def _resume_note(err: str, cfg) -> str:
    [line] = [x for x in err.splitlines() if "model.init" in x]
    assert line.startswith("encoderlab: note: --resume: the model continues from ")
    assert f"model.init {cfg.model.init} is not read on resume" in line
    return line


@pytest.mark.parametrize("gone", ["moved", "deleted"])
def test_a_cpt_run_resumes_exactly_after_its_init_folder_is_gone(tmp_path, capsys, whole, gone):
    cut = _stopped(tmp_path)
    if gone == "moved":
        shutil.move(cut.model.init, tmp_path / "elsewhere")
    else:
        shutil.rmtree(cut.model.init)
    capsys.readouterr()
    pretrain(cut, resume=True)  # no --force: the config is unchanged
    _resume_note(capsys.readouterr().err, cut)
    _assert_same_run(cut, whole)


def test_another_model_put_at_the_init_path_changes_nothing_on_resume(tmp_path, capsys, whole):
    """Another architecture (and other weights) at the same path: the run goes on from its checkpoint, as
    the user who resumes it asked, and the note says the path is not read."""
    cut = _stopped(tmp_path)
    shutil.rmtree(cut.model.init)
    save_tiny_encoder(Path(cut.model.init), seed=1, hidden_size=64, n_layers=2)
    capsys.readouterr()
    pretrain(cut, resume=True)
    _resume_note(capsys.readouterr().err, cut)
    _assert_same_run(cut, whole)


def test_a_resume_keeps_the_start_model_its_run_recorded(tmp_path):
    """env.json's `start_model` (a hub id's commit, as a run from `org/name` records it) is what the run
    started from; a resume reads no start model, so it keeps the record rather than resolving the id again
    (another commit by then, or none offline), or dropping it, as here for a local `init`."""
    cut = _stopped(tmp_path)
    env = Path(cut.out) / "env.json"
    record = {"hub_id": "org/name", "commit": "0" * 40}
    env.write_text(json.dumps({**json.loads(env.read_text()), "start_model": record}))
    pretrain(cut, resume=True)
    assert json.loads(env.read_text())["start_model"] == record


@pytest.mark.parametrize("held", ["the same model", "another model"])
def test_a_resume_naming_the_moved_init_at_its_new_place_needs_no_force_if_it_holds_the_same_model(
    tmp_path, capsys, whole, held
):
    """The user moved the start model and set `model.init` to its new place: a changed config, refused until
    `--force` (which lets any other change by), of the very model the run started from. The checkpoints record
    its content (`build.init_identity`), so the same files at the new place resume with a note; other weights
    there are still a changed config."""
    cut = _stopped(tmp_path)
    moved = tmp_path / "moved"
    shutil.move(cut.model.init, moved)
    if held == "another model":
        shutil.rmtree(moved)
        save_tiny_encoder(moved, seed=1)  # the same shape, other weights
    edited = dataclasses.replace(cut, model=dataclasses.replace(cut.model, init=str(moved)))
    capsys.readouterr()
    if held == "another model":
        with pytest.raises(UserError, match=r"with a changed config \(model\.init: "):
            pretrain(edited, resume=True)
        return
    pretrain(edited, resume=True)  # was: refusing to resume ... with a changed config (model.init: ...)
    assert (
        f"encoderlab: note: --resume: model.init {moved} holds the start model {cut.model.init} held (the same "
        "files), so the run goes on from it"
    ) in capsys.readouterr().err.splitlines()
    _assert_same_run(edited, whole)
    assert load_yaml(RunConfig, Path(cut.out) / "config.yaml").model.init == str(moved)  # the record follows


def test_a_start_from_a_run_folder_records_the_model_it_loads(tmp_path, whole):
    """A run folder as `model.init` stands for its last checkpoint's model: its content is what is recorded and
    compared, not the run's log beside it (a copy whose metrics.jsonl differs is the same start model)."""
    base = Path(shutil.copytree(whole.out, tmp_path / "base"))
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(base)))
    pretrain(cfg, until_step=2)
    copy = Path(shutil.copytree(base, tmp_path / "copy"))
    (copy / "metrics.jsonl").write_text("")
    pretrain(dataclasses.replace(cfg, model=ModelSpec(init=str(copy))), resume=True)  # no --force
    assert load_yaml(RunConfig, Path(cfg.out) / "config.yaml").model.init == str(copy)


@pytest.fixture(scope="module")
def decoder_data(tmp_path_factory):
    """Text prepared with a decoder's tokenizer (no mask token), as a run from SmolLM2 reads it."""
    from tests.train.helpers import DECODER_VOCAB, save_tiny_decoder

    from encoderlab.cli import main

    root = tmp_path_factory.mktemp("decoder_data")
    save_tiny_decoder(root / "tokenizer", tied=True)
    texts = [" ".join(f"t{(i * 7 + j) % (DECODER_VOCAB - 1) + 1}" for j in range(60)) for i in range(40)]
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
    )
    main(["data", "prepare", "--source", str(root / "corpus.jsonl"), "--tokenizer", str(root / "tokenizer"),
          "--decontaminate", "none", "--workers", "1", "--out", str(root / "data"), "--val-fraction", "0.25"])  # fmt: skip
    return root / "data"


def test_a_run_that_added_a_mask_token_resumes_exactly_without_its_start_model(
    tmp_path, capsys, decoder_data
):
    """On prepared data: the resumed model is the checkpoint's (the added row included), and the data's
    tokenizer, with the run's mask token added again, is still compared with the checkpoint's."""
    from tests.train.helpers import save_tiny_decoder

    def run(name: str):
        spec = ModelSpec(
            init=str(save_tiny_decoder(tmp_path / f"{name}_decoder", tied=True)), mask_token="<mask>"
        )
        data = dataclasses.replace(tiny_run(tmp_path).data, path=str(decoder_data))
        return tiny_run(tmp_path / name, phases=PHASES, model=spec, data=data)

    whole, cut = run("whole"), run("cut")
    pretrain(whole)
    pretrain(cut, until_step=2)
    shutil.rmtree(cut.model.init)
    capsys.readouterr()
    pretrain(cut, resume=True)
    _resume_note(capsys.readouterr().err, cut)
    _assert_same_run(cut, whole)


@pytest.fixture
def hashed(monkeypatch) -> list[Path]:
    """Every file `build.init_identity` hashes (`sha256_of`, which it imports when called), in order."""
    import encoderlab.data.filerecords as records

    seen: list[Path] = []
    real = records.sha256_of

    def counted(path, *args, **kwargs):
        seen.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(records, "sha256_of", counted)
    return seen


def _under(files: list[Path], folder: Path) -> list[Path]:
    return [f for f in files if f.is_relative_to(folder)]


def test_a_refused_start_hashes_no_start_model(tmp_path, hashed):
    """Rank 0 hashed the start model (every byte: minutes for a large one) while the trainer was built, before
    `before_start`'s refusals (the CLI's duration check) ran, so a refused start read it for nothing."""
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))

    def refuse(trainer, stop):
        raise UserError("refused before the start")

    with pytest.raises(UserError, match="refused before the start"):
        pretrain(cfg, before_start=refuse)
    assert _under(hashed, init) == []
    assert not Path(cfg.out).exists()


def test_a_start_hashes_each_file_of_its_start_model_once_and_records_it(tmp_path, hashed):
    from encoderlab.train.build import init_identity
    from encoderlab.train.checkpoint import read_state

    init = save_tiny_encoder(tmp_path / "init", seed=0)
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))
    pretrain(cfg, until_step=2)
    files = sorted(f for f in init.iterdir() if f.is_file())
    assert sorted(_under(hashed, init)) == files  # each once
    state = read_state(Path(cfg.out) / "checkpoints" / "step_0000002")
    assert state["init"] == init_identity(cfg.model)


def test_a_resume_naming_the_moved_init_hashes_it_once(tmp_path, hashed):
    """The run folder is checked when the trainer is built and again under its lock (`Trainer._claim`); each
    check hashed the moved start model anew."""
    cut = _stopped(tmp_path)
    moved = Path(shutil.move(cut.model.init, tmp_path / "moved"))
    hashed.clear()
    pretrain(dataclasses.replace(cut, model=dataclasses.replace(cut.model, init=str(moved))), resume=True)
    assert sorted(_under(hashed, moved)) == sorted(f for f in moved.iterdir() if f.is_file())


def test_only_rank_zero_judges_a_movedsave_tiny_encoder(tmp_path, hashed, monkeypatch):
    """Every rank of a resume on several processes hashed the moved start model to compare it with the record;
    rank 0 alone does now, and its refusal of another model stops every rank (`distributed.agreed`, around
    the trainer's checks: tests/train/test_distributed_refusals.py). Here as rank 1 (torchrun's RANK), with
    another model at the new place: rank 1 neither hashes it nor refuses."""
    from encoderlab.train.runfolder import check_run_folder

    cut = _stopped(tmp_path)
    moved = save_tiny_encoder(tmp_path / "moved", seed=1)  # other weights than the run started from
    edited = dataclasses.replace(cut, model=dataclasses.replace(cut.model, init=str(moved)))
    hashed.clear()
    monkeypatch.setenv("WORLD_SIZE", "2")  # as torchrun sets it: without it RANK names no rank (env_rank)
    monkeypatch.setenv("RANK", "1")
    assert check_run_folder(edited, resume=True, force=False) is True
    assert _under(hashed, moved) == []
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(UserError, match=r"with a changed config \(model\.init: "):
        check_run_folder(edited, resume=True, force=False)
    assert _under(hashed, moved)


def test_a_cpt_resume_reads_its_checkpoints_weights_once(tmp_path, monkeypatch, whole):
    """The model of a resumed `init` run is built from its checkpoint (`build.resumed_model`); the trainer then
    loaded the same model.safetensors again to put its weights into that model. Counted, not timed; the run
    still matches the uninterrupted one bit for bit."""
    import encoderlab.model.io as model_io

    cut = _stopped(tmp_path)
    read: list[Path] = []
    real = model_io.load_file

    def counted(path, *args, **kwargs):
        read.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(model_io, "load_file", counted)
    pretrain(cut, resume=True)
    weights = Path(cut.out) / "checkpoints" / "step_0000002" / "model" / "model.safetensors"
    assert read.count(weights) == 1  # was 2
    _assert_same_run(cut, whole)


def test_a_cpt_resume_on_prepared_data_without_a_tokenizer_reads_nothing_of_its_start_model(
    tmp_path, capsys, decoder_data
):
    """Prepared data whose tokenizer/ folder is gone (a copy without it): the resume's tokenizer is its
    checkpoint's, and `model.init` is not read, as a reviewer suspected it was. Its folder moved away and
    damaged files put at its path (each read would refuse them), the run goes on from its checkpoint."""
    from tests.train.helpers import save_tiny_decoder

    data = Path(shutil.copytree(decoder_data, tmp_path / "data"))
    shutil.rmtree(data / "tokenizer")
    spec = ModelSpec(init=str(save_tiny_decoder(tmp_path / "decoder", tied=True)), mask_token="<mask>")
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=spec)
    cut = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, path=str(data)))
    pretrain(cut, until_step=2)
    shutil.move(cut.model.init, tmp_path / "elsewhere")
    Path(cut.model.init).mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.json"):
        (Path(cut.model.init) / name).write_text("damaged{")
    capsys.readouterr()
    pretrain(cut, resume=True)
    _resume_note(capsys.readouterr().err, cut)
    assert [r["step"] for r in metrics(cut.out) if "loss" in r][-1] == 4
