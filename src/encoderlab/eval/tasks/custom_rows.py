"""A task file's QA and IR rows as examples, each cell checked as it is read.

QA rows hold an id (optional), a question, a context and SQuAD's answers; IR rows a query and a
document, with optional ids. What would be scored wrongly without a word is one line naming the
problem and the fix, as for sc and tc cells (`custom_labels.py`):
  * an empty cell (a CSV's empty field, a JSON null): `str()` made it the text 'None', a question,
    context, answer, query or document of its own;
  * a QA id used twice in a validation or test split: predictions and scores are keyed by id, so the
    split was scored on one of those questions, the others dropped;
  * a negative `answer_start`: it sliced the context from its end, so a training answer could match
    and then be trained as "no answer";
  * an IR id given to two different queries (or documents) in one split: the later text silently
    replaced the earlier one, and its relevant documents were merged;
  * an unanswerable validation or test question of a SQuAD v1.1 task (`require_answers`).
An IR train row may hold a hard negative (`negative`, sentence-transformers' triplets): a file with that
column needs one in every row (`row_negative`); validation and test rows' negatives are checked so too but
not read (scoring ranks the split's corpus).
An IR id of 0 (or "0") is an id; only a missing one (absent, null, NaN, empty) falls back to a hash of the
text (equal texts, one id).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from encoderlab.errors import UserError, shown
from encoderlab.eval.spec import NEGATIVE, IRSplit, QAOptions
from encoderlab.eval.tasks.custom_labels import cell_text, empty
from encoderlab.eval.tasks.paper import struct_list
from encoderlab.eval.tasks.splits import ir_split, qa_example, text_id

RowWhere = Callable[[int], str]
"""Row i of a split -> where it is, as a refusal of it starts (`task file X: test split, line 4 of t.jsonl`)."""


def _text(r: dict, field: str, where: str) -> str:
    return cell_text(r[field], field, where)


def qa_answers(value, where: str) -> list[dict]:
    """A row's answers: SQuAD's struct of lists, or a list of {text, answer_start}; anything else (one
    answer as a text and a number, a bare string) is one line, not a TypeError from deep inside."""
    columns = [value.get("text"), value.get("answer_start")] if isinstance(value, dict) else []
    answers = None
    if all(isinstance(c, list) for c in columns) and len({len(c) for c in columns}) <= 1:
        try:
            answers = [(a["text"], int(a["answer_start"])) for a in struct_list(value)]
        except (TypeError, KeyError, ValueError):
            answers = None
    if answers is None or any(isinstance(t, (list, dict)) for t, _ in answers):
        raise UserError(
            f"{where}: a row's answers must be SQuAD's {{text: [texts], answer_start: [offsets]}} (empty "
            f"lists when there is none) or a list of {{text, answer_start}}, got {shown(value, 80)}"
            + (  # the fix was not said: a CSV or TSV cell is one text, never a struct (docs: JSON lines)
                "; a CSV or TSV cell is one text: write the rows in JSON lines or parquet"
                if isinstance(value, str)
                else ""
            )
        )
    for text, start in answers:
        if text is None or text == "":  # "" trained an end before its start, and counted as answerable
            raise UserError(
                f"{where}: a row has an empty answer text; fill it in, or remove the answer (no answer: "
                "empty lists)"
            )
        if start < 0:
            raise UserError(
                f"{where}: a row's answer_start is {start}; it is the answer's character offset in the "
                "context, from 0"
            )
    return [{"text": str(t), "answer_start": n} for t, n in answers]


def qa_row(r: dict, where: str) -> None:
    """Check a QA row's own cells (its answers' shape, a non-empty context and question), as `qa_examples`
    reads them: run on every row in file order first, so the first bad row of the data is named."""
    qa_answers(r["answers"], where)
    for field in ("context", "question"):
        _text(r, field, where)


def ir_row(r: dict, where: str) -> None:
    """Check an IR row's own cells (a non-empty query and document, and its hard negative where the file
    has a `negative` column), as `ir_rows` and `ir_negatives` read them; in file order first, as `qa_row`."""
    for field in ("query", "document"):
        _text(r, field, where)
    if NEGATIVE in r:
        row_negative(r, where)


def row_negative(r: dict, where: str) -> str:
    """A row's hard negative. Once a file has the column every row needs one, as sentence-transformers'
    triplets do (a dataset's column is in every row): a row without one would train on fewer candidates
    than its batch-mates, unsaid, so it is one line."""
    if empty(r[NEGATIVE]):
        raise UserError(
            f"{where}: a row has an empty {NEGATIVE} (its hard negative; once the file has that column every "
            "row needs one, as sentence-transformers' triplets do); fill it in, remove the row, or drop the "
            "column to train on in-batch negatives only"
        )
    return _text(r, NEGATIVE, where)


def qa_examples(
    split_rows: list[dict], part: str, counts: dict, where: str, at: RowWhere, order: Sequence[int]
) -> list[dict]:
    """A split's QA examples, in the split's order; ids default to the row's number, and a scored split's
    ids are unique. `at(i)`: row i's place, which a refusal of that row starts with; `order`: the rows'
    indices in file order (`rowplaces.file_order`), in which they are checked, so a refusal names the
    first of two questions with one id, or the first row, as the file has them."""
    slots: list[dict | None] = [None] * len(split_rows)
    seen: dict[str, int] = {}
    for i in order:
        r = split_rows[i]
        answers = qa_answers(r["answers"], at(i))
        rec_id = f"{part}-{i}" if empty(r.get("id")) else str(r["id"])  # a NaN was the id 'nan', twice
        if part != "train" and rec_id in seen:
            raise UserError(
                f"{at(i)}: the {part} split has two questions with id {rec_id!r} (this one and "
                f"{at(seen[rec_id]).removeprefix(f'{where}: {part} split, ')}); scores are keyed by id, so "
                "give every question its own (or leave the id column out: row numbers are used)"
            )
        seen[rec_id] = i
        context, question = _text(r, "context", at(i)), _text(r, "question", at(i))
        slots[i] = qa_example(rec_id, context, question, answers, counts, scored=part != "train")
    out = [ex for ex in slots if ex is not None]
    if split_rows and not out:  # every training answer skipped: "the train split is empty" said not why
        first_row = order[0]
        answer = qa_answers(split_rows[first_row]["answers"], where)[0]
        start, text = answer["answer_start"], answer["text"]
        found = _text(split_rows[first_row], "context", where)[start : start + len(text)]
        first = at(first_row).removeprefix(f"{where}: ")  # `train split, line 6 of train.jsonl`
        raise UserError(
            f"{where}: no answer of the train split is in its context at its answer_start (first row, {first}: "
            f"{text!r} at {start} reads {found!r}); answer_start is the answer's 0-based character offset in "
            "the context"
        )
    return out


def _id(r: dict, field: str, text: str) -> str:
    """The row's id in `field`, or a hash of its text where the cell holds none (`empty`: a JSON NaN too,
    as Python writes a missing number, which was the id 'nan' of every such row, their texts refused as two
    under one id)."""
    given = r.get(field)
    if empty(given):
        return text_id(text)
    return str(given)


@dataclasses.dataclass
class SplitIds:
    """The ids one split has given so far, each with its text ({id: text}), so that rows read one at a time
    (a pairs file streamed, `irpairs.read_pairs`, which keeps these dicts as its queries and corpus) are
    checked as `ir_rows` checks a split held whole: an id naming two texts is one line."""

    part: str
    queries: dict[str, str] = dataclasses.field(default_factory=dict)
    documents: dict[str, str] = dataclasses.field(default_factory=dict)

    def read(self, r: dict, where: str) -> tuple[str, str, str, str]:
        """(query id, query, document id, document) of row `r`, checked against the rows read before."""
        query, document = _text(r, "query", where), _text(r, "document", where)
        qid, did = _id(r, "query_id", query), _id(r, "doc_id", document)
        for kind, known, key, text in (
            ("query", self.queries, qid, query),
            ("document", self.documents, did, document),
        ):
            first = known.setdefault(key, text)
            if first != text:
                raise UserError(
                    f"{where}: the {self.part} split gives {kind} id {key!r} to two different {kind} texts "
                    f"({first[:30]!r}, {text[:30]!r}); give each {kind} its own id"
                )
        return qid, query, did, document


def ir_rows(
    split_rows: list[dict], part: str, at: RowWhere, order: Sequence[int]
) -> list[tuple[str, str, str, str]]:
    """(query id, query, document id, document) of each row, in the split's order; an id naming two texts
    is one line. `at(i)`: row i's place, which a refusal of that row starts with; `order`: the rows' indices
    in file order, in which they are checked (the first text of an id is the file's first)."""
    slots: list = [None] * len(split_rows)
    ids = SplitIds(part)
    for i in order:
        slots[i] = ids.read(split_rows[i], at(i))
    return slots


def ir_negatives(split_rows: list[dict], at: RowWhere, order: Sequence[int]) -> list[str] | None:
    """Each train row's hard negative, in the split's order (checked in file order), or None where the
    split has no `negative` column (in-batch negatives only)."""
    if not split_rows or NEGATIVE not in split_rows[0]:
        return None
    slots: list = [None] * len(split_rows)
    for i in order:
        slots[i] = row_negative(split_rows[i], at(i))
    return slots


def ir_pairs(split_rows: list[dict], at: RowWhere, order: Sequence[int]) -> list[dict]:
    """Training pairs {query, document, doc_id} (the id is kept in the data and its hash; the loss tells
    copies of a positive by their input as truncated, `heads.info_nce`), and each
    row's `negative` where the split has that column (the key only then: other tasks' data hash stays)."""
    pairs = [
        {"query": q, "document": d, "doc_id": did} for _, q, did, d in ir_rows(split_rows, "train", at, order)
    ]
    for pair, negative in zip(pairs, ir_negatives(split_rows, at, order) or ()):
        pair[NEGATIVE] = negative
    return pairs


def ir_eval_split(split_rows: list[dict], part: str, at: RowWhere, order: Sequence[int]) -> IRSplit:
    """An evaluation split: its queries, its documents as the corpus, each row a relevant pair."""
    return ir_split(ir_rows(split_rows, part, at, order))


def require_answers(options: QAOptions, scored: dict[str, list[dict]], where: str) -> None:
    """SQuAD v1.1 scores a prediction against the question's answers: a validation or test question
    without one (SQuAD v2.0 data read as v1) stopped the run after fine-tuning (the official script's
    maximum over no answer, a ValueError). The tagger head and v2 score such questions."""
    if options.head != "span" or options.v2:
        return
    for name, split in scored.items():
        unanswerable = next((e["id"] for e in split if not e["answers"]), None)
        if unanswerable is not None:
            raise UserError(
                f"{where}: the {name} split has a question without an answer (id {unanswerable!r}), which "
                "SQuAD v1.1 cannot score; set `options: {v2: true}` to score no-answer (SQuAD v2.0), or "
                "remove such questions"
            )
