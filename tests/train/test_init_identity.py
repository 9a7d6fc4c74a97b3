"""What a run's record of its start model covers (`build.init_identity`): the files the load reads of the
model folder (`model/readfiles.py`), not every file beside them. A trainer's optimizer.pt, a README or a
log was hashed too (minutes for a large one), changed the record without changing the model, and one
unreadable failed the start with a traceback after its run folder was written. Checkpoints written
before record the whole folder's hash, without `init_version`; their runs still resume without --force."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from tests.model.model_fixtures import save_tiny_tokenizer
from tests.train.helpers import save_tiny_decoder, save_tiny_encoder, tiny_run
from tests.train.test_resume_init import PHASES
from tests.train.tokenizer_fixtures import TOKENIZER_CLASSES, hf_folder_with

from encoderlab import __version__
from encoderlab.errors import UserError
from encoderlab.train import pretrain
from encoderlab.train.build import INIT_VERSION, init_identity
from encoderlab.train.checkpoint import read_state
from encoderlab.train.config import ModelSpec

LEFTOVERS = ("optimizer.pt", "training_args.bin", "README.md", "rng_state.pth")
"""What a Hugging Face Trainer checkpoint or a model repo holds beside the model, which no load reads."""


def _leftovers(folder: Path) -> None:
    for name in LEFTOVERS:
        (folder / name).write_bytes(name.encode() * 100)


def _whole_folder_hash(folder: Path) -> str:
    """The record the code before `INIT_VERSION` 2 wrote: sha256 over `name:sha256` of every file."""
    files = sorted(f for f in folder.iterdir() if f.is_file())
    lines = "".join(f"{f.name}:{hashlib.sha256(f.read_bytes()).hexdigest()}\n" for f in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def test_the_identity_of_an_encoderlab_folder_is_its_weights_and_config_not_what_lies_beside(tmp_path):
    spec = ModelSpec(init=str(save_tiny_encoder(tmp_path / "init", seed=0)))
    before = init_identity(spec)
    _leftovers(tmp_path / "init")
    assert init_identity(spec) == before  # was another hash
    shutil.rmtree(tmp_path / "init")
    save_tiny_encoder(tmp_path / "init", seed=1)  # other weights
    assert init_identity(spec) != before


def test_the_identity_of_a_hugging_face_folder_covers_its_tokenizer_and_not_its_pickles(tmp_path):
    folder = save_tiny_decoder(tmp_path / "decoder", tied=True)
    spec = ModelSpec(init=str(folder))
    before = init_identity(spec)
    _leftovers(folder)
    (folder / "pytorch_model.bin").write_bytes(b"pickled weights no command reads beside model.safetensors")
    assert init_identity(spec) == before
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 7}))
    assert init_identity(spec) != before


@pytest.fixture
def unreadable(monkeypatch) -> set[str]:
    """File names whose read `build.init_identity`'s hash fails as for a file without read permission (the
    tests run as root, whom chmod does not stop); the load itself still reads them."""
    import encoderlab.data.filerecords as records

    names: set[str] = set()
    real = records.sha256_of

    def sha256_of(path, *args, **kwargs):
        if Path(path).name in names:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(records, "sha256_of", sha256_of)
    return names


def test_a_start_model_folder_with_an_unreadable_leftover_starts(tmp_path, unreadable):
    from encoderlab.train.build import INIT_VERSION

    init = save_tiny_encoder(tmp_path / "init", seed=0)
    _leftovers(init)
    unreadable.add("optimizer.pt")
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))
    pretrain(cfg, until_step=2)  # was: PermissionError, a traceback, after the run folder was created
    state = read_state(Path(cfg.out) / "checkpoints" / "step_0000002")
    unreadable.clear()
    assert (state["init"], state["init_version"]) == (init_identity(cfg.model), INIT_VERSION)


def test_an_unreadable_file_the_load_reads_is_refused_in_one_line_before_anything_is_written(
    tmp_path, unreadable
):
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    unreadable.add("model.safetensors")
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))
    with pytest.raises(UserError) as refused:
        pretrain(cfg)
    assert str(refused.value) == (
        f"cannot read {init / 'model.safetensors'} (Permission denied), a file of start model {init} that the "
        "run loads; make it readable by this user, or copy the model again"
    )
    assert not Path(cfg.out).exists()


def test_a_resume_naming_a_moved_start_model_it_cannot_read_says_so_not_that_the_config_changed(
    tmp_path, unreadable
):
    """Read as another model, it was "refusing to resume ... with a changed config (model.init: ...); rerun
    with the original settings or pass --force", for what making the file readable fixes."""
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))
    pretrain(cfg, until_step=2)
    moved = Path(shutil.move(init, tmp_path / "moved"))
    unreadable.add("model.safetensors")
    with pytest.raises(
        UserError, match=r"^cannot read .*moved/model\.safetensors \(Permission denied\), a file of"
    ):
        pretrain(dataclasses.replace(cfg, model=ModelSpec(init=str(moved))), resume=True)
    unreadable.clear()
    pretrain(dataclasses.replace(cfg, model=ModelSpec(init=str(moved))), resume=True)  # then it resumes


@pytest.mark.parametrize("held", ["the same model", "another model"])
def test_a_run_checkpointed_with_the_whole_folders_hash_resumes_at_the_moved_start_model(tmp_path, held):
    """A checkpoint of the code before records `init` over every file of the folder and no `init_version`:
    compared with the new identity, the moved start model would be a changed config, refused until --force."""
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    _leftovers(init)  # so the old record and the new identity differ
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))
    pretrain(cfg, until_step=2)
    state_file = Path(cfg.out) / "checkpoints" / "step_0000002" / "state.json"
    state = json.loads(state_file.read_text())
    old = {k: v for k, v in state.items() if k != "init_version"}
    state_file.write_text(json.dumps({**old, "init": _whole_folder_hash(init)}))
    assert _whole_folder_hash(init) != init_identity(cfg.model)
    moved = Path(shutil.move(init, tmp_path / "moved"))
    if held == "another model":
        shutil.rmtree(moved)
        save_tiny_encoder(moved, seed=1)
        _leftovers(moved)
    edited = dataclasses.replace(cfg, model=ModelSpec(init=str(moved)))
    if held == "another model":
        with pytest.raises(UserError, match=r"with a changed config \(model\.init: "):
            pretrain(edited, resume=True)
        return
    pretrain(edited, resume=True)  # no --force
    final = read_state(Path(cfg.out) / "checkpoints" / "step_0000004")
    assert "init_version" in final and final["init_version"] == 1  # the run keeps the record it started with
    assert final["init"] == _whole_folder_hash(moved)


def test_a_sharded_hugging_face_folder_is_covered_by_its_shards_and_their_index(tmp_path):
    """The load reads model.safetensors.index.json and each shard it names (`hub.hf_weight_files`); a
    transformers save's generation_config.json and a pickle beside them it never reads."""
    from transformers import LlamaForCausalLM

    from encoderlab.model.readfiles import read_files

    folder = tmp_path / "decoder"
    save_tiny_decoder(tmp_path / "whole", tied=True)
    LlamaForCausalLM.from_pretrained(str(tmp_path / "whole")).save_pretrained(
        str(folder), max_shard_size="20KB"
    )
    shutil.copy(tmp_path / "whole" / "tokenizer.json", folder / "tokenizer.json")
    (folder / "pytorch_model.bin").write_bytes(b"never read")
    names = [f.name for f in read_files(folder)]
    shards = sorted(f.name for f in folder.glob("model-*.safetensors"))
    assert len(shards) > 1
    assert names == sorted(["config.json", "model.safetensors.index.json", "tokenizer.json", *shards])


@pytest.mark.parametrize("cls", sorted(TOKENIZER_CLASSES))
def test_the_identity_covers_the_files_the_tokenizers_class_declares(tmp_path, cls):
    """The tokenizer's files are those its class reads (`vocab_files_names`), not a fixed list of names: a
    start model whose LUKE entity vocabulary was edited had the same record, so a resume naming it ran on."""
    from encoderlab.model.hub import model_files
    from encoderlab.model.readfiles import read_files

    writer, edit, vocabulary = TOKENIZER_CLASSES[cls]
    folder = hf_folder_with(tmp_path, writer)
    (folder / "stray.model").write_bytes(b"a SentencePiece model no load of this folder reads")
    spec = ModelSpec(init=str(folder))
    before = init_identity(spec)
    edit(folder)
    assert init_identity(spec) != before  # LUKE's was the same hash
    edited = init_identity(spec)
    (folder / "stray.model").write_bytes(b"edited, still unread")
    assert init_identity(spec) == edited  # the fixed list's `*.model` covered it
    tokenizer = model_files(folder).tokenizer
    assert type(tokenizer).__name__ == cls
    names = [f.name for f in read_files(folder, tokenizer)]
    assert names == sorted(["config.json", "model.safetensors", "tokenizer_config.json", *vocabulary])


def test_a_run_recorded_under_the_fixed_list_resumes_at_its_moved_start_model(tmp_path):
    """A checkpoint of `init_version` 2 covers the tokenizer's files from the fixed list (a stray `*.model`
    included); compared with version 3's identity, the moved start model was a changed config."""
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    save_tiny_tokenizer(init, vocab_size=128)
    (init / "stray.model").write_bytes(b"hashed by version 2 only")
    spec = ModelSpec(init=str(init))
    assert init_identity(spec, version=2) != init_identity(spec)
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=spec)
    pretrain(cfg, until_step=2)
    state_file = Path(cfg.out) / "checkpoints" / "step_0000002" / "state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**state, "init": init_identity(spec, version=2), "init_version": 2}))
    moved = ModelSpec(init=shutil.move(init, tmp_path / "moved"))
    pretrain(dataclasses.replace(cfg, model=moved), resume=True)  # no --force
    final = read_state(Path(cfg.out) / "checkpoints" / "step_0000004")
    assert (final["init"], final["init_version"]) == (init_identity(moved, version=2), 2)


@pytest.mark.parametrize("force", [False, True])
def test_a_checkpoint_of_an_init_version_this_encoderlab_does_not_know_is_refused_naming_it(tmp_path, force):
    """A newer encoderlab's `init_version` was hashed as version 2: its record, over other files, read as
    another model, "refusing to resume ... with a changed config (model.init: ...); rerun with the original
    settings or pass --force", not saying that this encoderlab cannot tell (and where the two hashes happened
    to agree, the run resumed on a comparison it cannot make). --force still resumes, keeping the record."""
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    cfg = tiny_run(tmp_path / "run", phases=PHASES, model=ModelSpec(init=str(init)))
    pretrain(cfg, until_step=2)
    state_file = Path(cfg.out) / "checkpoints" / "step_0000002" / "state.json"
    newer = INIT_VERSION + 1
    record = hashlib.sha256(b"what a newer encoderlab covers").hexdigest()  # not any identity hashed here
    state = {**json.loads(state_file.read_text()), "init": record, "init_version": newer}
    state_file.write_text(json.dumps(state))
    moved = Path(shutil.move(init, tmp_path / "moved"))
    edited = dataclasses.replace(cfg, model=ModelSpec(init=str(moved)))
    if force:
        pretrain(edited, resume=True, force=True)
        final = read_state(Path(cfg.out) / "checkpoints" / "step_0000004")
        assert (final["init"], final["init_version"]) == (record, newer)
        return
    with pytest.raises(UserError) as refused:
        pretrain(edited, resume=True)
    assert str(refused.value) == (
        f"cannot resume {cfg.out} with model.init {moved}: its latest checkpoint records the start model's "
        f"identity under init_version {newer}, which encoderlab {__version__} does not know (it knows 1 to "
        f"{INIT_VERSION}), so whether {moved} holds that model cannot be told; upgrade encoderlab to the version "
        f"that wrote the run, or pass --force to resume from {moved} unchecked"
    )
    assert not (Path(cfg.out) / "checkpoints" / "step_0000003").exists()
