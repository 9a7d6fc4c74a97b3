"""A pairs file as a BEIR task file's training data (`data: {beir: FOLDER, train: PAIRS FILE}`).

Test-only BEIR data (every BEIR set but MS MARCO) trains on pairs from elsewhere. `data.train` beside
`data.beir` names a BEIR folder (`beir.py`) or, here, a file of query-document pairs: the rows an IR task
file's train split holds (`query`, `document`, optional `query_id`, `doc_id`; CSV, TSV, JSON lines or
parquet, the text ones possibly compressed), with `columns:` naming other column names, so msmarco-pairs'
layout (`query`, `positive`, as the paper suite reads `hgissbkh/msmarco-pairs`) is `columns: {document:
positive}`. A column of hard negatives (`negative`, or the column `columns: {negative: ...}` names: the
layout of sentence-transformers' triplets and of MS MARCO's `query, positive, negative` triplet files) is
read too: each row is then a training example with its negative (`Pairs.triplets`), and fine-tuning adds
the batch's negatives to every query's candidates (`heads.info_nce`, SentenceTransformers'
MultipleNegativesRankingLoss on triplets); without it, each query's negatives are the batch's other
documents (MultipleNegativesRankingLoss on pairs, as paper 1). Negatives are training-only: validation,
cut from the pairs' queries, ranks their positive documents alone.

Design. One reader for pairs: the file is read as a task file's train split is (`custom_data.read_local`:
`datasets`, the file's lines kept for refusals; `custom_rows.ir_rows`: empty cells, an id given to two
texts, ids defaulting to a hash of the text), then handed to `beir.py` as judgments (`Pairs`: each pair a
judgment of grade 1, a pair given twice one judgment, as a qrels line given twice is; with negatives, its
rows kept as triplets too, the training examples of the queries left in train), so validation is
cut from the pairs' queries and ranked against the pairs' documents exactly as a BEIR training folder's
is, never from the scored set. A file of the wrong kind, a BEIR folder's corpus, queries or qrels file
(named where its folder was meant), or msmarco-pairs' layout without `columns:`, is one line naming the
fix. Memory: `datasets` reads the file into an Arrow table held in memory (`localfiles.load_local`: a
task file's data goes through a temporary cache, not `datasets`' own), and the rows are streamed from it
in batches (`paper.rows`): each row is checked and dropped as it is read
(`custom_rows.SplitIds` keeps the ids' texts, which are the pairs' queries and corpus), so what is held is
the pairs themselves, each query and document text once, plus one batch, as a BEIR training folder's
corpus is streamed (`beir._training_folder`). Before, every row was held as a dict, then as a row of ids,
then as the pairs (a 300,000-row triplet file: peak 378 MiB of Python objects, now 286, of which 264 are
the pairs kept; the Arrow table, outside Python's objects, is not in these figures). Trade-off: the pairs'
texts are still held whole, as the training loop reads them, and the file's Arrow table is held while the
task loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.eval.spec import NEGATIVE
from encoderlab.eval.tasks.custom_data import (
    read_local,
    refuse_negative_ids,
    refuse_relevance_columns,
    require_named_columns,
    require_split_columns,
)
from encoderlab.eval.tasks.custom_family import COLUMNS, OPTIONAL_COLUMNS
from encoderlab.eval.tasks.custom_rows import SplitIds, row_negative
from encoderlab.eval.tasks.paper import rows

BEIR_FILES = {"corpus or queries": ("_id", "text"), "qrels": ("query-id", "corpus-id", "score")}
"""A BEIR folder's file kinds and the columns that tell them (`beir.py` reads them)."""
POSITIVE = "positive"
"""msmarco-pairs' column of the relevant passage (`paper.msmarco_pairs`), the task files' `document`."""


@dataclass(frozen=True)
class Pairs:
    """A pairs file as a BEIR folder's training part: {id: query}, {id: document}, {query id: {document
    id: 1}} (the ids the file gives, else hashes of the texts)."""

    queries: dict[str, str]
    corpus: dict[str, str]
    judged: dict[str, dict[str, int]]
    triplets: list[tuple[str, str, str]] = field(default_factory=list)
    """(query id, document id, hard negative) of each row, in the file's order, where it has a `negative`
    column: each row is a training example then (a pair given with two negatives, two), as in
    sentence-transformers' triplets; empty without the column."""


def read_pairs(name: str, columns: dict[str, str], base: Path, where: str) -> Pairs:
    """The pairs of the file `name` (relative to `base`, the task file's folder); `columns`: the task
    file's `columns:` (IR fields -> the file's column names)."""
    found, places = read_local({"train": name}, base, where)
    col = {f: columns.get(f, f) for f in (*COLUMNS["ir"], *OPTIONAL_COLUMNS["ir"])}
    have = found["train"].column_names
    _refuse_other_kind(name, have, (col["query"], col["document"]), columns, where)
    require_named_columns(
        found, places, {f: columns[f] for f in OPTIONAL_COLUMNS["ir"] if f in columns}, where
    )
    require_split_columns(found, places, (col["query"], col["document"]), where)
    refuse_negative_ids(found, places, where)
    refuse_relevance_columns(found, places, col.values(), where)
    back = {c: f for f, c in col.items()}
    read = [col["query"], col["document"], *(col[f] for f in OPTIONAL_COLUMNS["ir"] if col[f] in have)]
    hard, ids, at = col[NEGATIVE] in read, SplitIds("train"), places["train"]
    judged: dict[str, dict[str, int]] = {}
    triplets: list[tuple[str, str, str]] = []
    for i, cells in enumerate(rows(found["train"], read)):  # streamed: a row is dropped once read
        r, row_at = {back[c]: v for c, v in cells.items()}, f"{where}: {at.of('train', i)}"
        qid, _, did, _ = ids.read(r, row_at)
        judged.setdefault(qid, {})[did] = 1
        if hard:
            triplets.append((qid, did, row_negative(r, row_at)))
    return Pairs(ids.queries, ids.documents, judged, triplets)


def _refuse_other_kind(
    name: str, have: list[str], needed: tuple[str, str], columns: dict[str, str], where: str
) -> None:
    """Refuse a file that lacks the pairs' columns and is of a kind that says what was meant: a BEIR
    folder's corpus, queries or qrels file (its folder was meant), or msmarco-pairs' `query, positive`
    without `columns: {document: positive}`. Any other file lacking them gets the task files' line
    (`require_split_columns`)."""
    if all(c in have for c in needed):
        return
    kind = next((k for k, cols in BEIR_FILES.items() if all(c in have for c in cols)), None)
    if kind is not None:
        folder = Path(name).parent
        raise UserError(
            f"{where}: data.train {name} is a BEIR {kind} file ({', '.join(have)}), not query-document "
            f"pairs; name the BEIR folder holding it ({str(folder) if str(folder) != '.' else 'its folder'}, "
            "with qrels/train.tsv), or a pairs file of columns query and document"
        )
    if "document" not in columns and needed[0] in have and POSITIVE in have:
        raise UserError(
            f"{where}: data.train {name} has columns {', '.join(have)}: msmarco-pairs' layout, whose relevant "
            f"document is {POSITIVE!r}; add `columns: {{document: {POSITIVE}}}` to the task file"
        )
