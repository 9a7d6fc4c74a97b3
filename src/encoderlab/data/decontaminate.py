"""Keep evaluation texts out of pretraining: match by record id and by long n-gram overlap.

A pretraining document is removed when its id is the id of an evaluation record, or when it
shares at least one word n-gram (default n = 13, the GPT-3 contamination rule) with any evaluation
text. Words are lower-cased runs of letters and digits, so punctuation, case and spacing changes
do not hide a copy. Each n-gram is hashed to 64 bits: words are hashed with crc32 (stable across
processes, unlike Python's `hash`), and a window of n word hashes is combined as a polynomial
mod 2^64 with numpy, so a document is checked with a few vectorised operations and a binary
search in the sorted array of evaluation hashes (8 bytes per evaluation n-gram; the whole
SQuAD + BoolQ + VitaminC + BBC set is a few tens of MB).

Trade-offs: a chance 64-bit collision could drop a clean document (probability ~ n_eval / 2^64
per n-gram, negligible); an evaluation text shorter than n words cannot be matched by overlap
(only by id); "any shared n-gram" also removes documents that merely quote a long phrase of an
evaluation text, which is the conservative side to err on.

The evaluation sets are read through the same source machinery as corpora, so an asset name
(`squad-v1-dev`), a local JSONL file or a glob all work. A higher layer may also hand in sets of texts
it read itself (`TextSet`: a study's own task files' test splits, read by `eval/tasks/testtexts.py`), since
this layer knows no tasks (docs/architecture.md, "Layers"). Such a set is matched by n-gram overlap only,
not by id (a task's row numbers would match a corpus's documents numbered alike), and its `version` (the
digest of its texts, `texts_digest`) stands for its files in the cache key, so an edited set is hashed again.
Trade-off: its texts are held in memory whole: a task's test inputs, small beside a corpus (a retrieval
task's are its queries and the documents judged relevant to them, not its collection: `eval/tasks/testtexts.py`).

Naming what was removed (`Contamination.origin`): the cache also keeps, per id, the set it came from, and per
n-gram hash the first evaluation example (text) that holds it, with that example's set and name (its record
id; a text set's `text K`, its K-th text). A worker reports a removed document's matched id, or its first
matched n-gram hash, and the main process names the set and example from these arrays, so the workers carry
only the ids and hashes they match with (`for_workers`). Trade-off: 4 bytes more per n-gram in the cache, and
a text held by two sets names the first (it is hashed once).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from encoderlab.atomic import cached_arrays
from encoderlab.data.filereaders import MissingTextField
from encoderlab.data.sources import SourceConfig, SourceStats, describe, iter_documents, parse_source
from encoderlab.errors import UserError

# The evaluation sets the papers' suites use, whose texts must not be pretrained on.
EVAL_ASSETS = (
    "squad-v1-dev",
    "squad-shifts-nyt",
    "squad-shifts-reddit",
    "squad-shifts-amazon",
    "squad-shifts-new-wiki",
    "boolq",
    "vitaminc",
    "bbc-news",
    # PubMedQA's abstracts: the domain suite's pubmedqa-retrieval and pubmedqa test on them and paper 2's CKA
    # reads them. The `biomed` asset leaves them out, but a user's own biomedical corpus may well hold them.
    "pubmedqa",
)
MAX_NGRAM = 1000
"""The longest `--ngram` accepted, in words. Practice is 8 to 50 words (PaLM 8, GPT-3 and Dolma 13, the
default here); 1,000 words, twenty times the longest of those and about two pages, is longer than almost
every evaluation text (the default sets hold questions' paragraphs and news articles), so an overlap that
long can only be a copy of a whole long document. Past it the overlap test matches next to nothing (a
billion-word n-gram matched nothing at all and left only id matching, without a word). A smaller n that no evaluation text reaches
gets a note instead (`build_contamination`), since that depends on the sets, not on n alone."""
TASK_TEST = "task-test:"
"""The prefix of a set that is a task file's (or a folder of them) test split, as a study names it in its plan,
its prepare node and meta.json (`eval/tasks/testtexts.py` reads one): defined here, below evaluation, so that
`--decontaminate` can refuse one by name (this layer reads no task file)."""
WORD = re.compile(r"[^\W_]+")
CACHE_VERSION = 2  # bump when the normalisation, the hashing or the arrays kept change (2: origins)
_MULT = np.uint64(0x100000001B3)  # FNV-64 prime: an odd multiplier spreads the word hashes


def words(text: str) -> list[str]:
    """Normalised words: lower-cased runs of letters and digits."""
    return WORD.findall(text.lower())


def ngram_hashes_batch(texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 hash, index of its text) of every word n-gram of every text, in one vectorised pass:
    the word hashes of all texts are concatenated and windows that cross a text boundary dropped."""
    per_text = [words(t) for t in texts]
    lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
    total = int(lengths.sum())
    h = np.fromiter((zlib.crc32(w.encode()) for ws in per_text for w in ws), dtype=np.uint64, count=total)
    m = total - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    out = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):  # wrap-around mod 2^64 is the point
        for k in range(n):
            out = out * _MULT + h[k : k + m]
    owner = np.repeat(np.arange(len(texts)), lengths)
    inside = owner[:m] == owner[n - 1 :]
    return out[inside], owner[:m][inside]


def texts_digest(texts) -> str:
    """The sha256 of a set of texts as the overlap test reads them: each text's normalised words (`words`),
    once each, sorted. So it changes exactly when what they can remove may change: an edited, added or
    removed text, not a reordering, a repeat, or a change of case, spacing or punctuation."""
    normal = sorted({" ".join(words(t)) for t in texts})  # no line break inside one: "\n" cannot collide
    return hashlib.sha256("\n".join(normal).encode()).hexdigest()


def ngram_hashes(text: str, n: int) -> np.ndarray:
    """The uint64 hashes of every word n-gram of `text` (empty if it has fewer than n words)."""
    return ngram_hashes_batch([text], n)[0]


@dataclass(frozen=True)
class TextSet:
    """An evaluation set read by a higher layer, handed in as texts: its `name` is said in the plan and in
    meta.json as an asset's is (e.g. `task-test:tasks/mine.yaml`), its `version` keys the cache (a change of
    the texts must change it: `texts_digest` of them), its `texts` are matched by n-gram overlap only."""

    name: str
    version: str
    texts: tuple[str, ...]


Match = tuple[str, "str | int"]
"""A removed document's reason and what it matched: ('id', the id) or ('ngram', its first matched n-gram hash)."""


@dataclass
class Contamination:
    """Evaluation ids and n-gram hashes to remove, and counts of what was removed."""

    ngram: int = 13
    ids: frozenset[str] = frozenset()
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    """Sorted, unique."""
    against: list[str] = field(default_factory=list)
    eval_texts: int = 0
    origins: dict[str, np.ndarray] = field(default_factory=dict)
    """What `origin` names a match by: the cache's sorted `ids` with `id_set`, `hash_example` (aligned with
    `hashes`), `example_set` and the examples' names (`example_bytes`, cut at `example_ends`). The main
    process's only (`for_workers`)."""

    def matches(self, doc_ids: list[str], texts: list[str]) -> list[Match | None]:
        """Per document: what it matched (`Match`) if it must be removed, else None."""
        found: list[Match | None] = [("id", i) if i in self.ids else None for i in doc_ids]
        if len(self.hashes):
            h, owner = ngram_hashes_batch(texts, self.ngram)
            pos = np.searchsorted(self.hashes, h).clip(max=len(self.hashes) - 1)
            hit = self.hashes[pos] == h
            docs, first = np.unique(owner[hit], return_index=True)  # each document's first matched n-gram
            for d, key in zip(docs.tolist(), h[hit][first].tolist()):
                found[d] = found[d] or ("ngram", key)
        return found

    def check(self, doc_ids: list[str], texts: list[str]) -> list[str | None]:
        """Per document: 'id' or 'ngram' if it must be removed, else None."""
        return [m and m[0] for m in self.matches(doc_ids, texts)]

    def is_contaminated(self, doc_id: str, text: str) -> str | None:
        """'id' or 'ngram' if one document must be removed, else None."""
        return self.check([doc_id], [text])[0]

    def for_workers(self) -> Contamination:
        """This without `origins`: what a tokenizing worker needs (its matches are named in the main process)."""
        return replace(self, origins={})

    def origin(self, match: Match) -> tuple[int, str]:
        """(evaluation set, as its position in `against`; example) a `Match` came from: for an id, the id
        itself; for an n-gram, the name of the first evaluation example holding it."""
        o, (reason, key) = self.origins, match
        if reason == "id":
            return int(o["id_set"][np.searchsorted(o["ids"], key)]), str(key)
        example = int(o["hash_example"][np.searchsorted(self.hashes, np.uint64(key))])
        ends = o["example_ends"]
        name = o["example_bytes"][ends[example - 1] if example else 0 : ends[example]].tobytes().decode()
        return int(o["example_set"][example]), name

    def summary(self) -> dict:
        return {
            "against": self.against,
            "ngram": self.ngram,
            "eval_texts": self.eval_texts,
            "eval_ngrams": len(self.hashes),
        }


def _asset_fetched(name: str) -> bool:
    try:
        describe(SourceConfig(location=name))
    except UserError:
        return False
    return True


def resolve_eval_sets(against: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """(sets to use, default sets skipped because not fetched).

    `("auto",)` means every default evaluation asset that is fetched; `()` or `("none",)` means
    no decontamination; anything else is a list of asset names or files, each of which must exist.
    """
    against = list(against)
    if against in ([], ["none"]):
        return [], []
    if len(against) > 1 and {"auto", "none"} & set(against):
        raise UserError(
            f"--decontaminate {' '.join(against)}: 'auto' and 'none' stand alone; pass one of them, or only "
            "evaluation asset names and files"
        )
    if against == ["auto"]:
        fetched = [a for a in EVAL_ASSETS if _asset_fetched(a)]
        return fetched, [a for a in EVAL_ASSETS if a not in fetched]
    for a in against:
        if a.startswith(TASK_TEST):  # copied from a study's plan or meta.json: was "not an existing file"
            raise UserError(
                f"--decontaminate {a}: a task file's test split is a set only a study reads (data prepare reads "
                f"no task file); prepare the corpus in a study naming {a.removeprefix(TASK_TEST)} in "
                'eval.task_files, or pass --decontaminate a JSONL file of its test texts (a {"text": ...} record each)'
            )
        # one line if missing, or a folder without text files
        describe(parse_source(a), fix="fix --decontaminate", named_by="--decontaminate")
    return against, []


def check_ngram(ngram: int, off: bool = False) -> None:
    """Refuse an `--ngram` outside 3..MAX_NGRAM words, also when decontamination is `off` (`--decontaminate
    none`): the value is unused then, but one no decontaminating run takes is a mistake all the same."""
    if ngram < 3:
        raise UserError(f"decontamination n-gram length must be at least 3, got {ngram}")
    if ngram > MAX_NGRAM:
        fix = (
            "leave --ngram out (decontamination is off, so it is unused)"
            if off
            else "use e.g. 13, the default (GPT-3's rule), or --decontaminate none to turn decontamination off"
        )
        raise UserError(
            f"--ngram {ngram}: the decontamination n-gram length must be at most {MAX_NGRAM} words (an overlap "
            "that long is already a copy of a whole long document; a longer n matches next to nothing, leaving "
            f"only id matching); {fix}"
        )


def build_contamination(
    against: list[str], ngram: int = 13, text_sets: tuple[TextSet, ...] = ()
) -> Contamination:
    """Read every evaluation set once (the named ones, then the `text_sets`) and collect its ids and
    n-gram hashes.

    The result is cached under $ENCODERLAB_HOME/cache/decontam, keyed by the sets' files (path,
    size, mtime), the text sets' versions (not their names: a moved task file's are its texts), and n, since hashing every evaluation text takes
    seconds and rarely changes."""
    check_ngram(ngram)
    z = cached_arrays(
        _cache_path(against, ngram, text_sets),
        lambda: _hash_sets(against, ngram, text_sets),
        "decontamination cache",
    )
    if int(z["eval_texts"]) and not len(z["hashes"]):
        print(
            f"encoderlab: note: decontamination: none of the {int(z['eval_texts'])} evaluation texts has {ngram} "
            "words (--ngram), so the overlap test can remove nothing; documents are removed by id only",
            file=sys.stderr,
        )
    return Contamination(
        ngram=ngram,
        ids=frozenset(z["ids"].tolist()),
        hashes=z["hashes"],
        against=[*against, *(t.name for t in text_sets)],
        eval_texts=int(z["eval_texts"]),
        origins={k: z[k] for k in _ORIGINS},
    )


_ORIGINS = ("ids", "id_set", "hash_example", "example_set", "example_bytes", "example_ends")


class _Hashing:
    """The n-gram hashes of distinct evaluation texts, each with the index of the first example (text)
    holding it, hashed 1024 texts at a time; `names` and `sets` are each example's name and set index."""

    def __init__(self, ngram: int):
        self.ngram, self.seen, self.names, self.sets = ngram, set(), [], []
        self.batch: list[str] = []
        self.chunks: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, text: str, name: str, set_index: int) -> None:
        key = hash(text)  # in-process dedup only (SQuAD repeats a context per question)
        if key in self.seen:
            return
        self.seen.add(key)
        self.batch.append(text)
        self.names.append(name)
        self.sets.append(set_index)
        if len(self.batch) >= 1024:
            self.flush()

    def flush(self) -> None:
        h, owner = ngram_hashes_batch(self.batch, self.ngram)
        h, first = np.unique(h, return_index=True)  # the first occurrence: the earliest example's
        self.chunks.append((h, (len(self.names) - len(self.batch) + owner[first]).astype(np.int32)))
        self.batch = []

    def arrays(self) -> dict[str, np.ndarray]:
        self.flush()
        h, first = np.unique(np.concatenate([c[0] for c in self.chunks]), return_index=True)
        names = [n.encode("utf-8", "backslashreplace") for n in self.names]  # an id's lone surrogate too
        return {
            "hashes": h,
            "hash_example": np.concatenate([c[1] for c in self.chunks])[first],
            "example_set": np.asarray(self.sets, dtype=np.int32),
            "example_bytes": np.frombuffer(b"".join(names), dtype=np.uint8),
            "example_ends": np.cumsum([len(n) for n in names], dtype=np.int64),
            "eval_texts": np.asarray(len(self.seen)),
        }


def _hash_sets(against: list[str], ngram: int, text_sets: tuple[TextSet, ...]) -> dict[str, np.ndarray]:
    """The evaluation sets' ids (with their sets), unique n-gram hashes (with their first examples) and
    text count: what the cache holds. Sets are numbered as `Contamination.against` lists them."""
    ids: dict[str, int] = {}
    hashing = _Hashing(ngram)
    for index, name in enumerate(against):
        read = 0
        for doc in _documents(name):
            read += 1
            ids.setdefault(doc.id, index)
            hashing.add(doc.text, doc.id, index)
        if not read:  # decontaminated against nothing, unsaid: an empty file, or a glob of empty files
            raise UserError(
                f"the evaluation set {name} has no text, so it can remove nothing; check --decontaminate "
                "(a file of its texts, or an asset name)"
            )
    for index, text_set in enumerate(text_sets, len(against)):  # no ids: matched by overlap only (docstring)
        for k, text in enumerate(text_set.texts, 1):
            hashing.add(text, f"text {k}", index)
    names = sorted(ids)
    return {
        "ids": np.array(names, dtype=str),
        "id_set": np.array([ids[i] for i in names], dtype=np.int32),
        **hashing.arrays(),
    }


def _documents(spec: str):
    """An evaluation set's documents; `spec` is read as `--source` reads it (`F.jsonl#text_field=question`),
    so the line for a missing text field names its fix in `--decontaminate` (it named `--source`, and
    `--decontaminate` took no `#text_field`)."""
    try:
        yield from iter_documents(parse_source(spec), SourceStats(spec))
    except MissingTextField as exc:
        raise UserError(
            f"{exc.problem}; name the text field in --decontaminate, e.g. --decontaminate "
            f"'{exc.path}#text_field={exc.guess}' (or fix the record)"
        ) from None


def _cache_path(against: list[str], ngram: int, text_sets: tuple[TextSet, ...]) -> Path:
    from encoderlab.paths import home_folder

    key = [CACHE_VERSION, ngram]
    # the text sets' texts, not where they were read; none: the key is what it was
    key += [t.version for t in text_sets]
    for name in against:
        key.append(name)  # the spec: one file read with another text_field is another set
        for path in describe(parse_source(name))["files"]:
            st = Path(path).stat()
            key.append([str(Path(path).resolve()), st.st_size, st.st_mtime_ns])
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:24]
    # not made here: the sets are read after this, and a refused one (unreadable, no text) left an empty
    # $ENCODERLAB_HOME/cache/decontam behind; `cached_arrays` makes the folder when it saves
    return home_folder("cache", "decontam", create=False) / f"{digest}.npz"
