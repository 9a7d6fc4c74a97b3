"""The files of a model folder that loading it reads (`read_files`), which a run's start model identity
hashes (`train.build.init_identity`).

Design: the list is composed from the loaders' own, not written again: the weights as `hub.hf_weight_files`
finds them in a Hugging Face folder (the safetensors or their shards and index; never pickles, which no
command reads) or an encoderlab folder's model.safetensors (`io.load_model_folder`), config.json, the
tokenizer files transformers reads (`data.tokenizer.tokenizer_files`) and the sentence-transformers
configuration a Hugging Face folder carries (`sentence.read_sentence_files`). What a folder holds beside
them (a trainer's optimizer.pt and training_args.bin, a README, a log) is no part of the model: it was
hashed too, every byte, and one unreadable made a start fail after its run folder was written.
The tokenizer's files are the names its class declares (`data.tokenizer.declared_reads`: its
`vocab_files_names` and the files transformers reads for every tokenizer), so a class that reads a file of its
own (LUKE's entity_vocab.json) is covered without a list here to extend; without a tokenizer (none loads from
the folder, or a version 2 record) the fixed list `data.tokenizer.TOKENIZER_READS` is. Trade-off: the caller
hands in the loaded tokenizer, or the identity loads it once more to learn its class (`folder_tokenizer`: a
resume's comparison, a study's key). The declared names are the installed transformers' own: a version whose
class declares another file the folder holds gives another identity (a moved start model then needs --force;
a study's model evaluated as is runs again), the price of following each class without a list here.

`files_identity` hashes those files (name and bytes): a training start records it (`init_identity`), and a
study keys the evaluation of a local model folder by it (`study.needs.model_identity`), so a model replaced in
place is a new key and a moved one the same key. It reads every byte each time it is asked (disk speed; no
cache by modification time, which a copy that keeps times would fool). A study, which asks it of one folder
when it builds its graph and again in each node that loads the folder, remembers its read for the process by
every file's stat identity, ctime included (`study.localmodels`), which such a copy does not keep.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from encoderlab.errors import UserError


class UnreadableModelFile(UserError):
    """A file the load reads that `files_identity` cannot read (`init-file-unreadable`): raised as is where a
    failed identity otherwise reads as "another model" (`runfolder._same_init`), whose line named --force for
    what a chmod fixes."""


def files_identity(folder: Path, files: list[Path], what: str) -> str:
    """sha256 over the name (relative to `folder`) and the sha256 of each of `files` (`read_files(folder)`,
    or a caller's older list), in that order (`identity_of(file_digests(...))`). A file it cannot read is one
    line naming it and `what` (the model it belongs to and who loads it)."""
    return identity_of(file_digests(folder, files, what))


def file_digests(folder: Path, files: list[Path], what: str) -> dict[str, str]:
    """{name relative to `folder`: its sha256} of each of `files`, in their order: the parts `files_identity`
    digests, which a study keeps beside a node's key so a node refusing a folder changed since names the files
    that changed (`study.localmodels`)."""
    from encoderlab.data.filerecords import sha256_of

    digests = {}
    for f in files:
        try:
            digests[f.relative_to(folder).as_posix()] = sha256_of(f)
        # permissions, a file gone since the load: was a traceback after the run folder
        except OSError as exc:
            raise UnreadableModelFile(
                f"cannot read {f} ({exc.strerror or exc}), a file of {what}; make it readable by this user, "
                "or copy the model again"
            ) from None
    return digests


def identity_of(digests: dict[str, str]) -> str:
    """The identity of files whose `file_digests` these are, in their order."""
    return hashlib.sha256("".join(f"{name}:{sha}\n" for name, sha in digests.items()).encode()).hexdigest()


def folder_tokenizer(folder: Path):
    """The tokenizer a load of model folder `folder` reads (None: it has none), loaded to learn its class,
    whose declared files `read_files` takes: where no load handed one in (a resume comparing its start model,
    a study keying a model evaluated as is), so both hash what a training start hashed of the same folder."""
    from encoderlab.model.hub import model_files

    return model_files(folder).tokenizer


def read_files(folder: Path, tokenizer=None) -> list[Path]:
    """The files a load of model folder `folder` (an encoderlab model folder or a Hugging Face one) reads,
    sorted by name relative to it; a Hugging Face folder without weights it would load is refused as the
    load refuses it (`hub.hf_weight_files`). `tokenizer`: the one loaded from `folder`, whose class names its
    files (`data.tokenizer.tokenizer_files`); None, the fixed list."""
    from encoderlab.data.tokenizer import tokenizer_files
    from encoderlab.model.hub import hf_weight_files
    from encoderlab.model.sentence import read_sentence_files
    from encoderlab.model.sources import is_model_folder

    # encoderlab's own: config.json (the sentence files in it) + model.safetensors
    if is_model_folder(folder):
        found = [folder / "config.json", folder / "model.safetensors"]
    else:
        weights = hf_weight_files(folder)  # safetensors only: a training load takes no pickles
        index = folder / "model.safetensors.index.json"  # read where the weights are its shards
        sharded = weights != [folder / "model.safetensors"] and index.is_file()
        found = [folder / "config.json", *weights, *([index] if sharded else [])]
        found += [folder / name for name in read_sentence_files(folder)[0]]
    return sorted(
        {*found, *tokenizer_files(folder, tokenizer)}, key=lambda f: f.relative_to(folder).as_posix()
    )
