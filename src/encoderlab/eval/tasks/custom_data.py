"""A task file's `data:` section: where its examples come from, and its three splits read from there.

`DataSpec` is the section's schema (docs/evaluation.md); `load_splits` turns it into train,
validation and test `datasets.Dataset`s and, for each, where its rows are in the data read
(`rowplaces.RowPlaces`), so a later refusal of a row names its file and line. `custom.py` parses the
rest of the task file and turns these splits into the family's examples.

Design. Local files (`localfiles.load_local`: CSV, TSV, JSONL, parquet, the text ones possibly
compressed) and hub datasets (`hub.load_hub`, as the paper suite reads them) both go through
`datasets.load_dataset`, so a file task behaves like a built-in one. A missing validation split is cut
from train as EncodEval does (`train_test_split`, by default 5% with seed 42), and `test_fraction` cuts a test split
from train first, so validation comes from what is left to train on; an IR task's rows of one query stay
on one side of a cut (`_whole_groups`). Every setting that would be
ignored is refused instead, with one line naming the field and the fix: hub-only fields beside local
files, a fraction beside the split it would cut, a split mapped to one the dataset lacks (a typo was
cut from train, unsaid), a share that leaves nothing to train on. A column `columns:` names by a dotted
path into a nested field is added to each split first (`nestedcolumns.lift_nested`), so every check reads
it as a column. Trade-off: the cuts are seeded random draws, not stratified by label, so a small cut split
may lack a rare class.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from encoderlab.data.hub import HUB_DATA_ENV, import_datasets, well_formed_hub_id
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubexport import export_source
from encoderlab.eval.tasks.hubsource import HubSource
from encoderlab.eval.tasks.localfiles import check_unquoted, load_local, plain_suffix
from encoderlab.eval.tasks.nestedcolumns import lift_nested
from encoderlab.eval.tasks.rowplaces import ORIGIN, RowPlaces, file_order, file_places, hub_places
from encoderlab.eval.tasks.splits import composed, cut_size, split_role
from encoderlab.paths import found_in_cwd_instead
from encoderlab.words import count, noun

SPLITS = ("train", "validation", "test")
VALIDATION_FRACTION = 0.05
"""The share of train cut as validation when the data has no validation split (EncodEval's)."""


@dataclass(frozen=True, kw_only=True)
class DataSpec:
    """Where a file task's examples come from: local files, or a hub dataset."""

    train: str | None = None
    """Local file of the training split (CSV, TSV, JSONL or parquet; the first three also .gz, .bz2
    or .xz), relative to the spec; beside `beir`, a BEIR folder (or hub id) whose train qrels give the
    training pairs of a test-only set (`beir.py`)."""
    validation: str | None = None
    """Local validation file; when absent, `validation_fraction` of train becomes validation."""
    test: str | None = None
    """Local test file; when absent, `test_fraction` of train becomes test."""
    beir: str | None = None
    """Retrieval data in BEIR's layout, a folder or a hub id (`beir.py`), instead of per-split files."""
    hub: str | None = None
    """A hub dataset id instead of local files (read as the paper suite reads, or from
    $ENCODERLAB_HUB_DATA)."""
    config: str | None = None
    """The hub dataset's config."""
    revision: str | None = None
    """The hub dataset's revision (`refs/convert/parquet` for a script repository's export)."""
    splits: dict[str, str | None] = field(default_factory=dict)
    """Our split (train, validation, test) -> the hub dataset's split name (default the same
    name); `validation: null` cuts validation from train even if the dataset has one."""
    validation_fraction: float | None = None
    """Share of train taken as validation when no validation split is given (default
    `VALIDATION_FRACTION`, EncodEval's 5%); refused beside a validation file or a hub validation split."""
    test_fraction: float | None = None
    """Share of train cut as the test split, for data with no test file (a hub dataset's own test
    split is then not read); validation is cut from the rest. Scores are on held-out train examples."""
    seed: int = 42
    """Seed of those cuts (EncodEval's)."""


def load_splits(
    data: DataSpec,
    base: Path,
    columns: tuple[str, ...],
    where: str,
    group: str | None = None,
    before_cut: Callable[[dict, dict[str, RowPlaces]], None] | None = None,
    named: Iterable[str] = (),
) -> tuple[dict, dict[str, RowPlaces]]:
    """{split: datasets.Dataset} for train, validation and test, by `datasets.load_dataset`, and
    {split: where its rows are in the data read}; `base` is the task file's folder, which local
    file names are relative to. Each split read must hold the `columns` (checked before a cut);
    `group`: a column whose rows of one value a cut keeps on one side (an IR task's query column);
    `before_cut`: the family's checks of the splits as read, run before a cut could refuse their size;
    `named`: every column `columns:` names, optional ones too, which a dotted path reads (`nestedcolumns`)."""
    needed = ("train",) if data.test_fraction is not None else ("train", "test")
    if data.hub:
        if data.train or data.validation or data.test:
            raise UserError(f"{where}: give either data.hub or local files, not both")
        _check_hub_name(data.hub, base, where)
        found, places = _hub_splits(data, needed, where)
    else:
        hub_only = [f"data.{k}" for k in ("config", "revision", "splits") if getattr(data, k)]
        if hub_only:  # they were ignored, unsaid
            raise UserError(
                f"{where}: {', '.join(hub_only)}: read only with data.hub; local files are named per split "
                "(data.train, data.validation, data.test), so drop "
                + ("it" if len(hub_only) == 1 else "them")
            )
        files = {s: getattr(data, s) for s in SPLITS if getattr(data, s)}
        if data.test and data.test_fraction is not None:
            raise UserError(f"{where}: data.test and data.test_fraction both give the test split; keep one")
        for s in needed:
            if s not in files:
                raise UserError(
                    f"{where}: data.{s} is missing; name a file (or data.hub"
                    + (", or data.test_fraction to cut it from train)" if s == "test" else ")")
                )
        found, places = read_local(files, base, where)
    # `columns: {text: meta.text}`: a nested field, as a column (an optional one too, `query_id: meta.qid`)
    lift_nested(found, dict.fromkeys((*columns, *named)), where)
    require_split_columns(found, places, columns, where)
    if before_cut is not None:
        before_cut(found, places)
    validation = VALIDATION_FRACTION if data.validation_fraction is None else data.validation_fraction
    for split, fraction in (("test", data.test_fraction), ("validation", validation)):
        if split not in found:  # test first, so validation comes from what is left to train on
            parts = _cut(found["train"], places["train"], split, fraction, data.seed, where, group)
            (found["train"], places["train"]), (found[split], places[split]) = parts
    return found, places


def read_local(names: dict[str, str], base: Path, where: str) -> tuple[dict, dict[str, RowPlaces]]:
    """{split: datasets.Dataset} and {split: its rows' places} of local data files ({split: the name the
    task file gives}, relative to `base`, the task file's folder): the one reader of a task's files, a BEIR
    task's pairs file (`irpairs.read_pairs`) too. A TSV's cells are checked (`check_unquoted`)."""
    # `~` is the home folder, as in a run config's `data.path` (was read as a folder `~` beside the file)
    files = {s: os.path.expanduser(f) for s, f in names.items()}
    for s, f in files.items():  # one the working directory holds was "FOLDER/f does not exist"
        if not (base / f).exists() and (why := found_in_cwd_instead(f, base, "task file")):
            raise UserError(f"{where}: data.{s}: {why}")
    found = load_local({s: (base / f).resolve() for s, f in files.items()}, where)
    places = {s: file_places(f, base / f, found[s].num_rows, where) for s, f in files.items()}
    for s, f in files.items():
        if plain_suffix(Path(f)) == ".tsv":
            check_unquoted(found[s], s, places[s], where)
    return found, places


def require_named_columns(
    found: dict, places: dict[str, RowPlaces], named: dict[str, str], where: str
) -> None:
    """Refuse an optional field (QA `id`, IR `query_id`, `doc_id`) that `columns:` names to a column no split
    holds. Optional columns are read where a split has them (one file may lack them), so a misspelt or
    absent one was dropped without a word and the ids fell back to row numbers or text hashes: the
    relevance an IR file meant to key by its own ids was keyed by text instead."""
    for field_, column in named.items():
        if any(column in part.column_names for part in found.values()):
            continue
        names = found["train"].column_names
        fix = _near_fix([column], names) or f"name a column the data has, or leave {field_} out of `columns:`"
        raise UserError(
            f"{where}: columns.{field_}: no split has column {column!r} ({places['train'].whole('train', False)}: "
            f"columns {', '.join(names)}); {fix}"
        )


NEGATIVE_ID = "negative_id"
"""A column of hard negatives' ids, which is not read (`refuse_negative_ids`)."""


def refuse_negative_ids(found: dict, places: dict[str, RowPlaces], where: str) -> None:
    """Refuse an IR split with a `negative_id` column. Its name says it would be read as `doc_id` is, but a
    hard negative is told from a query's positive by its input (its text as truncated), as an in-batch copy
    is (`heads.info_nce`: the model reads texts, so one text under two ids embeds as one, and one id never
    names two texts), so an id could mask nothing more; the column was dropped without a word."""
    for split, part in found.items():
        if NEGATIVE_ID in part.column_names:
            raise UserError(
                f"{where}: {places[split].whole(split)}: column {NEGATIVE_ID!r} is not read: a hard negative "
                "is masked for a query when its input (its text as truncated) is the query's positive's, as in-batch "
                "copies are (the model reads texts, not ids); drop or rename the column"
            )


RELEVANCE_COLUMNS = ("label", "labels", "score", "relevance", "relevant", "is_relevant", "grade")
"""Names of a column of relevance judgments beside an IR file's pairs, in any case, whatever it holds
(`refuse_relevance_columns`)."""
RELEVANCE_WORDS = frozenset(
    {"rel", "qrel", "qrels", "relevance", "relevant", "grade", "graded", "judgment", "judgement"}
)
"""Words that make a column of numbers or booleans a judgment column wherever they stand in its name
(`relevance_score`, `is_relevant`, `qrel`, `relScore`). `score` and `label` count as the whole name only: a
`ce_score` or `bm25_score` beside positives is a retriever's or a cross-encoder's score, not a judgment."""
NEGATED_WORDS = frozenset({"not", "non", "irrelevant", "nonrelevant"})
"""Words that make a judgment column's 1 (or true) the mark of a row that is not relevant (`not_relevant`,
`is_non_relevant`, `irrelevant`): such a column says a row is a relevant pair with 0 (or false). Judged as
the others were, a `not_relevant` column of falses (every row relevant, a valid file) was refused, and an
`irrelevant` column was not judged, so its rows of 1 were trained on as relevant pairs, unsaid. `no` is
not one (`rel_no`: a number)."""
LABEL_NAMES = frozenset({"y", "target", "targets", "gold", "gold_label"})
"""Whole names (in any case) under which a column of numbers or booleans is a judgment though no word of
`RELEVANCE_WORDS` is in it: the label column of `(X, y)` exports and of `run_glue.py`-style files. Not
judged, a `target` column's 0 rows were trained on as positives and judged relevant, unsaid. As
`RELEVANCE_WORDS`, a column of text under such a name is data (`target` is a bitext file's other side)."""
RELEVANT = ("1", "1.0", "true")
"""What a judgment column's cell holds for a relevant row (`NOT_RELEVANT` where its name is negated)."""
NOT_RELEVANT = ("0", "0.0", "false")


def _judgments(part, read: set[str]) -> dict[str, tuple[str, ...]]:
    """The columns of a split (`part`) that judge its rows, each with the cells (as text, case folded) that
    mark a row relevant: not read (`read`: the columns `columns:` maps to fields), and named as
    `RELEVANCE_COLUMNS` (any values) or holding numbers or booleans under a name with a word of
    `RELEVANCE_WORDS` or `NEGATED_WORDS` (a text column such as `relevant_passage` is data, not a judgment)."""
    out = {}
    for c in part.column_names:
        if c in read:
            continue
        words = {w.casefold() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", c)}
        if c.casefold() in RELEVANCE_COLUMNS:
            out[c] = RELEVANT
        elif (words & (RELEVANCE_WORDS | NEGATED_WORDS) or c.casefold() in LABEL_NAMES) and _marks(part, c):
            out[c] = NOT_RELEVANT if words & NEGATED_WORDS else RELEVANT
    return out


def _marks(part, column: str) -> bool:
    """Whether a column holds numbers or booleans: by its type, or, where it is text (a CSV or TSV cell is
    read as the text written, so a `qrel` column of 0s and 1s is text there), by every non-empty cell
    reading as one (`1`, `0.0`, `true`). Told by the type alone, such a CSV column was never judged, so
    its 0 rows were trained on as relevant pairs, unsaid; a column of other text (`relevant_passage`)
    stays data."""
    dtype = getattr(part.features[column], "dtype", None)  # a Value's; a list or struct has none
    if dtype not in ("string", "large_string"):
        return dtype is not None
    filled = False
    for value in part[column]:  # the first other text ends the look: a passage column is not read through
        cell = "" if value is None else str(value).strip().casefold()
        if cell and not _number_like(cell):
            return False
        filled = filled or bool(cell)
    return filled


def _number_like(cell: str) -> bool:
    """A text cell that reads as a number or a boolean (`1`, `-2`, `0.5`, `true`); not `nan` or `inf`."""
    if cell in ("true", "false"):
        return True
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def refuse_relevance_columns(
    found: dict, places: dict[str, RowPlaces], read: Iterable[str], where: str
) -> None:
    """Refuse an IR split whose column of relevance judgments (`_judgments`: `label`, `score`,
    `relevance_score`, `is_relevant`, `qrel`, ...; not one `columns:` reads) marks a row as other than
    relevant. Every row of an IR file is a relevant pair of grade 1, so such a column was dropped without a
    word: a `(query, document, label)` file's label-0 rows were trained on as positives and judged relevant
    in the test's qrels. A column of 1s (or `true`; 0s under a negated name, `NEGATED_WORDS`) says what the
    rows are read as, and passes. Trade-off:
    a judgment is told by its name, not by its values alone: a column of numbers of another name is not
    judged, as ids (MS MARCO's qid and pid, numbers in its TSVs) and flags whose false is a relevant row
    (SQuAD 2's `is_impossible`) would refuse valid files. Rows are checked in file order (`file_order`),
    so the first such row is named."""
    judged = {
        s: {c: (found[s][c], ok) for c, ok in _judgments(part, set(read)).items()}
        for s, part in found.items()
    }
    if not any(judged.values()):
        return
    for split, i in file_order(places, found):
        for column, (cells, relevant) in judged[split].items():
            if str(cells[i]).strip().casefold() not in relevant:
                raise UserError(
                    f"{where}: {places[split].of(split, i)}: column {column!r} holds {cells[i]!r}, but it is not "
                    "read: every row of an IR task file is read as a relevant (query, document) pair of grade 1; "
                    "keep only the relevant rows and drop the column (a hub dataset: save its splits as .jsonl "
                    "files first, with `datasets`' to_json; graded or non-relevant judgments: a BEIR folder's "
                    "qrels, `data: {beir: FOLDER}`)"
                )


def require_train_negatives(
    found: dict, places: dict[str, RowPlaces], column: str | None, where: str
) -> None:
    """Refuse an IR task's `columns: {negative: COLUMN}` that the train split lacks while another split has
    it (`require_named_columns` refuses it where none has): hard negatives are read in training only, so
    the named column was dropped without a word and training ran on in-batch negatives alone."""
    names = found["train"].column_names
    if column is None or column in names:
        return
    raise UserError(
        f"{where}: columns.negative: the train split has no column {column!r} ({places['train'].whole('train')}: "
        f"columns {', '.join(names)}); hard negatives are read in training only: add the column to the train "
        "data, or leave negative out of `columns:`"
    )


def _near_fix(lacked: list[str], names: list[str]) -> str | None:
    """The fix for a column the header names with spaces at its ends or in another case (`review, stars`
    as a CSV header reads ' stars'), which the column list shows but the eye does not: "no column stars
    (it has review,  stars)" named no difference."""
    for want in lacked:
        for have in names:
            if have != want and have.strip().casefold() == want.strip().casefold():
                case, spaces = have.strip() != want.strip(), have.casefold() != want.casefold()
                what = " and ".join(
                    w for w, differs in (("in case", case), ("in spaces at its ends", spaces)) if differs
                )
                return (
                    f"its column {have!r} differs from {want!r} only {what}: write it as {want!r} in the data, "
                    f"or as {have!r} in `columns:`"
                )
    return None


def require_split_columns(
    found: dict, places: dict[str, RowPlaces], columns: tuple[str, ...], where: str
) -> None:
    """Refuse a split read without one of the `columns`, before train is cut: a .json file holding one
    object (SQuAD's `{version, data}`) is one example, and cutting validation from it was refused as
    "0.05 of the 1 train example leaves none to train on", which hid that the layout was not read."""
    for split, part in found.items():
        lacked = [c for c in columns if c not in part.column_names]
        if not lacked:
            continue
        fix = _near_fix(lacked, part.column_names) or "fix `columns:` or the data"
        if (
            part.num_rows == 1
            and not places[split].hub
            and plain_suffix(Path(places[split].source)) == ".json"
        ):
            fix = (
                "the file is one JSON object, read as one example: write one row per example, as a JSON array "
                "of rows or JSON lines (a nested layout such as SQuAD's {version, data} flattened to a row per "
                "question), or fix `columns:`"
            )
        raise UserError(
            f"{where}: {places[split].whole(split)}: no {noun(len(lacked), 'column')} {', '.join(lacked)} "
            f"(it has {', '.join(part.column_names)}); {fix}"
        )


def _check_hub_name(hub: str, base: Path, where: str) -> None:
    """Refuse a `data.hub` that is no hub id, naming the task file; a path to a local folder (a dataset
    saved in the hub's layout, `data/train-00000-of-00001.parquet`) gets the ways to read it. It was
    "'/data/reviews' is not a dataset id of the form OWNER/NAME; fix it", without the file or the fix."""
    if well_formed_hub_id(hub):
        return
    local = base / os.path.expanduser(hub)
    if local.exists():
        raise UserError(
            f"{where}: data.hub {hub!r} is a local {'folder' if local.is_dir() else 'file'}, not a hub dataset "
            "id (OWNER/NAME); name its files in data.train, data.test (and data.validation), e.g. "
            f"data/train-00000-of-00001.parquet, or set {HUB_DATA_ENV} to a folder holding it as OWNER/NAME "
            "and give that id"
        )
    raise UserError(f"{where}: data.hub {hub!r} is not a hub dataset id (OWNER/NAME); fix it")


def _hub_splits(data: DataSpec, needed: tuple[str, ...], where: str) -> tuple[dict, dict[str, RowPlaces]]:
    """The hub dataset's splits playing ours ({split: Dataset}, {split: places}); validation only where
    the dataset has the split it maps to (else it is cut from train)."""
    if data.splits.get("test") and data.test_fraction is not None:  # the mapping was ignored, unsaid
        raise UserError(
            f"{where}: data.splits.test and data.test_fraction both give the test split; keep one"
        )
    source = export_source(HubSource(data.hub, data.config, data.revision))  # an export's config: its files
    ds = load_hub(source)
    names = {s: data.splits.get(s, s) for s in SPLITS}
    unknown = sorted(set(data.splits) - set(SPLITS))
    if unknown:
        raise UserError(
            f"{where}: data.splits: unknown {noun(len(unknown), 'split')} {', '.join(unknown)}; valid: {', '.join(SPLITS)}"
        )
    found = {s: ds[n] for s, n in names.items() if n in ds and s in (*needed, "validation")}
    # a validation mapped to a split the dataset lacks (a typo) was cut from train, unsaid
    for s in (*needed, *(("validation",) if data.splits.get("validation") else ())):
        if names[s] is None:  # was: "has no split None"
            raise UserError(
                f"{where}: data.splits.{s} is null, which only validation may be (it is then cut from "
                f"train); map {s} to a split of {source.describe()} ({', '.join(ds)})"
                + (", or cut it with data.test_fraction" if s == "test" else "")
            )
        if s not in found:
            raise UserError(
                f"{where}: {source.describe()} has no split {names[s]!r} (it has {', '.join(ds)}); map it in "
                "data.splits" + (" (null cuts validation from train)" if s == "validation" else "")
            )
    if "validation" not in data.splits and "validation" not in found:
        _refuse_unread_validation(ds, names, source, where)
    places = {s: hub_places(names[s], v.num_rows) for s, v in found.items()}
    if "validation" in found and data.validation_fraction is not None:  # was ignored, unsaid
        raise UserError(
            f"{where}: data.validation_fraction cuts validation from train, but {source.describe()} has its "
            f"own validation split {names['validation']!r}; drop the fraction, or set data.splits: "
            "{validation: null} to cut it from train"
        )
    return found, places


def _refuse_unread_validation(ds, names: dict[str, str | None], source: HubSource, where: str) -> None:
    """Refuse a hub dataset whose validation goes by another name (`dev`, `val`, `valid`:
    `splits.split_role`) that no split of ours maps, `data.splits.validation` left out: validation was cut
    from train and that split left unread, unsaid. A parquet export keeps its own split names
    (`hubexport.export_source`), where `datasets`' default patterns had read an export's `dev` folder as
    validation, so such a task file changed its validation without a word. Where one of ours maps a split of
    that role already (MNLI's `test: validation_matched`), the user has seen them: validation is cut."""
    mapped = {n for n in names.values() if n in ds}
    if any(split_role(n) == "validation" for n in mapped):
        return
    unread = [n for n in ds if split_role(n) == "validation"]
    if unread:
        raise UserError(
            f"{where}: {source.describe()} has no split 'validation' but has {', '.join(map(repr, unread))} "
            f"(it has {', '.join(ds)}), which validation cut from train would leave unread; map it "
            f"(data.splits: {{validation: {unread[0]}}}), or cut validation from train (data.splits: "
            "{validation: null})"
        )


def _cut(
    train, places: RowPlaces, split: str, fraction: float, seed: int, where: str, group: str | None
) -> tuple:
    """((the rest of train, its places), (`split`, its places)): a seeded share of train
    (`train_test_split`, as EncodEval cuts validation), of the size a BEIR folder's cut has (`splits.cut_size`,
    the count `train_test_split` takes of the share; given as a number, the draw is the same), then the rows
    of a `group` value the cut took joined to it (`_whole_groups`); a share that leaves nothing to train on
    is one line."""
    size = cut_size(fraction, train.num_rows)
    # one example is cut whole at any fraction: "lower it" could not help (a one-row file was told to)
    named = (
        f"map a split to it (data.splits: {{{split}: NAME}})" if places.hub else f"name a file (data.{split})"
    )
    fix = (
        "lower it or add examples"
        if train.num_rows > 1
        else f"one example cannot be cut in two, whatever the fraction; add examples, or {named}"
    )
    refusal = UserError(
        f"{where}: data.{split}_fraction {fraction} of the {count(train.num_rows, 'train example')} leaves "
        f"none to train on; {fix}"
    )
    try:
        parts = train.add_column(ORIGIN, list(places.order)).train_test_split(test_size=size, seed=seed)
    except ValueError:  # datasets: "the resulting train set will be empty"
        raise refusal from None
    if group is not None:
        parts = _whole_groups(parts, group)
        if not parts["train"].num_rows:  # every query had a row drawn: a lower fraction may not help
            n = len({composed(v) for v in parts["test"][group] if isinstance(v, str)})
            raise UserError(
                f"{where}: data.{split}_fraction {fraction} of the {count(train.num_rows, 'train example')} "
                f"leaves none to train on: the cut drew a row of {'each of ' if n > 1 else ''}their "
                f"{count(n, 'query', 'queries')}, whose rows stay on one side (a query is never both trained "
                "on and scored); add rows of other queries"
            )
    kept, cut = ((parts[p].remove_columns(ORIGIN), places.cut(parts[p][ORIGIN])) for p in ("train", "test"))
    return kept, (cut[0], dataclasses.replace(cut[1], from_train=True))


def _whole_groups(parts, group: str) -> dict:
    """`parts` ({train, test} of `train_test_split`) with each train row whose `group` value (compared as
    `check_overlap` compares it, `splits.composed`) a cut row has moved into the cut. An IR task's rows are
    judgments, several for one query where it has two positives or, as triplets, one row per hard negative:
    cut by rows, a query's rows fell on both sides, refused as overlap ("deduplicate the data", which had no
    duplicate). A data set of one row per query is cut as before (same draw, same data hash); the built-in
    tasks' cuts are their loaders' own, not this."""
    taken = {composed(v) for v in parts["test"][group] if isinstance(v, str)}  # others: refused later, by row
    moved = [i for i, v in enumerate(parts["train"][group]) if isinstance(v, str) and composed(v) in taken]
    if not moved:
        return parts
    stay = sorted(set(range(parts["train"].num_rows)).difference(moved))
    datasets = import_datasets()
    joined = datasets.concatenate_datasets([parts["test"], parts["train"].select(moved)])
    return {"train": parts["train"].select(stay), "test": joined}
