"""The prepared-data format: token files, document offsets and meta.json, written and checked.

A prepared folder (written by `data prepare` or `data merge`, read by `data/reader.py`):
    meta.json         format version, recipe, tokenizer hash, dtype, counts, source identity and
                      hashes, unique tokens, max_token_id, decontamination counts
    tokenizer/        a copy of the tokenizer (so the folder is self-describing)
    tokens.bin        train tokens, uint16 when the vocab has at most 65,536 ids, else uint32
    doc_offsets.npy   int64, n_docs + 1 offsets into tokens.bin (document i = [o[i], o[i+1]))
    val/tokens.bin, val/doc_offsets.npy   the held-out validation documents, same layout

`SplitWriter` appends documents to a split's files (offsets to a raw file that becomes the .npy at
the end, so nothing is held in memory), hashing them as it writes; meta.json records each file's size,
sha256 and mtime (`split_files`). `open_split` verifies on open what a reader must be able to trust
without reading every token: offsets that start at 0, never decrease and end at the token count, both
files still the ones written (`filerecords.file_change`: a stat when size and mtime are as recorded,
else the file is hashed again, so a folder copied without its mtimes still opens), and token ids below
the vocabulary (from `max_token_id`, recorded at prepare, so opening files as written costs nothing;
a file changed since, or a folder from before these were recorded, is scanned once, in blocks). So a
tokens.bin or doc_offsets.npy replaced by another of the same size and valid contents (a swapped
shard, a half-finished copy) is refused, not trained on; a study keys a `--prepared` folder by its
meta.json (`identity`), which the files are thereby held to.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np

from encoderlab import jsonlines
from encoderlab.data.filerecords import file_change
from encoderlab.data.holdout import held_out_at
from encoderlab.errors import UserError

FORMAT = "encoderlab-tokens"
FORMAT_VERSION = 1
SPLITS = {"train": ".", "val": "val"}


def split_dir(root: Path, split: str) -> Path:
    """The folder holding `split`'s tokens.bin and doc_offsets.npy."""
    if split not in SPLITS:
        raise UserError(f"unknown split '{split}'; valid: {', '.join(SPLITS)}")
    return Path(root) / SPLITS[split]


def read_meta(root: Path) -> dict:
    """The meta.json of a prepared folder, checked for format and version."""
    path = Path(root) / "meta.json"
    try:
        meta = jsonlines.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: `root` is a file (a corpus, say)
        raise UserError(
            f"{root} is not prepared data (no meta.json); run `encoderlab data prepare`"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{path} is corrupt; delete {root} and prepare it again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UserError(f"{path} is not an encoderlab prepared-data file; point at a prepared folder")
    if meta.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{root} has prepared-data version {meta.get('format_version')}, this encoderlab reads "
            f"{FORMAT_VERSION}; prepare it again"
        )
    if problem := _shape_problem(meta):  # valid JSON edited or cut by hand: was a KeyError or TypeError
        raise UserError(f"{path} is corrupt ({problem}); delete {root} and prepare it again")
    _refuse_cut_documents(Path(root), meta)
    return meta


def is_count(value) -> bool:
    """Whether a meta.json value is a count (a whole number >= 0; JSON's true is none)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shape_problem(meta: dict) -> str | None:
    """What in meta.json a reader could not use (its dtype, vocabulary size, split counts), or None."""
    if meta.get("dtype") not in ("uint16", "uint32"):
        return f"dtype is {meta.get('dtype')!r}, not uint16 or uint32"
    spec = meta.get("spec")
    if not isinstance(spec, dict) or not is_count(spec.get("vocab_size")) or spec["vocab_size"] < 1:
        return "spec.vocab_size is not a positive count"
    top = meta.get("max_token_id", -1)  # -1: no tokens; absent: a folder from before it was recorded
    if not (isinstance(top, int) and not isinstance(top, bool) and top >= -1):
        return f"max_token_id is {top!r}, not a token id"
    splits = meta.get("splits")
    if not isinstance(splits, dict) or "train" not in splits:
        return "it records no train split"
    for split, counts in splits.items():
        if not isinstance(counts, dict) or not all(is_count(counts.get(k)) for k in ("tokens", "docs")):
            return f"splits.{split} has no token and document counts"
    return None


def identity(meta: dict) -> str:
    """A digest of what a prepared folder holds, from its meta.json alone (no token is read): its recipe
    (tokenizer hash and settings), split sizes and source identities, and what was read of each source
    file (bytes and sha256 for a local file, documents for a hub file; not its path or mtime), so text
    changed in place, even to the same counts (a shuffled corpus), gives another digest, and the same
    files prepared again the same one. A run records it in its checkpoints to refuse a resume on other rows (`train/trainer.py`);
    a study keys a `--prepared` folder by it (`study/prepared.py`)."""
    sources = [s for s in _list(meta.get("sources")) if isinstance(s, dict)]  # hand-edited: no traceback
    return hashlib.sha256(
        json.dumps(
            {
                "recipe": meta.get("recipe"),
                "splits": meta.get("splits"),
                "sources": [s.get("identity") for s in sources],
                "contents": [  # where and when the corpus was read from is no part of the rows
                    [
                        {k: v for k, v in f.items() if k not in ("path", "mtime_ns")}
                        for f in _list(s.get("files"))
                        if isinstance(f, dict)
                    ]
                    for s in sources
                ],
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()


def _list(value) -> list:
    return value if isinstance(value, list) else []


def call_settings(tokenizer_json: dict) -> str:
    """The truncation and padding a serialised tokenizer keeps from its last call ("" when none):
    sentence-transformers' all-MiniLM-L6-v2 keeps "truncation at 128, padding to 128"."""
    parts = []
    if (trunc := tokenizer_json.get("truncation")) is not None:
        parts.append(f"truncation at {trunc.get('max_length')}")
    if (pad := tokenizer_json.get("padding")) is not None:
        strategy = pad.get("strategy")
        size = strategy.get("Fixed") if isinstance(strategy, dict) else None
        parts.append(f"padding to {size}" if size else "padding")
    return ", ".join(parts)


def _refuse_cut_documents(root: Path, meta: dict) -> None:
    """A folder prepared before `data/encode.py` cleared the tokenizer's call settings, by the
    `tokenizers` path with a tokenizer that keeps them, holds every document cut at that length and
    filled with pad ids: refused, never trained on. Folders since carry `documents: whole`."""
    if meta.get("documents") == "whole" or meta.get("encoder") != "tokenizers":
        return
    path = root / "tokenizer" / "tokenizer.json"
    try:
        settings = call_settings(jsonlines.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return
    if settings:
        raise UserError(
            f"{root} was prepared by an encoderlab that kept its tokenizer's {settings} (settings of the "
            "tokenizer's last call, saved in its tokenizer.json), so every document in it is cut and "
            f"padded; delete {root} and prepare it again"
        )


def choose_dtype(vocab_size: int, requested: str = "auto") -> np.dtype:
    """uint16 when every id fits in 16 bits, else uint32; a requested dtype that is too small fails."""
    fits16 = vocab_size <= 1 << 16
    if requested == "auto":
        return np.dtype(np.uint16 if fits16 else np.uint32)
    if requested == "uint16" and not fits16:
        raise UserError(
            f"a vocab of {vocab_size} ids does not fit in uint16 (max 65,536); use --dtype uint32 or auto"
        )
    if requested not in ("uint16", "uint32"):
        raise UserError(f"dtype must be auto, uint16 or uint32, got '{requested}'")
    return np.dtype(requested)


def val_mask(first: int, n: int, fraction: float) -> np.ndarray:
    """Which of documents first..first+n-1 are held out (the rule of `data/holdout.py`)."""
    return held_out_at(np.arange(first, first + n), fraction)


class SplitWriter:
    """Appends documents to tokens.bin and a raw offsets file; `finish` writes doc_offsets.npy; both are
    hashed as they are written (`files`, recorded in meta.json's `split_files`).

    `at=(n_tokens, n_docs)` reopens the files of an interrupted prepare, cut back to that checkpoint
    (the tokens kept are read once, to hash them)."""

    def __init__(self, folder: Path, dtype: np.dtype, at: tuple[int, int] | None = None):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.dtype = folder, dtype
        self.n_tokens, self.n_docs = at or (0, 0)
        self.sha = hashlib.sha256()
        mode = "r+b" if at else "wb"
        self.tokens = open(folder / "tokens.bin", mode)  # noqa: SIM115 (open across appends)
        self.offsets = open(folder / "doc_offsets.raw", mode)  # noqa: SIM115
        if at is None:
            self.offsets.write(np.zeros(1, dtype=np.int64).tobytes())
        for f, size in ((self.tokens, self.n_tokens * dtype.itemsize), (self.offsets, (self.n_docs + 1) * 8)):
            f.truncate(size)
            f.seek(size)
        if at is not None:
            with open(folder / "tokens.bin", "rb") as kept:
                while block := kept.read(1 << 20):
                    self.sha.update(block)

    def sync(self) -> tuple[int, int]:
        """Put everything appended so far on disk; returns the checkpoint (n_tokens, n_docs)."""
        for f in (self.tokens, self.offsets):
            f.flush()
            os.fsync(f.fileno())
        return self.n_tokens, self.n_docs

    def append(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        data = np.ascontiguousarray(tokens, dtype=self.dtype).data
        self.tokens.write(data)
        self.sha.update(data)
        self.offsets.write((self.n_tokens + np.cumsum(lengths)).astype(np.int64).data)
        self.n_tokens += int(lengths.sum())
        self.n_docs += len(lengths)

    def finish(self) -> dict:
        self.sync()
        self.close()
        raw = self.folder / "doc_offsets.raw"
        header = io.BytesIO()
        shape = (self.n_docs + 1,)
        np.lib.format.write_array_header_1_0(
            header, {"descr": np.dtype(np.int64).str, "fortran_order": False, "shape": shape}
        )
        offsets_sha = hashlib.sha256(header.getvalue())
        with open(self.folder / "doc_offsets.npy", "wb") as out, open(raw, "rb") as src:
            out.write(header.getvalue())
            while block := src.read(1 << 20):
                out.write(block)
                offsets_sha.update(block)
            out.flush()
            os.fsync(out.fileno())
        raw.unlink()
        self.digests = {"tokens.bin": self.sha.hexdigest(), "doc_offsets.npy": offsets_sha.hexdigest()}
        return {"tokens": self.n_tokens, "docs": self.n_docs}

    def files(self) -> dict:
        """What `finish` wrote, as meta.json's `split_files` records it per split: each file's bytes,
        sha256 and mtime_ns (so `open_split` notices a change with a stat)."""
        records = {}
        for name, digest in self.digests.items():
            st = (self.folder / name).stat()
            records[name] = {"bytes": st.st_size, "sha256": digest, "mtime_ns": st.st_mtime_ns}
        return records

    def close(self) -> None:
        self.tokens.close()
        self.offsets.close()


# ---------------------------------------------------------------- opening a split, checked

BLOCK = 1 << 24
"""Elements per block when a check has to read a whole file (bounded memory)."""


def _blocks(array: np.ndarray):
    for start in range(0, len(array), BLOCK):
        yield start, np.asarray(array[start : start + BLOCK + 1])


def _load_offsets(path: Path, n_docs: int, n_tokens: int, root: Path) -> np.ndarray:
    """doc_offsets.npy, memory-mapped, checked: int64, n_docs + 1 entries from 0 to n_tokens, never
    decreasing (a reader would otherwise serve documents of negative or out-of-file length)."""
    again = f"the folder is corrupt: prepare {root} again"
    try:
        offsets = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{path} is missing; {again}") from None
    except (ValueError, OSError, EOFError):
        raise UserError(f"{path} is not a valid .npy offsets file; {again}") from None
    if offsets.dtype != np.int64 or offsets.ndim != 1 or len(offsets) != n_docs + 1:
        raise UserError(
            f"{path} holds {offsets.dtype} {offsets.shape}, meta.json expects int64 ({n_docs + 1},); {again}"
        )
    if int(offsets[0]) != 0 or int(offsets[-1]) != n_tokens:
        raise UserError(f"{path} does not run from 0 to the {n_tokens} tokens of meta.json; {again}")
    for start, block in _blocks(offsets):
        if len(block) > 1 and (np.diff(block) < 0).any():
            at = start + int(np.argmax(np.diff(block) < 0))
            raise UserError(f"{path} decreases at document {at}; {again}")
    return offsets


def _check_ids(path: Path, tokens: np.ndarray, meta: dict, split: str, root: Path, written: bool) -> None:
    """Every id in `tokens` is below the tokenizer's size. Free when the file is the one prepare
    wrote (`written`, or, in a folder from before `split_files`, the mtime recorded with `max_token_id`);
    a file changed since (or a folder from before `max_token_id` was recorded) is read once, in blocks."""
    vocab = int(meta["spec"]["vocab_size"])
    recorded = meta.get("max_token_id")
    if recorded is not None and recorded >= vocab:
        raise UserError(
            f"{root}/meta.json records token id {recorded}, beyond the tokenizer's {vocab} ids; prepare {root} again"
        )
    old_record = meta.get("tokens_mtime_ns", {}).get(split) == path.stat().st_mtime_ns
    if recorded is not None and (written or ("split_files" not in meta and old_record)):
        return
    for start, block in _blocks(tokens):
        if len(block) and int(block.max()) >= vocab:
            at = start + int(np.argmax(block >= vocab))
            raise UserError(
                f"{path} holds token id {int(block[at - start])} at position {at}, beyond the tokenizer's {vocab} ids "
                f"(the file changed after prepare); prepare {root} again"
            )


def _file_changes(folder: Path, split: str, meta: dict) -> dict[str, str | None] | None:
    """How each of `split`'s files differs from what meta.json's `split_files` records (None where it
    does not; `filerecords.file_change`: a stat, a hash when the mtime moved); None for a folder from
    before they were recorded (or a record edited past use: its files are checked as such a folder's)."""
    record = meta.get("split_files")
    files = record.get(split) if isinstance(record, dict) else None
    names = ("tokens.bin", "doc_offsets.npy")
    if not isinstance(files, dict) or not all(
        isinstance(files.get(n), dict) and isinstance(files[n].get("sha256"), str) for n in names
    ):
        return None
    return {n: file_change({**files[n], "path": str(folder / n), "complete": True}) for n in names}


def open_split(root: Path, split: str, meta: dict) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, doc offsets) of `split`, memory-mapped, after the checks of the module docstring."""
    folder = split_dir(root, split)
    counts = meta["splits"][split]
    n, dtype = int(counts["tokens"]), np.dtype(meta["dtype"])
    path = folder / "tokens.bin"
    if not path.is_file():  # was "holds -1 bytes"
        raise UserError(f"{path} is missing; the folder is truncated or corrupt, prepare {root} again")
    size = path.stat().st_size
    if size != n * dtype.itemsize:
        raise UserError(
            f"{path} holds {size} bytes, meta.json expects {n * dtype.itemsize}; the folder is truncated "
            f"or corrupt, prepare {root} again"
        )
    tokens = np.memmap(path, dtype=dtype, mode="r") if n else np.zeros(0, dtype=dtype)
    offsets = _load_offsets(folder / "doc_offsets.npy", int(counts["docs"]), n, Path(root))
    changes = _file_changes(folder, split, meta)
    _check_ids(
        path, tokens, meta, split, Path(root), written=changes is not None and not any(changes.values())
    )
    _refuse_changes(root, changes)  # valid, but not what was written
    return tokens, offsets


def refuse_changed_files(root: Path, meta: dict) -> None:
    """One line when a split's files in `root` are not those its meta.json records (`split_files`): what
    `open_split` checks of them, without opening them (a stat each while their mtimes are as recorded);
    a study checks a `--prepared` folder so before it runs anything."""
    for split in meta["splits"]:
        _refuse_changes(root, _file_changes(split_dir(root, split), split, meta))


def _refuse_changes(root: Path, changes: dict[str, str | None] | None) -> None:
    if changes and (change := next(filter(None, changes.values()), None)):
        raise UserError(
            f"{change}, not those meta.json records (a file replaced or copied in part after it was "
            f"written); the folder is corrupt, prepare {root} again"
        )


UNIGRAM_SAMPLE = 50_000_000
"""Tokens `unigram_entropy` counts at most: enough for a stable estimate of a 128k vocabulary, and a
bounded read (100 MB at uint16) whatever the split's size."""


def unigram_entropy(root: Path, split: str = "train") -> float:
    """Entropy (nats) of the token frequencies of `split`'s first `UNIGRAM_SAMPLE` tokens: the held-out
    loss of a model that predicts token frequencies and nothing else, which is where every run's loss
    stalls first (the unigram plateau) and where a run that has not left it still sits."""
    tokens, _ = open_split(Path(root), split, read_meta(Path(root)))
    counts = np.bincount(np.asarray(tokens[:UNIGRAM_SAMPLE]))
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def check_one_row(
    tokens: int, seq_len: int, where: str, bound: str = "", fix: str = "", knob: str = "seq_len"
) -> None:
    """Refuse rows of `seq_len` tokens from `where`, which holds `tokens` tokens (`bound`: e.g. "at
    most ", when `tokens` bounds an unprepared corpus from above): not one row could be cut from it.
    The reader checks its split here; a study checks every pretraining run here before it writes.
    `fix`: what to do instead of the default, preparing more text; `knob`: what the user sets the row
    length with (`--seq-len` on `data inspect`'s command line)."""
    if tokens < seq_len:
        fix = fix or f"prepare more text or lower {knob}"
        raise UserError(f"{where} has {bound}{tokens} tokens, fewer than one row of {knob} {seq_len}; {fix}")
