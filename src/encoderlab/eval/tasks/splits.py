"""Split and example helpers shared by every loader.

Splits are deterministic and never depend on the run seed: groups (SQuAD articles, VitaminC
evidence pages, Brown documents, stdlib files, or single examples) go to train/val/test by a salted
sha256 of their key, so a split never changes when other records are added and related examples
never straddle two splits; each split is then subsampled to a fixed size with
`random.Random(SUBSAMPLE_SEED)`, keeping the file order. Labels outside a task's label set and
empty splits are one-line errors, as is a task file's input in two of its splits (`check_overlap`); QA answers whose span does not match the context are skipped
and counted. A validation cut from train (`cut_validation`), and a validation or test read from the data's
split of the other part (`read_across`: GLUE's validation scored as test, NQ's test qrels halved), are
recorded in the task's counts and said beside its score, in summary.md and by `eval --check`
(`split_notes`), never silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from operator import itemgetter

from encoderlab.errors import UserError
from encoderlab.eval.spec import IRSplit, TaskData
from encoderlab.words import count, noun

SUBSAMPLE_SEED = 1234
CUT_VALIDATION = "validation_cut_from_train"
"""`TaskData.counts` key: the validation examples (retrieval: queries) a task file's loader cut from train,
where the data gave no validation split (`cut_validation_note` reads it from the run's records)."""
MIN_CUT_VALIDATION = 20
"""Below this many, a validation cut from train is said to be too small to pick an LR by: a score over n
examples moves in steps of 1/n, so under 20 one example is more than 5 points of accuracy, and LRs whose
true scores differ by less are ranked by which few examples each got right. A note, not a refusal: EncodEval
cuts its 5% whatever the size, a tiny task is a legitimate smoke test or demo, and the test score stays
sound (only the LR pick is weak); the user is told, with the fix, rather than stopped."""


def bucket(key: str, salt: str) -> float:
    """A stable pseudo-random number in [0, 1) for `key`."""
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:12], 16) / 16**12


def text_id(text: str) -> str:
    """An IR document's (or query's) id where the data gives none: the first 16 hex digits of the sha256 of
    its text, so equal texts share one id (in-batch copies of a positive, BoolQ's repeated passages). Part
    of every such task's data hash (`data_hash`): changing it changes recorded scores' identities."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def split_groups(items: Sequence, key: Callable, salt: str, fractions: Sequence[float]) -> list[list]:
    """Partition `items` by the hashed bucket of `key(item)`: items sharing a key share a split."""
    edges, total = [], 0.0
    for f in fractions:
        total += f
        edges.append(total)
    parts: list[list] = [[] for _ in fractions]
    for item in items:
        b = bucket(str(key(item)), salt)
        parts[next((i for i, e in enumerate(edges) if b < e), len(edges) - 1)].append(item)
    return parts


def subsample(items: Sequence, n: int | None) -> list:
    """`n` items drawn with the fixed subsample seed, in their original order (all if n is None or larger)."""
    if n is None or n >= len(items):
        return list(items)
    keep = sorted(random.Random(SUBSAMPLE_SEED).sample(range(len(items)), n))
    return [items[i] for i in keep]


OTHER_PART = {"validation": "test", "test": "validation"}
FROM_OTHER_SPLIT = {"validation": "validation_from_test", "test": "test_from_validation"}
"""`TaskData.counts` keys: our split -> the key of its size where it was read from the data's split of the
other part (`read_across`), a test split as validation (NQ's halves) or a validation split as test (GLUE's,
whose test labels are unpublished)."""


def cut_size(fraction: float, n: int) -> int:
    """How many of `n` training examples (retrieval: judged queries) a share `fraction` cuts as validation
    or test: ceil(fraction * n), the count `datasets`' `train_test_split(test_size=fraction)` takes (its
    `n_test = ceil(test_size * n_samples)`). The one rule of every cut from train: a task file's files
    pass it to `train_test_split` as a number, BEIR folders sample that many queries. Before, a BEIR folder
    rounded (`round`, half to even) and the files rounded up, so 50 training queries gave 2 validation
    queries and 50 rows 3, and 10 queries left no validation (refused) where 10 rows gave 1."""
    return math.ceil(fraction * n)


def split_size(split: list | IRSplit) -> int:
    """A split's examples (retrieval: its queries)."""
    return len(split.queries) if isinstance(split, IRSplit) else len(split)


def cut_validation(data: TaskData) -> TaskData:
    """`data` with its validation's size recorded as cut from train (`CUT_VALIDATION`)."""
    data.counts[CUT_VALIDATION] = split_size(data.val)
    return data


def split_role(name: str) -> str | None:
    """The part a data split's name says it plays: "validation" for validation, valid, val or dev (also
    with a suffix: GLUE's `validation_matched`), "test" for test (`test_matched`), else None (train, or a
    name of the data's own)."""
    stem = name.lower().replace("-", "_").split("_")[0]
    return (
        "validation" if stem in ("validation", "valid", "val", "dev") else "test" if stem == "test" else None
    )


def read_across(data: TaskData, sources: dict[str, str]) -> TaskData:
    """`data` with each of its validation and test read from the data's split of the other part recorded
    (`FROM_OTHER_SPLIT`: its size), as `from_other_split_notes` says it; `sources` maps our split to the
    data's split it was read from (`{"test": "validation_matched"}` for GLUE's MNLI). The one place every
    loader that reads a test split as validation, or a validation split as test, records it."""
    parts = {"validation": data.val, "test": data.tests["test"]}
    for split, source in sources.items():
        if split_role(source) == OTHER_PART[split]:
            data.counts[FROM_OTHER_SPLIT[split]] = split_size(parts[split])
    return data


def _examples_of(n: int, family: str) -> str:
    """`n` of a split's units as its notes count them: retrieval's queries, else examples (`split_size`)."""
    return count(n, "query", "queries") if family == "ir" else count(n, "example")


def from_other_split_notes(counts: dict, family: str) -> list[str]:
    """The notes of a validation read from the data's test split, or a test read from its validation split
    (`read_across`), as `cut_validation_note`'s are said: beside the score, in summary.md, by `eval --check`.
    Before, nothing said that a score called test was on the data's validation split, or that the LR was
    picked on test-split data, unless the reader knew the task's loader or file."""
    notes = []
    for split, key in FROM_OTHER_SPLIT.items():
        if (n := counts.get(key)) is None:
            continue
        what = _examples_of(n, family)
        notes.append(
            f"validation is {what} of the data's test split (the best LR is picked on test-split data)"
            if split == "validation"
            else f"test is {what} of the data's validation split (compare the score with scores on that "
            "split, not on the data's test split)"
        )
    return notes


def split_notes(counts: dict, family: str, lrs: Sequence[float]) -> list[str]:
    """Every note on a task's splits, in the order said: validation or test read from the other part
    (`from_other_split_notes`), then a validation cut from train too small (`cut_validation_note`)."""
    cut, skipped = cut_validation_note(counts, family, lrs), skipped_answers_note(counts)
    return from_other_split_notes(counts, family) + [n for n in (cut, skipped) if n]


def skipped_answers_note(counts: dict) -> str | None:
    """The note for QA training answers not at their `answer_start` (`qa_example` skips them, and drops a
    question left with none). They were counted in each result's `counts` only, said nowhere: a file whose
    offsets were off trained on part of its questions without a word (`eval --check` said "train 94" of 95)."""
    n = counts.get("skipped_answers", 0)
    if not n:
        return None
    dropped = counts.get("skipped_questions", 0)
    left = (
        f"; {count(dropped, 'question')} left without one {noun(dropped, 'is', 'are')} not trained on"
        if dropped
        else ""
    )
    return (
        f"{count(n, 'training answer')} skipped: the context does not hold the answer's text at its "
        f"answer_start{left}; answer_start is the answer's 0-based character offset in the context"
    )


def cut_validation_note(counts: dict, family: str, lrs: Sequence[float]) -> str | None:
    """The note for a validation cut from train too small to pick among `lrs` (`MIN_CUT_VALIDATION`),
    with the fix; None for a larger one, a validation the data gave, or a grid of one LR (nothing is
    picked). Said by `eval` beside the task's score and in summary.md, and by `eval --check`."""
    n = counts.get(CUT_VALIDATION)
    if n is None or n >= MIN_CUT_VALIDATION or len(lrs) < 2:
        return None
    what = _examples_of(n, family)
    return (
        f"validation is {what} cut from train, too few to pick among {len(lrs)} LRs (one moves its score by "
        f"{100 / n:.0f} points; {MIN_CUT_VALIDATION} or more are not noted); give a validation split "
        "(data.validation, or a BEIR folder's qrels/dev.tsv) or raise data.validation_fraction"
    )


def label_index(task: str, labels: Sequence[str], value) -> int:
    value = str(value).lower() if isinstance(value, bool) else value
    if value not in labels:
        raise UserError(
            f"task {task}: label {value!r} is not in its label set {list(labels)}; fix the data or the task definition"
        )
    return labels.index(value)


def require_nonempty(task: str, data: TaskData) -> TaskData:
    splits = {"train": data.train, "val": data.val, **{f"test '{k}'": v for k, v in data.tests.items()}}
    for name, split in splits.items():
        if split_size(split) == 0:
            raise UserError(
                f"task {task}: the {name} split is empty; check the data files or the split sizes"
            )
    return data


def qa_example(
    rec_id: str, context: str, question: str, answers: list[dict], counts: dict, *, scored: bool = False
) -> dict | None:
    """A QA example. For training, only answers whose span matches the context are kept; the others
    are skipped and counted, and a question left without one is dropped (None). A `scored` split
    (validation, tests) keeps every answer and every question, counting the mismatched spans: the
    official SQuAD scripts score predictions against the answer texts, not their offsets."""
    good = [
        a for a in answers if context[a["answer_start"] : a["answer_start"] + len(a["text"])] == a["text"]
    ]
    if scored:
        counts["mismatched_scored_answers"] = (
            counts.get("mismatched_scored_answers", 0) + len(answers) - len(good)
        )
        return {"id": rec_id, "question": question, "context": context, "answers": list(answers)}
    counts["skipped_answers"] = counts.get("skipped_answers", 0) + len(answers) - len(good)
    if answers and not good:
        counts["skipped_questions"] = counts.get("skipped_questions", 0) + 1
        return None
    return {"id": rec_id, "question": question, "context": context, "answers": good}


def ir_split(pairs: Iterable[tuple[str, str, str, str]]) -> IRSplit:
    """An IRSplit from (query id, query, document id, document) tuples."""
    split = IRSplit({}, {}, {})
    for qid, query, did, doc in pairs:
        split.queries[qid] = query
        split.corpus[did] = doc
        split.qrels.setdefault(qid, {})[did] = 1
    return split


def ir_task_data(train: list[dict], val: list[dict], test: list[dict], sizes: dict) -> TaskData:
    """Retrieval data from records {"qid", "query", "did", "doc"}: training pairs, and val/test
    corpora holding the documents of the split (judged-only, as paper 1's evaluation)."""

    def evaluation(records, n_queries):
        corpus_records = subsample(records, sizes.get("corpus_queries"))
        corpus = {r["did"]: r["doc"] for r in corpus_records}
        split = ir_split(
            (r["qid"], r["query"], r["did"], r["doc"]) for r in subsample(corpus_records, n_queries)
        )
        split.corpus = corpus
        return split

    pairs = [
        {"query": r["query"], "document": r["doc"], "doc_id": r["did"]}
        for r in subsample(train, sizes.get("train"))
    ]
    return TaskData(pairs, evaluation(val, sizes.get("val")), {"test": evaluation(test, sizes.get("test"))})


def text_fields(texts: str | tuple[str, str]) -> dict:
    """The text fields of an sc example: one text, or a pair joined later by the task's template."""
    if isinstance(texts, tuple):
        return {"text": texts[0], "text_pair": texts[1]}
    return {"text": texts}


def overlap_keys(family: str, split) -> set:
    """What makes two examples the same input (a test input seen in training inflates the score). Texts
    are compared in Unicode's composed form (NFC): a copy whose accents are combining characters (as
    macOS and some exports write them) looks the same, and most tokenizers normalise it to the same
    tokens, but it passed the check."""
    if family == "ir":
        keys = set(split.queries.values()) if isinstance(split, IRSplit) else {p["query"] for p in split}
    elif family == "tc":
        keys = {tuple(e["tokens"]) for e in split}
    elif family == "qa":
        keys = {(e["question"], e["context"]) for e in split}
    else:
        keys = {(e["text"], e.get("text_pair")) for e in split}
    return {composed(k) for k in keys}


def composed(key):
    """An overlap key with each of its texts in NFC (also how a cut from train keeps a group together:
    `custom_data._whole_groups`)."""
    if isinstance(key, tuple):
        return tuple(composed(k) for k in key)
    return unicodedata.normalize("NFC", key) if isinstance(key, str) else key


def _shown(family: str, key) -> str:
    """An overlap key as the user wrote it: the text (and its pair), the words, or the question and
    context; it was printed as a Python tuple ("('waste of money', None)")."""
    if family == "tc":
        return " ".join(key)
    parts = key if isinstance(key, tuple) else (key,)
    return " | ".join(str(p) for p in parts if p is not None)


def check_overlap(family: str, data: TaskData, where: str) -> None:
    """A task file's input in two of its splits is one line (it inflates the score), unless allowed."""
    splits = {"train": data.train, "validation": data.val, "test": data.tests["test"]}
    keys = {s: overlap_keys(family, v) for s, v in splits.items()}
    for a, b in (("train", "test"), ("train", "validation"), ("validation", "test")):
        common = keys[a] & keys[b]
        if common:
            first = _shown(family, min(common, key=str))[:60]
            raise UserError(
                f"{where}: {count(len(common), 'input')} of {b} also {noun(len(common), 'appears', 'appear')} in {a} (first: {first!r}); "
                "deduplicate the data, or set `allow_overlap: true` if that is intended"
            )


def data_hash(data: TaskData) -> str:
    """sha256 of the loaded examples (all splits, in order), for the task signature."""
    h = hashlib.sha256()
    for part in (data.train, data.val, data.tests, data.labels):
        for chunk in _json_chunks(part):
            h.update(chunk.encode())
    return h.hexdigest()[:16]


def _json_chunks(part) -> Iterable[str]:
    """`json.dumps(part, sort_keys=True, default=_hashed)` in pieces whose concatenation is that text, so the
    hash is the one-shot text's: a list, tuple, dict of text keys or `IRSplit` (as `_hashed` gives it) a
    run of elements at a time (`_runs`), else whole. Why: the training examples of a large pairs file
    (300,000 rows beside `data.beir`) were one JSON text, then its bytes: the peak of loading the task (484
    MiB of Python objects, tracemalloc, of which 268 stay held); an IR split (its corpus) was one text
    still, 1M documents of 320 characters ~1 GiB and a minute, twice (validation and test). A run is one
    call of the C encoder, so the pieces cost no Python loop per document."""
    if isinstance(part, IRSplit):
        part = _split_fields(part)
    if type(part) is dict and all(type(k) is str for k in part):
        yield "{"
        items = ((key, part[key]) for key in sorted(part))  # `sort_keys`' order; its keys alone are held
        yield from _runs(items, True, _json_run, _json_chunks, json.dumps)
        yield "}"
    elif type(part) in (list, tuple):
        yield "["
        yield from _runs(part, False, _json_run, _json_chunks)
        yield "]"
    else:
        yield json.dumps(part, sort_keys=True, default=_hashed)


def _json_run(run: list, pairs: bool) -> str:
    """A run's elements (or key: value pairs) as `json.dumps` writes them inside their container."""
    return json.dumps(dict(run) if pairs else run, sort_keys=True, default=_hashed)[1:-1]


RUN = 256
"""Elements written by one call (`_runs`): a piece of a corpus is 256 documents, about 100 KiB of text."""


def _runs(
    items, pairs: bool, run_text: Callable, chunks: Callable, key_text: Callable = repr
) -> Iterable[str]:
    """A container's elements (`pairs`: its (key, value) items) as its text writes them, `, ` between: runs
    of up to `RUN` small ones (`_small`) written by one `run_text` call, a large one (a corpus in a split)
    through `chunks`, after its key as `key_text` writes it. The text is the same however the elements are
    grouped into runs (each run's text is its elements', `, ` between), so `RUN` elements are taken at a
    time and a batch of scalars alone (a corpus's texts) is one run, its types read by one C-level pass,
    not a `_small` call per document (about a tenth of `repr_sha256`'s time for 1M documents; the rest is
    the text itself: `repr`, its UTF-8 bytes and sha256, which define the digest)."""
    it, said = iter(items), False  # said: whether anything was written, so the next piece opens with `, `
    while batch := list(islice(it, RUN)):
        if set(map(type, map(itemgetter(1), batch) if pairs else batch)) <= _SCALARS:
            yield (", " if said else "") + run_text(batch, pairs)
        else:
            yield from _mixed_runs(batch, pairs, run_text, chunks, key_text, said)
        said = True


def _mixed_runs(
    items: list, pairs: bool, run_text: Callable, chunks: Callable, key_text: Callable, said: bool
) -> Iterable[str]:
    """`_runs` of a batch holding something other than scalars, element by element (`said`: whether
    anything of the container was written before it)."""
    run: list = []
    for item in items:
        small = _small(item[1] if pairs else item)
        if run and not small:
            yield (", " if said else "") + run_text(run, pairs)
            said, run = True, []
        if small:
            run.append(item)
            continue
        yield (", " if said else "") + (key_text(item[0]) + ": " if pairs else "")
        yield from chunks(item[1] if pairs else item)
        said = True
    if run:
        yield (", " if said else "") + run_text(run, pairs)


_SCALARS = frozenset((str, int, float, bool, type(None)))
"""The types `_small` takes whole without looking inside."""


def _small(value) -> bool:
    """Whether `value` is written whole inside a run: a scalar, or a short list, tuple or dict of them (an
    example, a query's judgements); not a dataclass, nor a long container (a corpus)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind in (list, tuple, dict) and len(value) <= 64:
        return all(map(_small, value.values() if kind is dict else value))
    return False


def repr_sha256(obj) -> str:
    """`hashlib.sha256(repr(obj).encode()).hexdigest()`, the text fed in pieces (`_repr_chunks`), so the
    digest is the one-shot text's. Why: `protocol._prepared_task` keys its cache by the repr of a task's
    examples, and for 300,000 training pairs that text and its bytes were two more copies of the pairs'
    texts, alive at once just before they are tokenised."""
    h = hashlib.sha256()
    for chunk in _repr_chunks(obj):
        h.update(chunk.encode())
    return h.hexdigest()


def _repr_chunks(obj) -> Iterable[str]:
    """`repr(obj)` in pieces: lists, tuples, dicts and dataclasses with their generated repr (an
    `IRSplit`) a run of elements (a field) at a time (`_runs`), anything else whole; their concatenation
    is `repr(obj)`."""
    if type(obj) in (list, tuple) and (type(obj) is list or len(obj) != 1):
        opening, closing = ("[", "]") if type(obj) is list else ("(", ")")
        yield opening
        yield from _runs(obj, False, _repr_run, _repr_chunks)
        yield closing
    elif type(obj) is dict:
        yield "{"
        yield from _runs(obj.items(), True, _repr_run, _repr_chunks)
        yield "}"
    elif dataclasses.is_dataclass(obj) and hasattr(type(obj).__repr__, "__wrapped__"):  # generated repr
        yield type(obj).__qualname__ + "("
        shown = [f for f in dataclasses.fields(obj) if f.repr]
        for i, f in enumerate(shown):
            yield (", " if i else "") + f.name + "="
            yield from _repr_chunks(getattr(obj, f.name))
        yield ")"
    else:
        yield repr(obj)


def _repr_run(run: list, pairs: bool) -> str:
    """A run's elements (or key: value pairs) as `repr` writes them inside their container (a tuple's as a
    list's: the same elements, `, ` between)."""
    return repr(dict(run) if pairs else list(run))[1:-1]


def _split_fields(split: IRSplit) -> dict:
    """`_hashed(split)` without its deep copy (`dataclasses.asdict` copies the corpus): the same fields,
    hence the same JSON text."""
    fields = {f.name: getattr(split, f.name) for f in dataclasses.fields(split)}
    if not split.ignore_identical_ids:
        del fields["ignore_identical_ids"]
    return fields


def _hashed(split: IRSplit) -> dict:
    """A split's fields for `data_hash`; `ignore_identical_ids` only where set (BEIR task files, whose
    scores it changes), so the other retrieval tasks keep their hash and their cached scores."""
    fields = dataclasses.asdict(split)
    if not split.ignore_identical_ids:
        del fields["ignore_identical_ids"]
    return fields
