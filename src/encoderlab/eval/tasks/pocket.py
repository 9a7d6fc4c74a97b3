"""Loaders of the offline suites (`pocket`, `domain`): labelled assets split deterministically.

They read the labelled assets (`encoderlab.data.assets.asset_jsonl`, which names the
`encoderlab assets fetch X` command when one is missing) and split them with `splits.py`;
`docs/evaluation.md` lists every split size.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from encoderlab.eval.spec import TaskData
from encoderlab.eval.tasks.splits import (
    ir_task_data,
    label_index,
    qa_example,
    read_across,
    require_nonempty,
    split_groups,
    subsample,
    text_fields,
    text_id,
)


def _records(asset: str) -> list[dict]:
    """The asset's records, parsed once per process and file version: a study's eval nodes load the
    same task again and again, and parsing brown-pos alone takes seconds. The records are shared
    between calls, so loaders read them and never change them."""
    from encoderlab.data.assets import asset_jsonl

    path = asset_jsonl(asset)
    stat = path.stat()
    return list(_parsed(str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)
def _parsed(path: str, inode: int, mtime_ns: int, size: int) -> tuple[dict, ...]:
    """The records of one version of a data.jsonl (a re-fetch changes the inode, time or size)."""
    from encoderlab.data.assets import read_jsonl

    return tuple(read_jsonl(Path(path)))


def _sc(
    name: str,
    asset: str,
    labels: Sequence[str],
    texts: Callable[[dict], str | tuple[str, str]],
    group: Callable,
    sizes: dict,
    test_split: str | None = None,
    fractions: tuple[float, float, float] = (0.8, 0.05, 0.15),
) -> TaskData:
    """`test_split` names the asset's split (`meta.split`) that is the test, the rest split 90/10."""
    records = _records(asset)
    if test_split is None:
        train, val, test = split_groups(records, group, name, fractions)
    else:
        rest = [r for r in records if r["meta"].get("split") != test_split]
        test = [r for r in records if r["meta"].get("split") == test_split]
        train, val = split_groups(rest, group, name, (0.9, 0.1))

    def examples(split, n):
        return [
            {**text_fields(texts(r)), "label": label_index(name, labels, r["meta"]["label"])}
            for r in subsample(split, n)
        ]

    data = TaskData(
        examples(train, sizes["train"]), examples(val, sizes["val"]), {"test": examples(test, sizes["test"])}
    )
    return read_across(require_nonempty(name, data), {"test": test_split} if test_split else {})


def _tc(
    name: str,
    asset: str,
    labels: Sequence[str],
    normalise: Callable[[str], str],
    group: Callable,
    sizes: dict,
) -> TaskData:
    train, val, test = split_groups(_records(asset), group, name, (0.7, 0.1, 0.2))

    def examples(split, n):
        return [
            {
                "tokens": r["meta"]["tokens"],
                "tags": [label_index(name, labels, normalise(t)) for t in r["meta"]["tags"]],
            }
            for r in subsample(split, n)
        ]

    data = TaskData(
        examples(train, sizes["train"]), examples(val, sizes["val"]), {"test": examples(test, sizes["test"])}
    )
    return require_nonempty(name, data)


WNUT_TYPES = (
    "company",
    "facility",
    "geo-loc",
    "movie",
    "musicartist",
    "other",
    "person",
    "product",
    "sportsteam",
    "tvshow",
)
WNUT_LABELS = ("O", *(f"{p}-{t}" for t in WNUT_TYPES for p in "BI"))
_BROWN_SUFFIX = re.compile(r"(-(tl|hl|nc))+$")


@functools.lru_cache(maxsize=4096)
def brown_tag(tag: str) -> str:
    """Collapse Brown's title/headline/cited suffixes (-tl, -hl, -nc): they mark context, not part of speech."""
    return _BROWN_SUFFIX.sub("", tag.lower())


def load_brown_pos(name: str, sizes: dict) -> TaskData:
    """Brown POS; the label set is the collapsed tag set of the whole asset, so no split holds an unseen tag."""
    labels = tuple(
        sorted({brown_tag(t) for t in {t for r in _records("brown-pos") for t in r["meta"]["tags"]}})
    )
    data = _tc(name, "brown-pos", labels, brown_tag, lambda r: r["meta"].get("doc", r["id"]), sizes)
    data.labels = labels
    return data


SQUAD_SPLIT = (0.6, 0.1, 0.3)
SQUAD_SHIFTS = ("nyt", "reddit", "amazon", "new-wiki")


def _squad_article_splits() -> list[list[dict]]:
    return split_groups(_records("squad-v1-dev"), lambda r: r["meta"]["title"], "squad-articles", SQUAD_SPLIT)


def _qa_examples(records: Sequence[dict], counts: dict, scored: bool = True) -> list[dict]:
    out = []
    for r in records:
        meta = r["meta"]
        ex = qa_example(r["id"], r["text"], meta["question"], meta["answers"], counts, scored=scored)
        if ex is not None:
            out.append(ex)
    return out


def load_squad(name: str, sizes: dict) -> TaskData:
    counts: dict = {}
    train, val, test = _squad_article_splits()
    tests = {"test": _qa_examples(subsample(test, sizes["test"]), counts)}
    for shift in SQUAD_SHIFTS:
        tests[shift] = _qa_examples(subsample(_records(f"squad-shifts-{shift}"), sizes["shift"]), counts)
    data = TaskData(
        _qa_examples(subsample(train, sizes["train"]), counts, scored=False),
        _qa_examples(subsample(val, sizes["val"]), counts),
        tests,
        counts,
    )
    return read_across(require_nonempty(name, data), {"test": "dev"})  # the asset is SQuAD's dev split


def _squad_ir_records(records):
    return [
        {
            "qid": r["id"],
            "query": r["meta"]["question"],
            "did": r["meta"].get("paragraph") or r["text"][:64],
            "doc": r["text"],
        }
        for r in records
    ]


def load_squad_retrieval(name: str, sizes: dict) -> TaskData:
    train, val, test = (_squad_ir_records(s) for s in _squad_article_splits())
    return read_across(require_nonempty(name, ir_task_data(train, val, test, sizes)), {"test": "dev"})


def _passage_ir_records(records: list[dict]) -> list[dict]:
    """Question -> passage records; the passage id is a hash of its text (BoolQ repeats passages)."""
    return [
        {
            "qid": r["id"],
            "query": r["meta"]["question"],
            "did": text_id(r["text"]),
            "doc": r["text"],
        }
        for r in records
    ]


def load_boolq_retrieval(name: str, sizes: dict) -> TaskData:
    raw = _records("boolq")
    records = _passage_ir_records(raw)
    dev = {r["id"] for r in raw if r["meta"].get("split") == "dev"}
    rest = [r for r in records if r["qid"] not in dev]
    train, val = split_groups(rest, lambda r: r["did"], name, (0.9, 0.1))
    data = ir_task_data(train, val, [r for r in records if r["qid"] in dev], sizes)
    return read_across(require_nonempty(name, data), {"test": "dev"})


def load_pubmedqa_retrieval(name: str, sizes: dict) -> TaskData:
    train, val, test = split_groups(
        _passage_ir_records(_records("pubmedqa")), lambda r: r["did"], name, (0.6, 0.1, 0.3)
    )
    return require_nonempty(name, ir_task_data(train, val, test, sizes))
