"""What a run is built from: its token stream, tokenizer, model and device.

These are pure constructors: they read the config, the prepared data and an `init` model, and
write nothing, so the training step (`step.py`), the trainer and the benchmark build the same
things the same way. A build reads the prepared folder's meta.json once (`prepared_meta`) and hands it
to each reader of it; the trade-off is an optional `meta` argument on each of them, which reads the file
itself when called alone (a resume's data check in `runfolder.py`, tests).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from encoderlab.data.batch import BatchLayout, BatchSource, StepOffset, TokenSpec, WholeRows
from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig
from encoderlab.model.encoder import Encoder
from encoderlab.model.hub import ModelFiles, check_compatible, load_pretrained
from encoderlab.model.protocol import LanguageModel
from encoderlab.paths import typed
from encoderlab.train.config import DataConfig, ModelSpec
from encoderlab.train.start import (
    scratch_positions,
    start_checkpoint,
    start_model_folder,
    start_positions,
    start_source,
)


def build_source(data: DataConfig, layout: BatchLayout, meta: dict | None = None) -> BatchSource:
    """The configured token stream: a prepared folder's reader, or synthetic documents, read from
    `data.step_offset` on, each row one sequence with `data.attend=row`. `meta`: the folder's
    `prepared_meta`, where the caller read it already (else read here)."""
    source = _stream(data, layout, meta)
    source = StepOffset(source, data.step_offset) if data.step_offset else source
    return WholeRows(source) if data.attend == "row" else source


def _stream(data: DataConfig, layout: BatchLayout, meta: dict | None) -> BatchSource:
    if data.path == "synthetic":
        from encoderlab.data.synthetic import SyntheticSource, synthetic_spec

        return SyntheticSource(
            layout, synthetic_spec(data.synthetic_vocab), seed=data.seed, mean_doc_len=data.synthetic_doc_len
        )
    from encoderlab.data.reader import PackedReader

    meta = meta if meta is not None else prepared_meta(data)
    return PackedReader(
        Path(data.path), layout, seed=data.seed, split="train", knob="layout.seq_len", meta=meta
    )


def prepared_meta(data: DataConfig) -> dict | None:
    """The meta.json of the prepared folder a run reads (None: synthetic data), checked as every reader of it
    needs: `TrainStep` reads it once and hands it to the training and held-out readers, the tokenizer check
    and the data's identity, where a build read the file five times. A `data.path` that is empty or not a
    folder, or a part of a sharded prepare, is refused here, before anything reads a token."""
    if data.path == "synthetic":
        return None
    if not data.path:
        raise UserError("data.path is empty; set it to a prepared data folder (or 'synthetic')")
    # a path that is nothing: "is not a folder" sent users to check its kind
    if not Path(data.path).exists():
        where = "" if Path(data.path).is_absolute() else f" (read from the working directory, {Path.cwd()})"
        raise UserError(
            f"data.path {data.path} does not exist{where}; give the folder `encoderlab data prepare --out` "
            "wrote, or prepare one there first"
        )
    if not Path(data.path).is_dir():
        raise UserError(f"data.path {data.path} is not a folder; run `encoderlab data prepare` first")
    from encoderlab.data.packed import read_meta

    meta = read_meta(Path(data.path))
    _refuse_part(Path(data.path), meta)
    return meta


def _refuse_part(path: Path, meta: dict) -> None:
    """A part of a sharded prepare (`OUT.shards/I-of-N`, its meta.json records the shard) holds one worker's
    slice of the files, every document in train and no val split; trained on, it was accepted silently."""
    from encoderlab.data.shard import merged_folder

    shard = meta.get("shard")
    if not isinstance(shard, dict):
        return
    out = merged_folder(path) or "OUT"
    raise UserError(
        f"data.path {path} is part {shard.get('index')}/{shard.get('count')} of a sharded prepare (one worker's "
        f"slice of the files, no val split); run `encoderlab data merge --out {typed(out)}` once every part is "
        f"written, and train on {out}"
    )


def data_identity(data: DataConfig, meta: dict | None = None) -> str | None:
    """The identity of the prepared data a run reads (`data.packed.identity`, from its meta.json: `meta`, where
    read already), which its checkpoints record so a resume on other rows is refused; None for synthetic data,
    whose rows follow from the config alone."""
    if data.path == "synthetic":
        return None
    from encoderlab.data.packed import identity, read_meta

    return identity(meta if meta is not None else read_meta(Path(data.path)))


INIT_VERSION = 3
"""What `init_identity` covers, recorded beside it in each checkpoint (`init_version`): 3, the files the load
reads (`model/readfiles.py`), the tokenizer's as its class declares them (`data.tokenizer.declared_reads`);
2, the same with the tokenizer's from a fixed list (`data.tokenizer.TOKENIZER_READS`), which missed a file a
class reads of its own (LUKE's entity_vocab.json); 1 (a checkpoint without the key), every file of the
folder. Runs checkpointed under an older version record and compare that version (`InitIdentity.of`)."""


def init_identity(
    model: ModelSpec, version: int = INIT_VERSION, read: ReadTokenizer | None = None
) -> str | None:
    """The content of the start model a run begins from, when `model.init` is a folder on this machine: sha256
    over the name and bytes of each file the load reads of the model folder (`readfiles.read_files`: weights,
    config, tokenizer; `version` 1: every file of it) in `start.start_checkpoint`'s `model/`, else the folder
    or its `final/`, which its checkpoints record (`init`) so that a resume whose `model.init` names the same
    model at another path (moved, copied) is no changed config. None for no `init`, an asset name or a hub
    id: those name their model wherever it lies. It reads the weights a second time (a start only; at disk
    speed), the price of a record that needs no load to compare. A file it cannot read is one line. `read`:
    the tokenizer the start's load read of that folder, whose class names its files; else it is read here."""
    if not model.init or not Path(model.init).is_dir():
        return None
    from encoderlab.model.readfiles import files_identity, read_files

    folder = start_model_folder(model.init)
    if version == 1:
        hashed = sorted(f for f in folder.iterdir() if f.is_file())
    else:
        hashed = read_files(folder, _folder_tokenizer(folder, read) if version == INIT_VERSION else None)
    return files_identity(folder, hashed, f"start model {model.init} that the run loads")


def final_differs_note(model: ModelSpec, identity: str | None, read: ReadTokenizer) -> str | None:
    """The note of a start from a finished run folder whose `final/` holds other files than its last checkpoint's
    `model/`, which the start reads (`start.start_model_folder`; a hand edit of one of them: one save writes both
    alike), naming both; None otherwise. `identity`: `init_identity` of that start, just hashed, so the cost is
    one read of `final/` (at disk speed), asked only of a start from a run folder; the trainer trained from the
    checkpoint without a word, where the user may have meant the `final/` they edited."""
    if identity is None or not model.init:
        return None
    from encoderlab.model.readfiles import files_identity, read_files
    from encoderlab.model.runlayout import is_run_folder

    run, read_folder = Path(model.init), start_model_folder(model.init)
    final = run / "final"
    if not is_run_folder(run) or read_folder == final or not (final / "config.json").is_file():
        return None
    try:  # the start reads none of it: a file it cannot read is no reason to refuse the start
        hashed = read_files(final, _folder_tokenizer(final, read))
        if files_identity(final, hashed, f"final model {typed(final)} of model.init") == identity:
            return None
    except UserError:
        return None
    return (
        f"model.init {model.init} is a run folder whose final model {typed(final)} differs from its last "
        f"checkpoint's {typed(read_folder)} (edited by hand?); the run starts from the checkpoint's, as `pretrain` "
        f"continues a run folder; to start from the final model, set model.init={typed(final)}"
    )


@dataclass(frozen=True)
class ReadTokenizer:
    """The tokenizer a start's load read of its start model folder, handed to `init_identity`."""

    tokenizer: Any
    """The start model's tokenizer; None when it has none."""


def _folder_tokenizer(folder: Path, read: ReadTokenizer | None) -> Any:
    """The tokenizer of model folder `folder`: the one the start's load read, else read now
    (`readfiles.folder_tokenizer`)."""
    from encoderlab.model.readfiles import folder_tokenizer

    return read.tokenizer if read is not None else folder_tokenizer(folder)


class UnknownInitVersion(UserError):
    """A checkpoint's `init_version` outside 1 to `INIT_VERSION` (`init-version-unknown`): its `init` covers
    files this encoderlab cannot tell, so no identity computed here can be compared with it; the caller says
    what to do (`runfolder._same_init`)."""

    def __init__(self, version: Any):
        from encoderlab import __version__

        known = f"it knows 1 to {INIT_VERSION}"
        self.unknown = f"init_version {version!r}, which encoderlab {__version__} does not know ({known})"
        """The version and what this encoderlab knows, for the caller's line."""
        super().__init__(
            f"a start model's identity is recorded under {self.unknown}; upgrade encoderlab to the version that "
            "wrote it"
        )


@dataclass
class InitIdentity:
    """`init_identity(model)`, hashed on first ask and kept: the hash reads every byte of the start model's
    weights (minutes for a large one), and one run asks up to three times (its resume check, that check again
    under the run folder's lock, the record of a start). The trainer asks on rank 0 only and as late as it
    can: a start hashes once every refusal has passed, just before its run folder is created
    (`Trainer._claim`), so a refused start hashes nothing and an unreadable file writes nothing (a caller's
    `before_start` may ask for it, `Trainer.start_model_identity`: hashed then, once all the same), and a resume
    only where `model.init` changed (`runfolder.check_run_folder`). The trade-off: the content recorded is
    hashed a few moments after the load, not from the loaded bytes themselves."""

    model: ModelSpec
    read: ReadTokenizer | None = None
    """The start model's tokenizer as the start's load read it (`of_start`): its class names the tokenizer
    files hashed (`init_identity`), not read again; None, the hash reads it."""
    _older: dict[int, str | None] = field(default_factory=dict, repr=False)
    """The identities of older versions asked (`of`), each hashed once."""

    @functools.cached_property
    def value(self) -> str | None:
        return init_identity(self.model, read=self.read)

    def of_start(self, tokenizer: Any) -> str | None:
        """`value`, hashed (where not yet) with `tokenizer`, the start model's as the load read it (None: it has
        none; `TrainStep.start_tokenizer`)."""
        self.read = ReadTokenizer(tokenizer)
        return self.value

    def of(self, version: int) -> str | None:
        """The identity as a checkpoint of `version` (`INIT_VERSION`) recorded it: a run checkpointed before
        the identity covered only the load's files, or before it took the tokenizer's files from its class,
        resumes (moved start model included) without --force. A version this encoderlab does not know (a
        newer one wrote the checkpoint) is `UnknownInitVersion`: hashed as version 2 it read as another model."""
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= INIT_VERSION:
            raise UnknownInitVersion(version)
        if version == INIT_VERSION:
            return self.value
        if version not in self._older:
            self._older[version] = init_identity(self.model, version=version)
        return self._older[version]


def data_tokenizer(data: DataConfig):
    """The tokenizer stored with prepared data; for synthetic data a word-level one over its ids, so
    a synthetic run's models export and evaluate like any other (their words are `t<id>`)."""
    if data.path == "synthetic":
        from encoderlab.data.synthetic import synthetic_spec, synthetic_tokenizer

        return synthetic_tokenizer(synthetic_spec(data.synthetic_vocab))
    folder = Path(data.path) / "tokenizer"
    if not folder.is_dir():
        return None
    from encoderlab.data.tokenizer import load_tokenizer

    return load_tokenizer(str(folder))


def scratch_config(size: str, spec: TokenSpec, seq_len: int) -> ModelConfig:
    """The shape of the model a run without `model.init` builds (`build_model`): known from the config and the
    data's vocabulary alone, so the checks that need only the shape (its memory, its duration) run before
    anything is allocated; its `num_params()` is the built model's count."""
    return ModelConfig.from_size(
        size,
        vocab_size=spec.vocab_size,
        max_seq_len=scratch_positions(seq_len),
        pad_id=spec.pad_id,
        bos_id=spec.bos_id,
        eos_id=spec.eos_id,
        mask_id=spec.mask_id,
    )


def build_model(
    spec_cfg: ModelSpec, spec: TokenSpec, seq_len: int, files: ModelFiles | None = None
) -> tuple[LanguageModel, Any]:
    """A fresh model of the named size, or the `init` source's weights (and its tokenizer). `files`: what
    `model_files(start_source(init))` read already (`load_pretrained` takes its tokenizer, not read again)."""
    if not spec_cfg.init:
        return Encoder(scratch_config(spec_cfg.size, spec, seq_len)), None
    found = start_checkpoint(spec_cfg.init)
    if spec_cfg.load == "full" and found is None:
        raise UserError(
            f"model.load=full needs an encoderlab checkpoint or run folder with checkpoints, got {spec_cfg.init}; "
            "use model.load=weights for other sources"
        )
    _check_positions(spec_cfg.init, start_positions(spec_cfg.init), seq_len)  # before loading anything
    # encoderlab folders included: their tokenizer comes too
    pre = load_pretrained(str(start_source(spec_cfg.init)), files=files)
    model, tokenizer = pre.model, pre.tokenizer
    check_compatible(model, spec, tokenizer="the data's tokenizer")
    _check_positions(spec_cfg.init, model.config.max_seq_len, seq_len)  # a downloaded model's, too
    return model, tokenizer


def resumed_model(
    checkpoint: Path, spec: TokenSpec, seq_len: int, files: ModelFiles | None = None
) -> tuple[LanguageModel, Any]:
    """The model (and tokenizer) a resumed run of an `init` model continues with: its checkpoint's own model
    folder, shape and added rows included, never `model.init`, whose weights the checkpoint replaces anyway.
    Rebuilt from `init`, a resume failed once that folder had moved or been deleted, and would have taken
    the shape of another model put at its path; `spec`: the vocabulary the run trains with; `files`: as
    `build_model`'s, of `checkpoint`'s model folder."""
    pre = load_pretrained(str(checkpoint / "model"), files=files)
    check_compatible(pre.model, spec, tokenizer="the data's tokenizer")
    _check_positions(str(checkpoint / "model"), pre.model.config.max_seq_len, seq_len)
    return pre.model, pre.tokenizer


def _check_positions(init: str, limit: int | None, seq_len: int) -> None:
    if limit is not None and limit < seq_len:
        raise UserError(
            f"model {init} accepts {limit} tokens but layout.seq_len is {seq_len}; "
            f"set layout.seq_len <= {limit} (a recipe: --param seq_len={limit})"
        )


def check_data_tokenizer(data: DataConfig, init: str, model_tokenizer, meta: dict | None = None) -> None:
    """Refuse prepared data tokenized by another tokenizer than the `init` model's, before anything
    is written (both hashes named, as `data prepare` records them): the run would train on ids that
    mean other words and ship the wrong tokenizer. Token ids themselves are checked against the
    data's tokenizer when the folder is opened (`data/packed.py`), and that tokenizer's size against
    the model's embedding by `build_model`. Synthetic data is not checked: its ids mean no words.
    A start model without tokenizer files is refused on prepared data: nothing tells which ids it was
    trained on, and the check was skipped, so a BERT continued on a BPE's ids trained without a word."""
    if data.path == "synthetic" or not init:
        return
    if model_tokenizer is None:
        raise UserError(
            f"start model {init} has no tokenizer files, so nothing shows that {data.path} was tokenized with the "
            f"tokenizer it was trained with; save that tokenizer into {init} (tokenizer.save_pretrained) and "
            f"prepare the data with --tokenizer {init}"
        )
    from encoderlab.data.packed import read_meta
    from encoderlab.data.tokenizer import tokenizer_hash

    root = Path(data.path)
    meta = meta if meta is not None else read_meta(root)  # `meta`: the data's meta.json, where read already
    theirs, ours = meta["tokenizer"]["hash"], tokenizer_hash(model_tokenizer)
    if theirs != ours:
        raise UserError(
            f"{root} was tokenized with tokenizer {theirs[:12]} ({meta['tokenizer']['source']}) but the init model "
            f"{init} ships tokenizer {ours[:12]}; prepare the data with the model's tokenizer "
            f"(`encoderlab data prepare --tokenizer {typed(init)} ...`)"
        )
