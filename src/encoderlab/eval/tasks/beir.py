"""A task file's retrieval data in BEIR's layout (`data: {beir: FOLDER or OWNER/NAME}`).

BEIR's folders (what `beir`'s `GenericDataLoader` reads, and hub repositories written so) hold
`corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and `qrels/<split>.tsv` with
the header `query-id corpus-id score`. Here `qrels/train.tsv` gives the training pairs, `qrels/test.tsv`
the test split and `qrels/dev.tsv` the validation split (without it, `data.validation_fraction` of
train's queries, seeded, as a pair task cuts its validation). The jsonl files may be compressed as a
task's data files may (`corpus.jsonl.gz`, as BEIR's own repositories publish them, or `.bz2`, `.xz`); one
compressed otherwise (`.zst`, `.zip`, ...), or a folder holding BEIR's zip download, is named in the refusal
with the command that unpacks it. Test-only data (qrels/test without qrels/train, every BEIR set but MS
MARCO) trains on the pairs `data.train` names: another BEIR folder (an MS MARCO folder, as paper 1 trains
the retriever it scores zero-shot on NQ and MLDR), read by the same reader for its queries, qrels/train and
the documents those judge only (`_training_folder`), or a pairs file, read as a task file's IR train split
(`irpairs.py`, its `columns:` beside data.beir for that file alone); without it, such data is refused naming
that fix (`_test_only`). Its validation is the scored folder's qrels/dev, else the cut from the training
queries as above, ranked against the training documents read: the LR is picked on held-out training data,
never on the set scored (paper-nq halves NQ's test qrels as EncodEval does; a task file can keep its test
whole). A validation cut from train is counted (`splits.cut_validation`), so a small one is noted.

Design. A hub id is only resolved to a folder (its mirror under $ENCODERLAB_HUB_DATA, else the local
hub cache's snapshot, downloaded when the hub is reachable), and every folder is read by the one reader
below, so a local folder and a hub dataset are checked alike. The files are read with Python's json and
csv modules, not `datasets`, so a refusal names the file and line, through the task files' reader
(`localfiles.text_lines`: decompressed, a UTF-8 byte order mark dropped as BEIR's exports often carry
one, a file not UTF-8 or damaged refused in its one line). What BEIR's loader does unsaid is one
line here: it skips the first qrels line whatever it holds (a file without a header lost its first
judgment), keeps the later of two corpus rows sharing an `_id`, stops with a KeyError on a judgment of a
query the queries file lacks, and scores one of a document the corpus lacks as never retrieved; its
`int(score)` refuses `1.0`, which is read here as the grade 1. Scores as BEIR's `EvaluateRetrieval.evaluate`
(pytrec_eval, the mean over every query pytrec_eval returns): graded relevance (trec_eval's gain is the
grade; a grade below 1 is judged not relevant, a negative one too: TREC's -2 for spam is read, as BEIR's
loader reads it, and scored as trec_eval scores it, `metrics/retrieval.py`), ranked against the whole corpus (the built-in IR tasks
rank judged documents only), ties in score broken by document id, the larger first (trec_eval's
`comp_sim_docno`). The queries scored are those the split's qrels name, as BEIR's loader keeps only
those: a query judged only 0 is scored (nDCG and recall 0, counted in the mean: pytrec_eval scores every
query of the qrels, BEIR divides by their count), a query the qrels do not name is not. A document is
`title text`, stripped, as BEIR's dense models join them (`SentenceBERT`'s default sep " "). A query never
retrieves the document whose id is its own, always, as BEIR's defaults do (`EvaluateRetrieval.evaluate`'s
`ignore_identical_ids=True` pops it from the results; `DenseRetrievalExactSearch.search` skips it): it
matters where queries and documents share ids (ArguAna, Quora), and a task-file switch would only let a
score differ from BEIR's. The judgment of such a document is kept, as BEIR keeps the qrels whole, so it
counts as relevant and never found. Trade-off: the scored corpus is held in memory whole (it is ranked
whole); a training folder's corpus is streamed, keeping the documents its train qrels judge, so a cut
validation is ranked against those (every training query's judged documents), not the whole folder.
"""

from __future__ import annotations

import csv
import json
import os
import random
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from encoderlab.data.filekinds import UNPACK_COMMANDS, compressed_unread
from encoderlab.data.hub import dataset_location, hub_failure, hub_offline, refetch_fix, well_formed_hub_id
from encoderlab.errors import UserError
from encoderlab.eval.spec import NEGATIVE, IRSplit, TaskData
from encoderlab.eval.tasks.custom_data import VALIDATION_FRACTION
from encoderlab.eval.tasks.irpairs import read_pairs
from encoderlab.eval.tasks.localfiles import COMPRESSIONS, text_lines
from encoderlab.eval.tasks.splits import cut_size, cut_validation
from encoderlab.words import count

QRELS_HEADER = ("query-id", "corpus-id", "score")
SCORED = {"test": "test", "dev": "validation"}
"""qrels file -> the split it is."""
FILES = ("corpus.jsonl*", "queries.jsonl*", "qrels/*.tsv", "qrels/*.jsonl")
"""What a hub repository's snapshot is fetched for."""


def beir_data(data, family: str, columns: dict, base: Path, where: str) -> TaskData:
    """The task's examples from its `data.beir` (and, for a test-only folder, the training pairs of the
    BEIR folder `data.train` names); settings it would not read are refused first."""
    pairs = bool(data.train) and (base / os.path.expanduser(data.train)).is_file()
    _check_fields(data, family, columns, pairs, base, where)
    folder = beir_folder(data.beir, data.revision, base, where)
    if beir_hub_id(data.beir, base) and not (folder / "qrels").is_dir():
        raise UserError(
            f"{where}: data.beir {data.beir!r}: the hub dataset has no qrels/ folder, which data.beir reads "
            f"(as mteb/scifact has); qrels kept in a repository of their own (BEIR's: {data.beir}-qrels) are "
            "not fetched: download both, put the qrels' .tsv files under qrels/ in the dataset's folder, and "
            "name that folder"
        )
    if data.train and any(p.is_file() for p in _qrels_files(folder, "train")):
        raise UserError(
            f"{where}: data.beir {folder} has qrels/train and data.train names other training pairs; keep one "
            "(drop data.train to train on this folder's judged pairs)"
        )
    if data.validation_fraction is not None and any(p.is_file() for p in _qrels_files(folder, "dev")):
        raise UserError(f"{where}: qrels/dev and data.validation_fraction both give validation; keep one")
    scored = _read(folder, ("dev", "test") if data.train else ("train", "dev", "test"), "data.beir", where)
    trains, source, triplets = scored, "qrels/train.tsv", []
    if pairs:  # read after the scored folder, whose mistakes are the more likely (a test-only set)
        read = read_pairs(data.train, columns, base, where)
        trains, source = BeirFolder(read.corpus, read.queries, {"train": read.judged}), data.train
        triplets = read.triplets
    elif data.train:
        trains = _training_folder(beir_folder(data.train, None, base, where, "data.train"), where)
    train, cut = trains.qrels["train"], "dev" not in scored.qrels
    if cut:  # from the training queries, ranked against the training documents read (a training folder's:
        # those its train qrels judge, `_training_folder`; this folder's own: its whole corpus)
        fraction = VALIDATION_FRACTION if data.validation_fraction is None else data.validation_fraction
        train, dev = _cut(train, fraction, data.seed, source, where)
        val = _split(dev, trains.queries, trains.corpus)
    else:
        val = _split(scored.qrels["dev"], scored.queries, scored.corpus)
    # one list of examples, built once: the judged pairs' list was built whole and then dropped for the
    # triplets' (a 300,000-row triplet file held both: the task's load peaked at 434 MiB, now 382, tracemalloc)
    if triplets:  # a pairs file's hard negatives: one example per row (`irpairs.Pairs.triplets`)
        pairs = [
            {"query": trains.queries[q], "document": trains.corpus[d], "doc_id": d, NEGATIVE: n}
            for q, d, n in triplets
            if q in train
        ]
    else:
        pairs = [
            {"query": trains.queries[q], "document": trains.corpus[d], "doc_id": d}
            for q, ds in train.items()
            for d, grade in ds.items()
            if grade >= 1
        ]
    data = TaskData(pairs, val, {"test": _split(scored.qrels["test"], scored.queries, scored.corpus)})
    return cut_validation(data) if cut else data


def _check_fields(data, family: str, columns: dict, pairs: bool, base: Path, where: str) -> None:
    """Refuse the family and the `data` fields that data.beir does not read (`data.train` it does, and
    `columns:` where `pairs`: data.train is a pairs file, whose columns it names; where data.train names no
    file, the line says what it names, so a misspelt pairs file is not fixed by dropping `columns:`)."""
    if family != "ir":
        raise UserError(f"{where}: data.beir is retrieval data; write `family: ir`, or name data.train/test")
    given = [f"data.{k}" for k in ("validation", "test", "hub", "config", "test_fraction")]
    given = [k for k in given if getattr(data, k.removeprefix("data."))] + (
        ["data.splits"] if data.splits else []
    )
    given += ["columns"] if columns and not pairs else []
    if given:
        raise UserError(
            f"{where}: {', '.join(given)}: not read with data.beir (its files name the splits and fields"
            + (_pairs_clause(data.train, base) if "columns" in given else "")
            + "); drop "
            + ("it" if len(given) == 1 else "them")
        )


def _pairs_clause(train: str | None, base: Path) -> str:
    """The clause of `_check_fields`' line on `columns:`: they name a pairs file's columns, and what
    data.train names instead of one (a folder, or a path that is no file)."""
    said = "; `columns:` names a pairs file's, in data.train"
    if not train:
        return said
    local = base / os.path.expanduser(train)
    return f"{said}, and data.train {train!r} is " + (
        "a folder" if local.is_dir() else f"not a file (looked for {local})"
    )


@dataclass(frozen=True)
class BeirFolder:
    """What one BEIR folder gives: {id: document}, {id: query} and {split: its qrels}."""

    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, dict[str, int]]]


def _read(folder: Path, names: tuple[str, ...], key: str, where: str) -> BeirFolder:
    """`folder`'s whole corpus, its queries and the qrels of `names` (train, dev, test; dev optional); `key`
    is the field naming it (`data.beir`)."""
    corpus = {k: _document(r) for k, r in _jsonl(folder, "corpus", key, where).items()}
    queries = {k: r["text"] for k, r in _jsonl(folder, "queries", key, where).items()}
    qrels = {}
    for name in names:
        path = next((p for p in _qrels_files(folder, name) if p.is_file()), None)
        if path is not None:
            qrels[name] = _qrels(path, corpus, queries, where)
        elif name == "train" and any(p.is_file() for p in _qrels_files(folder, "test")):
            raise UserError(_test_only(folder, where))
        elif name != "dev":
            raise UserError(
                f"{where}: {key} {folder} has no qrels/{name}.tsv (or .jsonl); BEIR's layout needs it"
            )
    return BeirFolder(corpus, queries, qrels)


def _training_folder(folder: Path, where: str) -> BeirFolder:
    """The BEIR folder `data.train` names, read for its training judgments: its queries, qrels/train and
    only the documents those judgments name, the corpus streamed once (a full MS MARCO folder holds 8.8M
    passages, of which its train qrels name about 0.5M). Every corpus row is checked as `_jsonl` checks
    it; a judged document the corpus lacks is the same line as in a scored folder, after the stream."""
    queries = {k: r["text"] for k, r in _jsonl(folder, "queries", "data.train", where).items()}
    path = next((p for p in _qrels_files(folder, "train") if p.is_file()), None)
    if path is None:
        raise UserError(
            f"{where}: data.train {folder} has no qrels/train.tsv (or .jsonl); beside data.beir, data.train "
            "names the BEIR folder whose train qrels give the training pairs: name one that has them"
        )
    named: dict[str, int] = {}  # document id -> the first line judging it, for the refusal of one missing
    qrels = _qrels(path, None, queries, where, named)
    corpus = {k: _document(r) for k, r in _jsonl(folder, "corpus", "data.train", where, named).items()}
    for d, n in named.items():  # in qrels order: the first missing judgment is named
        if d not in corpus:
            raise UserError(_unknown(f"{where}: line {n} of {path}", "document", d, "corpus"))
    return BeirFolder(corpus, queries, {"train": qrels})


def _test_only(folder: Path, where: str) -> str:
    """The refusal of test-only BEIR data (qrels/test without qrels/train: every BEIR set but MS MARCO, as
    mteb/nq, mteb/quora), naming the fix: `data.train`, the BEIR folder whose train qrels give the training
    pairs (paper 1 scores NQ and MLDR zero-shot with the retriever fine-tuned on msmarco-pairs,
    `Task.trains_as`, as the built-in `paper-nq` and `paper-mldr` do), or qrels/train.tsv in this folder.
    It said "BEIR's layout needs it", which sent users to look for a file BEIR never published."""
    return (
        f"{where}: data.beir {folder} has qrels/test but no qrels/train.tsv (or .jsonl): test-only data, as "
        "BEIR's sets other than msmarco are; name the BEIR folder whose train qrels give the training pairs "
        "in data.train (an msmarco folder, as paper 1 trains for NQ and MLDR: `--suite paper --tasks paper-nq "
        "paper-mldr`), or add qrels/train.tsv judging queries and documents of this folder"
    )


def beir_hub_id(name: str, base: Path) -> str | None:
    """`data.beir` (or `data.train`) as a hub id (OWNER/NAME), or None where it names a folder or a file
    (relative to `base`, the task file's; data.train's pairs file) or is no id: a path that exists wins,
    as a model's path does over its hub id."""
    if (base / os.path.expanduser(name)).exists() or "/" not in name or not well_formed_hub_id(name):
        return None
    return name


def beir_folder(name: str, revision: str | None, base: Path, where: str, key: str = "data.beir") -> Path:
    """The folder of `data.beir` (or of `data.train` beside it, `key`): a folder (relative to the task
    file's), else a hub id's mirror or its snapshot in the local hub cache (fetched unless offline)."""
    local = base / os.path.expanduser(name)
    if beir_hub_id(name, base) is None:
        if not local.is_dir():
            also = ", a pairs file" if key == "data.train" else ""
            raise UserError(
                f"{where}: {key} {name!r} is neither a folder{also} (looked for {local}) nor a hub dataset id "
                "(OWNER/NAME); fix the path or the id"
            )
        if revision:
            raise UserError(
                f"{where}: data.revision is read only for a hub id; {name!r} is a folder, so drop it"
            )
        return local
    mirror = dataset_location(name, revision)
    if mirror != name:
        return _noted(name, revision, Path(mirror), snapshot=False)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot = snapshot_download(
            name,
            repo_type="dataset",
            revision=revision,
            allow_patterns=list(FILES),
            local_files_only=hub_offline(),
        )
    except LocalEntryNotFoundError:
        raise UserError(
            f"{where}: {key} {name!r} is not a folder (looked for {local}), and with the hub "
            f"{'offline (HF_HUB_OFFLINE)' if hub_offline() else 'unreachable'} the hub cache has no snapshot of that "
            f"dataset; {refetch_fix(name, 'dataset', revision)}, or name its folder"
        ) from None
    except Exception as exc:  # one line for any failed download: a missing repo, no connection
        line = hub_failure(name, "dataset", exc, "check the id and your connection, or name its folder")
        raise UserError(f"{where}: {key}: {line}") from None
    return _noted(name, revision, Path(snapshot), snapshot=True)


def _noted(name: str, revision: str | None, folder: Path, *, snapshot: bool) -> Path:
    """`folder`, the hub id `name`'s mirror or hub cache snapshot, once the commit it holds is noted for the
    evaluation's record (`hubcommits.note_read`, as `load_hub` notes a hub dataset's): a BEIR folder is
    read by this module, not `load_hub`, so its record said "the commit read not recorded"."""
    from encoderlab.eval.tasks.hubcommits import note_read
    from encoderlab.eval.tasks.hubsource import HubSource

    source = HubSource(name, revision=revision)
    note_read(source, name if snapshot else str(folder), str(folder) if snapshot else None, None)
    return folder


def _data_file(folder: Path, stem: str, key: str, where: str) -> Path:
    """`<stem>.jsonl` in `folder`, else the same compressed as a task's data file may be (`.gz`, `.bz2`,
    `.xz`: `localfiles.COMPRESSIONS`; BEIR publishes `.jsonl.gz`). Missing, the refusal names what the
    folder holds instead: the file compressed as task files do not read it (`.zst`, `.zip`, ...:
    `filekinds.UNPACK_COMMANDS`, with its command), or a zip archive, as BEIR's datasets are downloaded
    (`scifact.zip`, unpacking to `scifact/corpus.jsonl`): it said "has no corpus.jsonl" beside them."""
    for name in (f"{stem}.jsonl", *(f"{stem}.jsonl{c}" for c in COMPRESSIONS)):
        if (folder / name).is_file():
            return folder / name
    packed = [folder / f"{stem}.jsonl{c}" for c in UNPACK_COMMANDS if (folder / f"{stem}.jsonl{c}").is_file()]
    if packed:
        path = packed[0]
        raise UserError(
            f"{where}: {key} {folder}: {compressed_unread(path, 'task files do not read')} ({stem}.jsonl.gz is read)"
        )
    archives = sorted(p.name for p in folder.glob("*.zip") if p.is_file())
    if archives:
        raise UserError(
            f"{where}: {key} {folder} has no {stem}.jsonl but holds {', '.join(archives)}, a zip archive, "
            f"which is not read; unpack it (`unzip {folder / archives[0]} -d {folder}`) and name the folder "
            f"holding {stem}.jsonl"
        )
    pairs = (
        " (data.train may also name a pairs file of query and document columns)"
        if key == "data.train"
        else ""
    )
    raise UserError(f"{where}: {key} {folder} has no {stem}.jsonl; BEIR's layout needs it{pairs}")


def _jsonl(
    folder: Path, stem: str, key: str, where: str, keep: Collection[str] | None = None
) -> dict[str, dict]:
    """{_id: row} of corpus or queries, streamed: with `keep`, only the rows of those ids are kept (the
    others are checked and dropped); a row without `_id` or text, or a kept `_id` given twice, is one line
    (a file that is not UTF-8 or is damaged: the task files' line, `text_lines`). A row dropped is not
    checked against the others: its copy would change nothing read, and its id is not held."""
    path = _data_file(folder, stem, key, where)
    rows, lines = {}, {}
    with text_lines(path, where) as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            at = f"{where}: line {n} of {path}"
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise UserError(f"{at}: not a JSON object ({exc}); write one object per line") from None
            if not isinstance(row, dict) or row.get("_id") in (None, ""):
                raise UserError(f'{at}: a row needs an "_id" (BEIR\'s field names: _id, title, text)')
            if not isinstance(row.get("text"), str) or not (
                row["text"].strip() or str(row.get("title") or "").strip()
            ):
                raise UserError(f'{at}: "text" must be a non-empty string; fill it in or remove the row')
            key = str(row["_id"])
            if keep is not None and key not in keep:
                continue
            if key in rows:
                raise UserError(
                    f"{at}: _id {key!r} is also line {lines[key]}'s; BEIR keeps only the later row, so give "
                    "each its own _id or remove the copy"
                )
            rows[key], lines[key] = row, n
    return rows


def _document(row: dict) -> str:
    """`title text`, stripped, as BEIR's dense models join them (`SentenceBERT.encode_corpus`, sep " ")."""
    return f"{row.get('title') or ''} {row['text']}".strip()


def _qrels_files(folder: Path, name: str) -> tuple[Path, Path]:
    """qrels/<name>.tsv (BEIR's), else qrels/<name>.jsonl (the mteb hub repositories', e.g. mteb/nfcorpus's
    card: config `default`, data_files qrels/{train,dev,test}.jsonl, query-id and corpus-id strings, score
    float64)."""
    return folder / "qrels" / f"{name}.tsv", folder / "qrels" / f"{name}.jsonl"


def _qrels_rows(path: Path, where: str) -> list[tuple[int, list[str]]]:
    """(line number, [query-id, corpus-id, score] as written) of a qrels .tsv after its header, or of a
    .jsonl's objects; a .tsv without the header, or an object without the three fields, is one line."""
    with text_lines(path, where) as handle:
        if path.suffix == ".jsonl":
            return [
                (n, _qrels_object(line, f"{where}: line {n} of {path}")) for n, line in enumerate(handle, 1)
            ]
        table = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not table or tuple(c.strip() for c in table[0]) != QRELS_HEADER:
        first = "\t".join(table[0]) if table else ""
        raise UserError(
            f"{where}: line 1 of {path} is {first[:60]!r}, not the header query-id<TAB>corpus-id<TAB>score; "
            "add that header line (BEIR skips the first line, so a file without it lost its first judgment)"
        )
    return list(enumerate(table[1:], 2))


def _qrels_object(line: str, at: str) -> list[str]:
    """One .jsonl qrels line as the cells a .tsv line gives ([] for a blank line)."""
    if not line.strip():
        return []
    try:
        row = json.loads(line)
    except ValueError:
        row = None
    cells = [row.get(k) for k in QRELS_HEADER] if isinstance(row, dict) else [None]
    if not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in cells):
        raise UserError(
            f'{at}: not a JSON object with "query-id", "corpus-id" and "score" (the qrels fields); fix the line'
        )
    return [str(c) for c in cells]


def _qrels(
    path: Path, corpus: dict | None, queries: dict, where: str, named: dict[str, int] | None = None
) -> dict[str, dict[str, int]]:
    """{query id: {document id: grade}} of one qrels file, every line checked; with `named` instead of the
    `corpus` (not read yet: `_training_folder`), each document id is recorded there with the first line
    judging it, and checked against the corpus by the caller."""
    out: dict[str, dict[str, int]] = {}
    for n, cells in _qrels_rows(path, where):
        at = f"{where}: line {n} of {path}"
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != 3:
            raise UserError(
                f"{at}: {len(cells)} tab-separated fields, not 3 (query-id, corpus-id, score); fix it"
            )
        q, d, score = (c.strip() for c in cells)
        try:
            grade = float(score)
        except ValueError:
            grade = float("nan")
        if not grade.is_integer():
            raise UserError(
                f"{at}: score {score!r} is not a whole-number relevance grade; write a whole number: 1 or more "
                "is relevant, 0 or below (TREC's -2 for spam) is not"
            )
        if q not in queries:
            raise UserError(_unknown(at, "query", q, "queries"))
        if named is not None:
            named.setdefault(d, n)
        elif d not in corpus:
            raise UserError(_unknown(at, "document", d, "corpus"))
        if out.get(q, {}).get(d, int(grade)) != int(grade):
            raise UserError(f"{at}: query {q!r} judges document {d!r} twice, with two grades; keep one line")
        out.setdefault(q, {})[d] = int(grade)
    return out


def _unknown(at: str, what: str, key: str, file: str) -> str:
    """The refusal of a judgment whose query or document id the queries or corpus file lacks."""
    return f"{at}: {what} id {key!r} is not in {file}.jsonl; add it there, or remove the judgment"


def _cut(train: dict, fraction: float, seed: int, source: str, where: str) -> tuple[dict, dict]:
    """(train, validation): a seeded share of train's queries with a relevant document as validation, as
    many as a task file's rows would give (`splits.cut_size`); `source`: the file the judgments came from
    (qrels/train.tsv, or data.train's pairs file)."""
    judged = sorted(q for q, ds in train.items() if max(ds.values()) >= 1)
    n = cut_size(fraction, len(judged))
    if n < 1 or n >= len(judged):
        raise UserError(
            f"{where}: data.validation_fraction {fraction} of {source}'s {count(len(judged), 'query', 'queries')} "
            "leaves no validation or no training query; add qrels/dev.tsv, or change the fraction"
        )
    val = set(random.Random(seed).sample(judged, n))
    return {q: ds for q, ds in train.items() if q not in val}, {q: train[q] for q in sorted(val)}


def _split(qrels: dict, queries: dict, corpus: dict) -> IRSplit:
    """A scored split: every query the split's qrels judge (one judged only 0 scores 0, as in BEIR),
    ranked against the whole corpus; a query the qrels do not name is not scored."""
    return IRSplit({q: queries[q] for q in qrels}, corpus, dict(qrels), ignore_identical_ids=True)
