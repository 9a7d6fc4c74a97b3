"""Which local files a source reads, by name: text formats, and the compressions read on the fly.

Pretraining corpora are often shipped compressed, one JSON object per line: C4 and Dolma as
`.json.gz`, the Pile and SlimPajama as `.jsonl.zst`, OpenWebText's parts as `.xz`. A `.txt`, `.jsonl`
(`.ndjson`, its other name) or `.json` file may therefore be gzip, bz2, xz or zstd compressed (`name.jsonl.gz`); it is
decompressed as it is streamed, never unpacked to disk. Parquet compresses inside the format, so
`.parquet.gz` is not read.

Trade-offs. gzip, bz2 and xz come with Python; zstd comes with Python 3.14 (`compression.zstd`) and
before that from `backports.zstd` (the `zstd` extra), the same module, with the same file reader as
the other three: memory stays bounded on a file that expands a thousandfold, and a file cut short
raises instead of ending early (python-zstandard's stream reader returns a truncated file's first
part as if whole). Without it a `.zst` file is refused in one line, naming the install and the
command that unpacks it, before anything is written. A folder's compressed text file that
cannot be read is refused the same way rather than skipped, so no shard drops out of a corpus
unseen. The digest recorded in meta.json is of the file's bytes as stored (compressed), which is
what names the file.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import io
import json
import lzma
import re
import zlib
from pathlib import Path
from typing import BinaryIO, NamedTuple

from encoderlab.errors import UserError, not_utf8, save_as_utf8
from encoderlab.paths import typed
from encoderlab.words import count

TEXT_SUFFIXES = {
    ".txt": "txt",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
}
"""Suffix -> how the file is read (`.ndjson`, newline-delimited JSON, is JSON lines by another name)."""
PLAIN_TEXT = tuple(s for s, kind in TEXT_SUFFIXES.items() if kind != "parquet")
"""The suffixes of text read as is or compressed (`name.jsonl.gz`), unlike parquet."""


def _zstd_module():
    """Python 3.14's `compression.zstd`, or its backport; None when neither is installed."""
    for name in ("compression.zstd", "backports.zstd"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


ZSTD = _zstd_module()
"""The zstd module in use, or None."""


def _zstd(stream: BinaryIO) -> BinaryIO:
    return ZSTD.ZstdFile(stream, mode="rb")  # present: `unreadable` refused .zst files without it


COMPRESSIONS = {
    ".gz": lambda f: gzip.GzipFile(fileobj=f, mode="rb"),
    ".bz2": lambda f: bz2.BZ2File(f, mode="rb"),
    ".xz": lambda f: lzma.LZMAFile(f, mode="rb"),  # noqa: SIM115 (the caller closes it)
    ".zst": _zstd,
    ".zstd": _zstd,
}
"""Suffix -> a reader that decompresses a binary stream (it leaves that stream open)."""

UNREAD_COMPRESSIONS = {".lz4": "lz4 -d", ".zip": "unzip", ".7z": "7z x"}
"""Compressions not read, with the command that unpacks them (named in the refusal)."""
UNPACK_COMMANDS = {**UNREAD_COMPRESSIONS, ".zst": "zstd -d", ".zstd": "zstd -d"}
"""The command that unpacks each compression some reader refuses: zstd too, which a corpus reads with a
zstd module and a task file never (`eval.tasks.localfiles`)."""


def compressed_unread(path: Path, unread_by: str) -> str:
    """The clause refusing `path`, compressed (`UNPACK_COMMANDS`) as `unread_by` says is not read
    ("encoderlab does not read", "task files do not read"), with its fix: the command that unpacks it, or gzip, which every reader reads. The one
    wording of a corpus's, a task file's and a BEIR folder's refusal (three copies drifted apart before)."""
    command = UNPACK_COMMANDS[path.suffix.lower()]
    return (
        f"{path} is compressed as {path.suffix}, which {unread_by}; unpack it first "
        f"(`{command} {path}`) or recompress it with gzip"
    )


DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) + (
    (ZSTD.ZstdError,) if ZSTD is not None else ()
)
"""What a truncated or corrupt compressed file raises besides OSError."""

SUPPORTED = ", ".join(TEXT_SUFFIXES) + f" ({'/'.join(PLAIN_TEXT)} also as {', '.join(COMPRESSIONS)})"
"""The accepted names, for messages."""


def file_kind(path: Path) -> str | None:
    """'txt', 'jsonl' or 'parquet' for a file name a source reads (compressed too); None otherwise."""
    suffix = path.suffix.lower()
    if suffix in COMPRESSIONS:
        kind = TEXT_SUFFIXES.get(Path(path.stem).suffix.lower())
        return None if kind == "parquet" else kind
    return TEXT_SUFFIXES.get(suffix)


def has_zstd() -> bool:
    """Whether `.zst` files can be read here (Python 3.14, or the `zstd` extra's backport)."""
    return ZSTD is not None


def unreadable(path: Path) -> str | None:
    """Why a file named as compressed corpus text cannot be read here, and the fix; None if it can."""
    suffix, inner = path.suffix.lower(), Path(path.stem).suffix.lower()
    if inner not in TEXT_SUFFIXES or inner == ".parquet":
        return None
    if suffix in (".zst", ".zstd") and not has_zstd():
        return (
            f"{path} is zstd-compressed and this Python has no zstd module; "
            f"pip install 'encoderlab[zstd]', or unpack it first (`{UNPACK_COMMANDS[suffix]} {path}`)"
        )
    return compressed_unread(path, "encoderlab does not read") if suffix in UNREAD_COMPRESSIONS else None


def unread_reason(path: Path) -> str:
    """Why `path` is not read, and the fix: one clause for a refusal."""
    why = unreadable(path)
    return why or f"{path} has suffix '{path.suffix}', not one of {SUPPORTED}; rename it or convert it"


def decompressed(path: Path, stream: BinaryIO) -> BinaryIO:
    """`stream` (the bytes of `path` as stored) as the bytes it holds: decompressed if `path` says so."""
    opener = COMPRESSIONS.get(path.suffix.lower())
    return stream if opener is None else opener(stream)


def content_bytes(
    files: list[Path], sample_files: int = 8, sample_stored: int = 1 << 22, output_cap: int = 1 << 29
) -> tuple[float, str]:
    """(the bytes `files` hold once decompressed, a note on how compressed ones were sized): plain files
    count their size; compressed ones their size times the ratio of content to stored bytes in the
    first `sample_stored` bytes of each of the first `sample_files` (exact for a file read whole), so a
    plan stays quick on thousands of shards. `output_cap` bounds the work on a file that expands
    a thousandfold (the ratio is then a lower bound)."""
    plain = sum(f.stat().st_size for f in files if f.suffix.lower() not in COMPRESSIONS)
    packed = [f for f in files if f.suffix.lower() in COMPRESSIONS]
    if not packed:
        return plain, ""
    content = stored = 0
    for path in packed[:sample_files]:
        with open(path, "rb") as f:
            head = f.read(sample_stored)
        read = 0
        with decompressed(path, io.BytesIO(head)) as text:
            try:
                # read1: one raw read a call, so the content before the sample's cut is all counted
                while read < output_cap and (chunk := text.read1(1 << 16)):
                    read += len(chunk)
            except (OSError, *DECOMPRESS_ERRORS):  # the sample ends inside the stream, or it is corrupt
                pass
        content, stored = content + read, stored + len(head)
    ratio = content / max(stored, 1)
    note = f" ({count(len(packed), 'compressed file')} at {ratio:.1f}x, measured on {min(len(packed), sample_files)})"
    return plain + ratio * sum(f.stat().st_size for f in packed), note


def user_text(path: Path, fix: str) -> str:
    """The UTF-8 text of a user's file `path` (a byte-order mark dropped), decompressed if its name ends
    in .gz, .bz2, .xz or .zst; one line naming the file if it cannot be read, with `fix` for bad bytes."""
    if why := unreadable(path):
        raise UserError(why)
    try:
        with open(path, "rb") as raw, decompressed(path, raw) as stream:
            data = stream.read()
    except (OSError, *DECOMPRESS_ERRORS) as exc:
        raise UserError(
            f"cannot read {path} ({exc or type(exc).__name__}); download or write it again"
        ) from None
    if said := utf16_without_bom(data[:UTF16_SNIFF], path):  # else decoded: NUL-laced text, "not valid JSON"
        raise UserError("; ".join(said))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if not_utf8(exc)[1]:  # with its byte order mark: "not UTF-8 text (byte 0)" named no encoding
            raise UserError(f"{path} is UTF-16 text, not UTF-8; {save_as_utf8(path, utf16=True)}") from None
        raise UserError(f"{path} is not UTF-8 text (byte {exc.start}); {fix}") from None


_DECOMPRESS = {
    ".gz": "gzip -dc",
    ".bz2": "bzip2 -dc",
    ".xz": "xz -dc",
    ".zst": "zstd -dc",
    ".zstd": "zstd -dc",
}


def json_lines_fix(path: Path, each: str = "json.load({})") -> str:
    """The fix for a .json file holding one array (or, `each` wrapping it in a list, one object): the
    command that writes it as JSON lines."""
    stem = path.name.split(".")[0]
    out = path.with_name(f"{stem}.jsonl")
    while out.exists():  # `> out` empties it before python reads: the array itself if in a .jsonl
        out = out.with_name(f"{out.name[: -len('.jsonl')]}.lines.jsonl")
    convert = 'python -c "import json, sys; [print(json.dumps(r)) for r in ' + each + ']"'
    unpack = _DECOMPRESS.get(path.suffix.lower())
    if unpack:  # python's open() would read the compressed bytes
        return f"convert it to JSON lines, e.g. {unpack} {path} | {convert.format('sys.stdin')} > {out}"
    return f"convert it to JSON lines, e.g. {convert.format('open(sys.argv[1])')} {path} > {out}"


UTF16_SNIFF = 4096
"""Bytes of a text file's content looked at for UTF-16 without a byte order mark (`utf16_order`)."""
UTF16_NUL_SHARE = 0.3
"""The share of NUL bytes at even (or odd) offsets of that block from which the file is taken for UTF-16."""


def content_head(stream: BinaryIO, path: Path) -> bytes:
    """The first `UTF16_SNIFF` bytes of `path`'s content, `stream` (its content, as `decompressed` gives it) left
    unread. A plain file's stream is a reader of a 1 MiB buffer whose `peek` copies all it holds (a MiB more at
    the peak, which tests/data/test_prepare.py's flat-memory check caught): the file is opened again for its head
    instead. A decompressing stream buffers a few KiB, so its `peek` is cheap."""
    if path.suffix.lower() not in COMPRESSIONS:
        with open(path, "rb") as head:
            return head.read(UTF16_SNIFF)
    return stream.peek(UTF16_SNIFF)[:UTF16_SNIFF] if hasattr(stream, "peek") else b""


def utf16_order(head: bytes) -> str | None:
    """`utf-16le` or `utf-16be` when `head`, a text file's first content bytes, is UTF-16 without a byte order
    mark; None otherwise (with its mark, the UTF-8 decode names it: `errors.not_utf8`). Such text of Latin
    script decodes as UTF-8 (each character's other byte is NUL, which is valid UTF-8), so a .txt file was
    trained on as `h\x00e\x00l\x00...` and a .jsonl file's lines each failed as JSON. UTF-8 text holds no
    NUL byte (JSON lines none unescaped): a block whose even or odd bytes are NUL at `UTF16_NUL_SHARE` or more
    is UTF-16, little-endian when the NULs are the odd ones, provided the other offsets hold few NULs (under a
    quarter as many): NULs at both (a block of NUL padding, little-endian integers, UTF-32) are no byte order,
    and were named UTF-16 with an `iconv` line that garbles them. Trade-off: UTF-16 of a script whose
    characters' high bytes are not NUL (CJK) is not recognised here; it fails as UTF-8 instead (`is not UTF-8`)."""
    pairs = len(head) // 2
    if not pairs or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    even, odd = head[0 : 2 * pairs : 2].count(0), head[1 : 2 * pairs : 2].count(0)
    if max(even, odd) < UTF16_NUL_SHARE * pairs or 4 * min(even, odd) >= max(even, odd):
        return None
    return "utf-16le" if odd >= even else "utf-16be"


def utf16_without_bom(head: bytes, path: Path) -> tuple[str, str] | None:
    """Why the text file `path`, whose content starts with `head`, is UTF-16 without a byte order mark
    (`utf16_order`), and the fix (the `iconv` line of its byte order); None otherwise. One wording for every
    reader of a user's text file: `data prepare`'s (`filereaders`) and `user_text`'s (`analyze`'s texts and
    tasks, `advise`'s ladder files), which until 2026-12-07 read such a .jsonl as lines of invalid JSON."""
    order = utf16_order(head)
    if order is None:
        return None
    return f"{path} is UTF-16 text ({order}, no byte order mark), not UTF-8", save_as_utf8(
        path, encoding=order
    )


MAGIC = {b"\x1f\x8b": ".gz", b"\xfd7zXZ\x00": ".xz", b"\x28\xb5\x2f\xfd": ".zst", b"PK\x03\x04": ".zip"}
"""Leading bytes of a compressed file -> the suffix its name should end in."""


def misnamed(path: Path) -> str | None:
    """Why a file named as plain text (.txt/.jsonl/.ndjson/.json) is not, with the fix: its first bytes are a
    compressed or parquet file's; None otherwise. Was: "x.jsonl:1 is not UTF-8 (byte 1)", and with
    --on-error skip every line of the file counted as a bad record."""
    if path.suffix.lower() not in PLAIN_TEXT:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(10)
            f.seek(max(f.seek(0, 2) - 4, 0))
            tail = f.read(4)
    except OSError:
        return None  # the reader says why it cannot be read
    bz2 = head.startswith(b"BZh") and head[4:10] == b"1AY&SY"
    suffix = ".bz2" if bz2 else next((s for m, s in MAGIC.items() if head.startswith(m)), None)
    if head.startswith(b"PAR1") and tail == b"PAR1":
        return f"{path} is a parquet file by its content, not {path.suffix}; rename it {path.stem}.parquet"
    if suffix == ".zip":
        return f"{path} is a zip archive by its content, not {path.suffix}; unpack it first (`unzip {path}`)"
    if suffix is not None:
        return f"{path} is {suffix}-compressed by its content, but its name says plain text; rename it {path.name}{suffix}"
    return None


def saved_dataset(found: list[Path]) -> str | None:
    """Why a folder holding `found` is not read as a corpus, with the fix, when it is what
    `datasets.Dataset.save_to_disk` writes (Arrow files beside a state.json and a dataset_info.json);
    None otherwise. Was: its dataset_info.json was read as JSON lines ("has no field 'text' (fields:
    ...)") and its Arrow files, the data, were left out."""
    names = {q.name for q in found}
    arrow = [q for q in found if q.suffix == ".arrow"]
    if not (arrow and {"state.json", "dataset_info.json"} <= names):
        return None
    where = arrow[0].parent
    return (
        f"{where} is a `datasets` save_to_disk folder (Arrow files), which encoderlab does not read; export "
        f"it as parquet (`datasets.load_from_disk('{where}').to_parquet('{where}.parquet')`) and pass that"
    )


class _NotText(NamedTuple):
    """A folder that is no corpus (`written_folder`): `kind` is the kind its encoderlab marker names, None for
    a tokenizer or model folder another tool saved (`_hf_folder`); `file` is a text file of it."""

    folder: Path
    file: Path
    kind: str | None

    @property
    def what(self) -> str:
        if self.kind is None:
            return f"a tokenizer or model folder (it holds {self.file.name})"
        return f"a folder encoderlab wrote ({self.kind})"


def written_folder(folder: Path, texts: list[Path], named_by: str) -> str | None:
    """Why `folder` (a folder source, or a glob's fixed part) is not read as a corpus, with the fix, when a
    file of a text kind in it (`texts`) lies in a folder encoderlab wrote (its `.encoderlab.json` marker: a
    prepared folder, a tokenizer, a run) or in a tokenizer or model folder another tool saved (`_hf_folder`),
    or `folder` is one; None otherwise. Was: the folder's meta.json or tokenizer.json was read as JSON lines
    and refused as "not valid JSON; fix or remove it", a fix that breaks that folder (a tokenizer trained into
    the corpus folder, then `prepare --source` of the corpus folder), and `--on-error skip` trained on
    whatever of them parsed; another tool's tokenizer folder was read the same way (its pretty-printed JSON
    refused with a fix converting it to JSON lines), and under `--on-error skip` its merges.txt or vocab.txt
    became documents. The check costs a stat per folder holding text files."""
    found = _marked_folder(folder, texts) or _hf_folder(texts)
    if found is None:
        return None
    if found.folder == folder:
        return _instead(found, named_by)
    return (
        f"{found.folder}, in {folder}, is {found.what}, not text: its {found.file.name} would be read as a "
        f"document; move it out of {folder}, or point {named_by} at the text files only (a glob of them)"
    )


def _instead(found: _NotText, named_by: str) -> str:
    """Why the source folder `found` is no corpus, with what to do with it instead: prepared data is trained on
    as it is (`data.path`), the parts of a sharded prepare are merged first, a tokenizer is given as one. Was
    "point --source at text files" alone, which said nothing of the folder's use to someone who took prepared
    data for a corpus to mix in."""
    from encoderlab.data.shard import merged_folder
    from encoderlab.data.target import KIND as PREPARED
    from encoderlab.data.tokenizer_training import KIND as TOKENIZER

    folder, text = found.folder, f"point {named_by} at text files"
    if found.kind == PREPARED and (merged := merged_folder(folder)) is not None:
        return (
            f"{folder} is a part of a sharded prepare into {merged} (tokens, not text); join the parts with "
            f"`encoderlab data merge --out {typed(merged)}` and train on that (data.path={merged}), or {text}"
        )
    if found.kind == PREPARED:
        return (
            f"{folder} is prepared data (tokens of `data prepare`, not text): train on it as it is "
            f"(data.path={folder}), or {text}, such as those it was prepared from (its meta.json names them)"
        )
    if found.kind == PREPARED + " shards":
        merged = folder.with_name(folder.name.removesuffix(".shards"))
        return (
            f"{folder} holds the parts of a sharded prepare (tokens, not text); join them with "
            f"`encoderlab data merge --out {typed(merged)}` and train on that (data.path={merged}), or {text}"
        )
    if found.kind in (TOKENIZER, None):
        return f"{folder} is {found.what}, not text: give it as a tokenizer (data prepare --tokenizer), and {text}"
    return f"{folder} is {found.what}, not text; {text}"


def _marked_folder(folder: Path, texts: list[Path]) -> _NotText | None:
    """The first folder encoderlab wrote (its marker) that holds one of `texts`, looked for up to `folder`;
    None if there is none."""
    from encoderlab.outdir import owner  # lazy: outdir is not a data module

    seen: set[Path] = set()
    for q in texts:
        for parent in [q.parent, *q.parent.parents]:
            if parent in seen:
                break
            seen.add(parent)
            if (marker := owner(parent)) is not None:
                return _NotText(parent, q, str(marker.get("kind", "an output")))
            if parent == folder:
                break
    return None


_TOKENIZERS_HEAD = re.compile(r'\A\s*\{\s*"version"\s*:\s*"[^"]*"\s*,\s*"truncation"\s*:')
"""How the `tokenizers` library begins every file it saves (`Tokenizer.save`, a `tokenizer.json`), compact or
pretty: its fields in serde's order, `version` then `truncation`."""

_VOCABULARY_HEAD = re.compile(r'\A\s*\{\s*(?:"(?:[^"\\]|\\.)*"\s*:\s*\d+\s*,\s*){8,}')
"""A slow BPE vocabulary (GPT-2's `vocab.json`) on one line longer than the head: its values ids up to the
last pair the head cuts (`_VOCABULARY_SLACK`). Was: its first 8 values alone, so a corpus's long first
record (a JSON line over 64 KiB) whose 8 first fields held numbers and whose text field was not `text`
(`#content`) made its folder a tokenizer's."""

_VOCABULARY_SLACK = 1024
"""How much of the head may follow the last whole `"token": id` pair of a vocabulary: the pair the head cuts."""

_TOKENIZER_KEYS = ("model", "added_tokens", "pre_tokenizer", "normalizer", "post_processor", "decoder")
_CONFIG_KEYS = (  # tokenizer_config.json, special_tokens_map.json
    *("tokenizer_class", "model_max_length", "added_tokens_decoder", "additional_special_tokens"),
    *("clean_up_tokenization_spaces", "do_lower_case", "add_bos_token", "add_eos_token", "add_prefix_space"),
    *(f"{kind}_token" for kind in ("bos", "eos", "unk", "pad", "mask", "cls", "sep")),
)
HF_KEYS = frozenset((*_TOKENIZER_KEYS, *_CONFIG_KEYS, "model_type", "architectures", "transformers_version"))
"""Top-level keys of the JSON files `save_pretrained` writes (tokenizer.json, tokenizer_config.json,
special_tokens_map.json, config.json): `hf_json` tells such a file from a corpus's by them."""

_HEAD_BYTES = 1 << 16
"""What is read of a .json file to tell a tokenizer's from data: the keys that say so come first."""


def _hf_folder(texts: list[Path]) -> _NotText | None:
    """The folder of the first of `texts` that is a tokenizer or model JSON file another tool saved
    (`hf_json`): a Hugging Face tokenizer or model folder. Was: told by the name alone (tokenizer.json,
    tokenizer_config.json, special_tokens_map.json), so a corpus's JSON lines file of one of those names was
    refused, and a tokenizer saved as `bpe.json` (`Tokenizer.save`) was read as a corpus file, its folder's
    merges.txt as documents under `--on-error skip`. Costs a 64 KiB read of each uncompressed .json file (a
    corpus's are mostly .jsonl, which are not read), and of each file named vocab.txt: a folder holding only
    BERT's WordPiece vocabulary (`wordpiece_vocab`) was read as text, a token a document."""
    for q in texts:
        if (q.suffix == ".json" and hf_json(q)) or (q.name == "vocab.txt" and wordpiece_vocab(q)):
            return _NotText(q.parent, q, None)
    return None


WORDPIECE_SPECIALS = frozenset(("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))
"""BERT's special tokens, which its vocab.txt lists among its first lines (ids 0-103 in bert-base)."""


def wordpiece_vocab(path: Path) -> bool:
    """Whether the text file `path` is a WordPiece vocabulary (BERT's vocab.txt), by its first 64 KiB: one
    token a line (no line with a space), BERT's five special tokens each a line among the first 1,000. A
    text file of that name holding prose (a corpus file) fails both and is read as data."""
    head = _head(path)
    if head is None:
        return False
    lines = head.splitlines()[:1000]
    return set(lines) >= WORDPIECE_SPECIALS and not any(" " in line for line in lines)


def hf_json(path: Path) -> bool:
    """Whether the .json file `path` is one a tokenizer or model folder holds, by its first 64 KiB: a
    `tokenizers` file (`_TOKENIZERS_HEAD`); a pretty-printed document (no JSON lines file is one) with a
    top-level key of `HF_KEYS` and none `text` (a corpus record written pretty, `model` among its fields, is
    data, refused where it is read with the command that converts it); a first line, without `text`, that is an object with two of them or of
    token ids alone (a vocabulary; one longer than the head, by its ids up to where the head cuts it). A JSON line with `text` is
    data; so is a file that cannot be read (it is refused where it is read)."""
    head = _head(path)
    if head is None:
        return False
    if _TOKENIZERS_HEAD.match(head):
        return True
    first = head.lstrip().split("\n", 1)[0]
    if first.strip() == "{":  # pretty-printed, which no JSON lines file is: its top-level keys
        keys = set(_TOP_KEYS.findall(head))  # `text` says data, as on a JSON line: a record written pretty
        return "text" not in keys and bool(HF_KEYS.intersection(keys))
    try:
        record = json.loads(first)
    except ValueError:  # a first line longer than the head: a big vocabulary's ids, or data (read as such)
        ids = _VOCABULARY_HEAD.match(head)
        return ids is not None and ids.end() >= len(head) - _VOCABULARY_SLACK and '"text"' not in head
    if not isinstance(record, dict) or "text" in record:
        return False
    # a JSON line: two such keys (one, `model`, is a corpus field too), or token ids alone (a vocabulary)
    return len(HF_KEYS.intersection(record)) > 1 or (len(record) > 8 and _all_ints(record.values()))


def _head(path: Path) -> str | None:
    """The first `_HEAD_BYTES` of `path` as text (bad bytes replaced), or None when it cannot be read: such a
    file is refused where it is read, not here."""
    try:
        with open(path, "rb") as f:
            return f.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


def _all_ints(values) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


_TOP_KEYS = re.compile(r'(?m)^[ \t]{1,2}"([^"]+)"\s*:')
"""Keys of a pretty-printed JSON document's top level, as `json.dumps(indent=2)` and `tokenizers` write them."""
