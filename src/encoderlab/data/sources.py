"""Where a corpus comes from: named assets, local files, Hugging Face datasets, and their mixture.

A `SourceConfig` names one corpus; `iter_documents` streams it as `Document(id, text)` records,
one at a time, so no corpus is ever held in memory. `mix_documents` interleaves several sources
by weight with a seeded generator (`data/mixing.py`), so the same configs always give the same
document stream.

Locations, tried in this order:
  * `hf:ORG/NAME` - a Hugging Face dataset streamed with `datasets` (`hf_config`, `hf_split`, and
    `hf_revision` to pin a commit, branch or tag), from
    the hub or from a local mirror (`data/hub.py`: ENCODERLAB_HUB_DATA), file by file, so a worker
    can read a slice of the files (`Shard`); refused at once when `HF_HUB_OFFLINE=1` and no mirror;
  * an existing file or folder (read as itself, whatever `[*?` its name holds: `is_pattern`), or
    a glob - `.txt` (one document per blank-line paragraph by
    default, or per line, or per file: `txt_unit`), `.jsonl`/`.json` (one JSON object per line),
    either of them gzip, bz2, xz or zstd compressed (`data/filekinds.py`), and `.parquet`; folders
    are searched recursively, hidden names left out as a glob leaves them (`paths.visible_entries`);
  * a named hub corpus (`fineweb-edu-10bt`, ...: `data/corpora.py`), read as the `hf:` source it
    stands for (its text field, config and split are the table's);
  * a name in the asset registry (`encoderlab assets list`), read from its `data.jsonl`.

A `.txt` file is prose more often than a list of one-line records, so its default unit is the
paragraph (lines up to a blank line), as in wikitext and Project Gutenberg dumps; `txt_unit=line`
reads one document per line (what `analyze cka --texts` does) and `txt_unit=file` one per file.
The unit used is logged once per source and recorded in meta.json.

Bad input never passes silently. Empty and whitespace-only documents are dropped and counted.
An unreadable file, a line that is not JSON or not UTF-8, or a corrupt parquet file is either
refused (`on_error="raise"`, the default: one UserError naming the file and line) or skipped and
counted (`on_error="skip"`); the counts land in `SourceStats` and from there in `meta.json`.

Each local file is hashed (sha256) while it is read, in the same pass, so `meta.json` records a
digest of exactly the bytes that were used (`complete` says whether the file was read to its end).
"""

from __future__ import annotations

import glob
import logging
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from encoderlab.data.corpora import CORPORA
from encoderlab.data.filekinds import (
    SUPPORTED,
    file_kind,
    saved_dataset,
    unread_reason,
    unreadable,
    written_folder,
)
from encoderlab.data.filereaders import Document, read_file  # noqa: F401 (Document: re-exported)
from encoderlab.data.hub import check_revision, is_commit, mirror_root, resolve_dataset, well_formed_hub_id
from encoderlab.data.hubread import read_hub_documents
from encoderlab.data.mirrorpin import read_unpinned, verified_commit
from encoderlab.data.shard import Shard
from encoderlab.errors import UserError
from encoderlab.paths import visible_entries

log = logging.getLogger(__name__)

GLOB_CHARS = set("*?[")
HUB_OPTIONS = ("hf_config", "hf_split", "hf_data_dir", "hf_files", "hf_revision")
"""The options that select part of a hub dataset (`hf:ORG/NAME`); any other source refuses them."""


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    """One corpus: where it is, which field holds the text, and its weight in a mixture."""

    location: str
    """An asset name (`wiki-leads`), a file, folder or glob (`data/**/*.jsonl`), or `hf:ORG/NAME`."""
    text_field: str = "text"
    """Field (jsonl/parquet/HF column) holding the document text."""
    id_field: str = "id"
    """Field holding a document id; records without it get `FILE:LINE` ids."""
    weight: float = 1.0
    """Relative share of documents drawn from this source when several are mixed."""
    txt_unit: Literal["paragraph", "line", "file"] = "paragraph"
    """For .txt files: one document per blank-line-separated paragraph, per line, or per file."""
    hf_split: str = "train"
    """Split of a Hugging Face dataset."""
    hf_config: str | None = None
    """Configuration (subset) name of a Hugging Face dataset."""
    hf_data_dir: str | None = None
    """Folder of a Hugging Face dataset repo to read (`load_dataset(..., data_dir=)`)."""
    hf_files: str | None = None
    """`A:B`: only the split's data files A to B-1 (`HubDataset.span`); `--shard` splits those."""
    hf_revision: str | None = None
    """The hub revision to read (a commit sha, branch or tag: `load_dataset(..., revision=)`); None: the
    default branch as it is when the source is first read (its commit is recorded either way)."""

    def __post_init__(self):
        # The messages do not name the source: every reader of one prefixes it (`from_dict`'s `where`,
        # `source '{spec}'` for `--source` and a study's corpus entry), and a prefix here named it twice.
        if not self.location:
            raise ValueError("the location is empty; name a file, folder, glob, corpus or hf:ORG/NAME")
        if not (math.isfinite(self.weight) and self.weight > 0):  # inf: a NaN mixture, silently
            raise ValueError(f"weight must be a finite number > 0, got {self.weight}")
        if not self.text_field.strip():  # was refused per file as "has no field ''", or for a .txt not at all
            raise ValueError(
                "text_field is empty; name the field holding the text, or drop it (default 'text')"
            )
        if self.hf_revision is not None:
            check_revision(self.hf_revision)


def parse_source(spec: str) -> SourceConfig:
    """A source from its command-line form `LOCATION[#key=value,...]`, e.g.
    `corpus/*.jsonl#text_field=body,weight=2` or `wiki-leads#weight=0.5`. Options follow the last `#`,
    and a file or folder whose own name holds a `#` is read whole (it could not be named before)."""
    from encoderlab.config import from_dict, parse_scalar, recorded_fields, unknown_fields

    location, sep, options = spec.rpartition("#")
    if not sep or Path(spec).exists():
        location, options = spec, ""
    data: dict = {}
    for item in filter(None, options.split(",")):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise UserError(f"source option '{item}' in '{spec}' must look like key=value")
        if key in data:  # the last one silently won
            raise UserError(f"source '{spec}': option {key} given twice; give it once")
        data[key] = (
            value
            if key in ("text_field", "id_field", *HUB_OPTIONS)
            else parse_scalar(value, f"source option '{key}'")
        )
    # `location` is what precedes the `#`: listed as an option, `#location=x` read x instead, silently
    options_valid = [f for f in recorded_fields(SourceConfig) if f != "location"]
    if line := unknown_fields(f"source '{spec}'", data, options_valid):
        where = " (the location is what precedes the '#')" if "location" in data else ""
        raise UserError(line.replace("unknown field", "unknown option") + where)
    return from_dict(SourceConfig, {"location": location, **data}, where=f"source '{spec}'")


@dataclass
class SourceStats:
    """What reading a source found; written to meta.json."""

    location: str
    """The source as given (path, glob, asset or hub id)."""
    docs: int = 0
    """Non-empty documents yielded."""
    empty: int = 0
    """Empty or whitespace-only documents dropped."""
    bad_records: int = 0
    """Lines that were not valid JSON / UTF-8 / lacked the text field (on_error="skip")."""
    bad_files: int = 0
    """Files that could not be opened or parsed at all (on_error="skip")."""
    repeats: int = 0
    """Times the source was restarted by an `all_exhausted` mixture."""
    exhausted: bool = False
    """Read to its end (every file of it, or of its `--shard` slice): a file added after those read would
    have been read too (`data/freshness.py`). False for one a mixture or `--max-docs` stopped reading."""
    files: list[dict] = field(default_factory=list)
    """Per local file: path, bytes read, sha256 of those bytes, complete (read to its end), mtime_ns (when
    it was opened: `data/freshness.py`); per hub file: its path in the repo, documents read, complete."""
    identity: dict = field(default_factory=dict)
    """What the source is: kind (files, asset, hf), and for hub data its id, config, split,
    revision and every file of the split (so a study can tell two corpora apart)."""
    resolved: str = ""
    """For local files, the location made absolute where it was read (`location` is as given, maybe
    relative), so a study run from elsewhere can tell its corpus (`study/prepared.py`); not part of
    `identity`, so a corpus that moves keeps its node keys."""
    mirror_commit: str | None = None
    """For hub data read unpinned from a mirror (identity revision `local`): the commit its download records
    verified when it was read (`data/mirrorpin.py`; null when they named no one commit), so `data merge`
    and a study tell it from a pin of that commit with no mirror; written for such a source only (absent:
    any other, or a folder from before). Not part of `identity`: no folder's or node's key moves."""

    first_skipped: dict[str, str] = field(default_factory=dict)
    """Per skip reason counted above (empty, bad_records, bad_files), where its first one is: FILE:LINE or
    FILE row N (a hub file's HUB#FILE:ROW, or the document's id where its reader names no line), or for
    a bad record or file the line `--on-error raise` would have refused it with. Not part of `identity`."""

    def skip(self, reason: str, where: str) -> None:
        """Count one skipped document (or file) of `reason`, remembering where the first one is."""
        setattr(self, reason, getattr(self, reason) + 1)
        self.first_skipped.setdefault(reason, where)

    def to_dict(self) -> dict:
        record = dict(self.__dict__)
        if not read_unpinned(self.identity):
            del record["mirror_commit"]
        return record


# ---------------------------------------------------------------- resolving locations


def is_pattern(location: str, folder: Path | None = None) -> bool:
    """`location` (relative ones read from `folder`, the working directory when None: a study file's folder
    for its datasets, `study/files.py`) is expanded as a glob: it has `*`, `?` or `[` and names no existing
    path; `folder`'s own `*`, `?` or `[` are no pattern. A file or folder
    whose name holds them (`corp[1].jsonl`, `runs[2024]/`) is read as itself, even where the pattern would
    also match others (`corp1.jsonl`): as a pattern it read those instead, or was refused as matching
    nothing. A glob meant where such a name exists is written so no path has its name (`corp[1].json[l]`);
    a literal `[`, `*` or `?` in a glob's folder part is escaped as `glob.escape` writes it (`[[]`). A symlink
    of such a name is itself too, its target gone or not: one to nothing was "the glob ... matches no file",
    which hid the link (it is refused, or skipped, as a link to nothing, `filereaders`)."""
    return any(c in location for c in GLOB_CHARS) and not names_a_path(Path(folder or "", location))


def names_a_path(location: str | Path) -> bool:
    """`location` names an existing path or a symlink to nothing (read, to be refused naming its target)."""
    return Path(location).exists() or _dangling(Path(location))


def resolve_files(location: str, named_by: str = "--source") -> list[Path] | None:
    """The sorted text files a path/folder/glob names, or None if it names no path at all. `named_by`:
    what named `location` (a flag, a study file's corpus entry), for the fix of one that holds none."""
    if is_pattern(location):
        paths = [Path(p) for p in glob.glob(location, recursive=True)]
        if not paths:
            raise UserError(f"the glob '{location}' matches no file; check the pattern")
    elif names_a_path(location):  # a symlink to nothing too: was "not an existing file, folder or glob"
        paths = [Path(location)]
    else:
        return None
    files: list[Path] = []
    for p in paths:
        # a symlink whose target is gone (shared storage unmounted, data moved) is kept, to be refused or
        # skipped when read as a glob's is: a folder dropped it without a word, and its documents with it
        found = (
            [q for q in visible_entries(p, recursive=True) if q.is_file() or _dangling(q)]
            if p.is_dir()
            else [p]
        )
        for q in found:  # compressed text that cannot be read is refused, never dropped from the corpus
            if (why := unreadable(q)) is not None:
                raise UserError(why)
        if p.is_dir():
            if (why := saved_dataset(found)) is not None:
                raise UserError(why)
            texts = [q for q in found if file_kind(q) is not None]
            if (why := written_folder(p, texts, named_by)) is not None:
                raise UserError(why)
            files.extend(texts)
        elif file_kind(p) is not None:
            files.append(p)
        elif not is_pattern(location):
            raise UserError(unread_reason(p))
    if not files:
        raise UserError(f"'{location}' holds no {SUPPORTED} file; point {named_by} at text files")
    # `data/**/*.json` matches a tokenizer's files one by one
    if is_pattern(location) and (why := written_folder(_glob_folder(location), files, named_by)) is not None:
        raise UserError(why)
    # One file reached by two names (a symlink to it, or a glob's `**` around a link loop, which
    # `glob.glob` follows up to its depth limit) is read once: its documents were trained on again per name.
    first: dict[Path, Path] = {}
    for f in sorted(set(files)):
        first.setdefault(f.resolve(), f)
    return sorted(first.values())


_ESCAPED = re.compile(r"\[([\[*?])\]")
"""A literal `[`, `*` or `?` as `glob.escape` writes it (`[[]`)."""


def _glob_folder(location: str) -> Path:
    """The folder a glob's matches lie under: its folder's parts before the first that holds a pattern,
    unescaped (`runs[[]2024]/*.jsonl` -> `runs[2024]`). Was: cut at the first `[`, `*` or `?`, escaped or
    not, so an escaped folder part (as a study file's folder is written) named its parent folder: a
    tokenizer folder a glob matched was "X, in PARENT, ..." where the same glob in a plainly named folder
    said what X is, and a marked folder above was taken for the one the files lie in."""
    fixed: list[str] = []
    for part in Path(location).parent.parts:
        if any(c in _ESCAPED.sub("", part) for c in GLOB_CHARS):
            break
        fixed.append(_ESCAPED.sub(r"\1", part))
    return Path(*fixed)


def _dangling(path: Path) -> bool:
    """`path` is a symlink to nothing (its target missing; a link loop is left out, as before)."""
    if not path.is_symlink():
        return False
    try:
        path.stat()
    except FileNotFoundError:
        return True
    except OSError:  # a loop (ELOOP): no file anyone meant to read
        return False
    return False


def unread_files(location: str) -> list[Path]:
    """The files a folder or glob source holds that `resolve_files` leaves out (not a text kind:
    a README, a .csv), sorted; [] for anything else. `mixing` says how many, so none goes unnoticed."""
    if is_pattern(location):
        paths = [Path(p) for p in glob.glob(location, recursive=True)]
    else:
        paths = [Path(location)] if Path(location).is_dir() else []
    found = [
        q for p in paths for q in (visible_entries(p, recursive=True) if p.is_dir() else [p]) if q.is_file()
    ]
    return sorted({q for q in found if file_kind(q) is None})


def _asset_path(name: str, fix: str = "fix --source") -> Path:
    try:
        from encoderlab.data.assets import ASSETS, asset_jsonl
    except ImportError:  # the assets module is optional for local-file use
        raise UserError(
            f"'{name}' is not a file, folder or glob, and no asset registry is installed"
        ) from None
    if name not in ASSETS and Path(name).is_absolute():  # a path: the list of names is noise
        raise UserError(f"'{name}' is not an existing file, folder or glob; {fix}")
    if name not in ASSETS:
        raise UserError(
            f"'{name}' is not an existing file, folder or glob, nor an asset name "
            f"(assets: {', '.join(sorted(ASSETS))}) or a hub corpus ({', '.join(sorted(CORPORA))}); {fix}"
        )
    return asset_jsonl(name)


CORPUS_FIXES = ("text_field", "id_field", "hf_config", "hf_split", "hf_data_dir")
"""The options a named hub corpus's row sets itself (`HubCorpus.source`)."""


def expand(cfg: SourceConfig) -> SourceConfig:
    """A named hub corpus as the `hf:` source it stands for, keeping the weight, a pinned revision
    (`hf_revision`) and a slice of its files (`hf_files`: it was dropped, so `fineweb-edu-350bt#hf_files=0:K`,
    the command `study plan` gives, read the whole sample); others unchanged. An option the row sets, given another value, is refused
    rather than ignored."""
    corpus = CORPORA.get(cfg.location)
    if corpus is None:
        return cfg
    source = replace(corpus.source(weight=cfg.weight), hf_files=cfg.hf_files, hf_revision=cfg.hf_revision)
    default = SourceConfig(location=cfg.location)
    clash = [
        f"{k}={getattr(cfg, k)}"
        for k in CORPUS_FIXES
        if getattr(cfg, k) != getattr(default, k) and getattr(cfg, k) != getattr(source, k)
    ]
    if clash:
        raise UserError(
            f"source {cfg.location}: {', '.join(clash)} differs from what the named corpus reads (hub id "
            f"{corpus.hub_id}, config {corpus.config or 'default'}, split {corpus.split}, text field "
            f"{corpus.text_field}); drop it, or name the dataset as hf:{corpus.hub_id} with its own options"
        )
    return source


def local_paths(sources) -> list[Path]:
    """What the sources read on this machine: their files, their folders, whose walk would also
    read an output written inside them (`data prepare --out SOURCE_DIR/p` read its own OUT.tmp), and
    the mirror folders of hub datasets, whose configs' patterns would too (`data/*/*`)."""
    files = []
    for d in map(describe, [s for s in sources if not fixed_on_hub(s)]):
        ds = d.get("dataset")
        files += [Path(ds.location)] if ds is not None and ds.location != ds.hub_id else []
        files += [Path(p) for p in d["files"]] if ds is None else []
    return files + [Path(s.location) for s in sources if Path(s.location).is_dir()]


def mirror_folders(sources) -> list[Path]:
    """The mirror folders (`ENCODERLAB_HUB_DATA`) of the hub sources among `sources` that have one here, from
    the variable alone: nothing opened (`datasets` leaves a lock in its cache), no hub asked, nothing refused
    (a missing mirror is refused where the source is read) but the variable naming a file, read only where a
    source is a hub one. For a command that reads the sources later (`study
    run`): its --out must lie outside them, checked before it writes anything."""
    return hub_mirror_folders([s.location[3:] for s in map(expand, sources) if s.location.startswith("hf:")])


def hub_mirror_folders(hub_ids) -> list[Path]:
    """The mirror folders (`ENCODERLAB_HUB_DATA`) of these hub dataset ids that have one here, as
    `mirror_folders` reads them: the one test of where a hub id's mirror lies, for a command whose --out must
    lie outside what it reads (`study run`'s corpora, `eval`'s tasks)."""
    hub_ids = list(hub_ids)
    root = mirror_root() if hub_ids else None  # a command reading no hub id reads no mirror variable
    return [root / h for h in hub_ids if root is not None and well_formed_hub_id(h) and (root / h).is_dir()]


def fixed_on_hub(cfg: SourceConfig) -> bool:
    """A hub source read from the hub itself (no mirror) at a full commit sha: it holds no file on this
    machine and its files cannot change, so a rerun into a folder that holds it need not ask the hub
    (`local_paths` skips it; `data prepare` lists it, `check_disjoint`, only when it has work to do)."""
    cfg = expand(cfg)
    pin = cfg.hf_revision
    return cfg.location.startswith("hf:") and pin is not None and is_commit(pin) and mirror_root() is None


def describe(cfg: SourceConfig, fix: str = "fix --source", named_by: str = "--source") -> dict:
    """The resolved kind and files of a source, checked without reading any document (a hub
    dataset's files are listed from its card, not downloaded). `fix` ends the message of a source
    that is nowhere: what to change where the name came from (a flag, a study file's field); `named_by`
    is that place, named in the fix of a folder or glob that holds no text file."""
    cfg = expand(cfg)
    if cfg.location.startswith("hf:"):
        ds = resolve_dataset(cfg.location[3:], cfg.hf_config, cfg.hf_split, cfg.hf_data_dir, cfg.hf_revision)
        return {"kind": "hf", "files": list(ds.files), "dataset": ds, "span": ds.span(cfg.hf_files)}
    default = SourceConfig(location=cfg.location)
    hub_only = [f"{k}={getattr(cfg, k)}" for k in HUB_OPTIONS if getattr(cfg, k) != getattr(default, k)]
    if hub_only:  # hf_config, hf_split and hf_data_dir of a local source were ignored silently
        raise UserError(
            f"source {cfg.location}: {', '.join(hub_only)} selects files of a hub dataset (hf:...), which this "
            "source is not; drop it"
        )
    files = resolve_files(cfg.location, named_by)
    if files is not None:
        _check_fields_apply(cfg, files)
        return {"kind": "files", "files": files, "span": range(len(files))}
    asset = _asset_path(cfg.location, fix)
    _check_fields_apply(cfg, [asset])
    return {"kind": "asset", "files": [asset], "span": range(1)}


def _check_fields_apply(cfg: SourceConfig, files: list[Path]) -> None:
    """A field named for a source of .txt files only, which have none, or a `txt_unit` for one without
    a .txt file, was ignored silently (and `txt_unit` still entered the prepare settings)."""
    default = SourceConfig(location=cfg.location)
    if files and cfg.txt_unit != default.txt_unit and not any(file_kind(p) == "txt" for p in files):
        raise UserError(
            f"source {cfg.location}: txt_unit={cfg.txt_unit} says what a document of a .txt file is, and it "
            "has none (each JSONL or parquet record is one document); drop it"
        )
    if not files or any(file_kind(p) != "txt" for p in files):
        return
    named = [
        f"{k}={getattr(cfg, k)}" for k in ("text_field", "id_field") if getattr(cfg, k) != getattr(default, k)
    ]
    if named:
        raise UserError(
            f"source {cfg.location}: {', '.join(named)} names a JSONL or parquet field, but its files are .txt, "
            "which have none; drop it (#txt_unit=paragraph|line|file says what a document is)"
        )


def recorded_on_error(on_error: str) -> str:
    """`on_error` as a recipe (a prepared folder's meta.json, a tokenizer's SOURCES) records it: `refuse`
    reads what `raise` reads and differs only in its fix's words, so data made either way is one recipe
    (a study's prepare node passes `refuse` since 2026-12-06; its folders made before are reused)."""
    return "raise" if on_error == "refuse" else on_error


def iter_documents(
    cfg: SourceConfig,
    stats: SourceStats | None = None,
    on_error: Literal["raise", "skip", "refuse"] = "raise",
    shard: Shard | None = None,
) -> Iterator[Document]:
    """Stream the non-empty documents of one source, in a fixed order, counting into `stats`;
    with `shard`, only those of its slice of the source's files. `refuse` is `raise` for a command
    without `--on-error`: its one line does not suggest `--on-error skip`."""
    stats = stats if stats is not None else SourceStats(cfg.location)
    if on_error not in ("raise", "skip", "refuse"):
        raise UserError(f"on_error must be 'raise' or 'skip', got '{on_error}'")
    cfg = expand(cfg)
    desc = describe(cfg)
    files = (shard or Shard(0, 1)).select_in(desc["span"])
    if desc["kind"] == "hf":
        stats.identity = desc["dataset"].identity(desc["span"] if cfg.hf_files is not None else None)
        if read_unpinned(stats.identity):  # as a pin's check, on each read (an `all_exhausted` restart too)
            stats.mirror_commit = verified_commit(stats.identity)
        raw: Iterator[Document] = read_hub_documents(
            desc["dataset"], files, cfg.text_field, cfg.id_field, stats
        )
    else:
        stats.identity = {"kind": desc["kind"]}
        stats.resolved = os.path.realpath(cfg.location) if desc["kind"] == "files" else ""
        if any(file_kind(p) == "txt" for p in desc["files"]):
            stats.identity["txt_unit"] = cfg.txt_unit
        # Asset ids are global (the asset contract); local ids are namespaced by file so a local
        # record "1" can never match an evaluation record "1" during decontamination.
        asset = desc["kind"] == "asset"
        raw = (
            doc
            for path in desc["files"][files.start : files.stop]
            for doc in read_file(path, cfg, stats, on_error, "" if asset else f"{path}#")
        )
    for doc in raw:
        if doc.text.strip():
            stats.docs += 1
            yield doc
        else:
            stats.skip("empty", doc.where or doc.id)
    stats.exhausted = True
