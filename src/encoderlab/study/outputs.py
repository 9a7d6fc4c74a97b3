"""What a study's finished prepare and pretraining nodes left that its claims' caveats and its report read
beside the results (`data.load_study` calls `read_node_outputs`): each run's held-out losses at its last step
(validation.json) and at every step it validated (metrics.jsonl), each dataset's unigram entropy (the plateau's
yardstick) and the hub commits its tokenizer and hub corpora were read at. Moved out of `study/data.py` (505 lines) unchanged.

Design: read once when the folder is loaded, into `StudyData`'s fields, so a report never reads a file twice;
a folder gone or from an earlier version leaves a field empty and the report says less; a damaged
validation.json is one line naming it (`_held_out_losses`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from encoderlab import jsonlines
from encoderlab.errors import UserError

if TYPE_CHECKING:
    from encoderlab.study.data import StudyData


def read_node_outputs(data: StudyData, study_dir: Path) -> None:
    """Fill `held_out` and `held_out_steps` from each finished run's validation.json and metrics.jsonl, and
    `unigram`, `tokenizer_commits` and `corpus_commits` from each prepared dataset."""
    from encoderlab.study.runner import node_dir

    for n in data.nodes:
        result = data.result_of(n.name)
        name = n.name.split("/", 1)[-1]  # the dataset's or model's: `prepare/NAME`, `pretrain/MODEL`
        if n.kind == "prepare" and result.get("data"):
            _read_unigram(data, name, result, node_dir(study_dir, n))
            _read_hub_commits(data, name, result, node_dir(study_dir, n))
        elif n.kind == "pretrain" and result.get("metrics"):
            log = node_dir(study_dir, n) / result["metrics"]
            if (path := log.with_name("validation.json")).is_file():
                data.held_out[name] = _held_out_losses(path)
            if log.is_file():
                data.held_out_steps[name] = {
                    r["step"]: r
                    for r in jsonlines.read_records(log)
                    if _VAL_CLM in r and type(r.get("step")) is int
                }


_VAL_CLM = "val/clm"
"""A held-out loss every validation logs (`train/validation.py`): marks a metrics record as one."""


def _read_unigram(data: StudyData, name: str, result: dict, folder: Path) -> None:
    """Fill dataset `name`'s `unigram` from its finished prepare node's `result` (in `folder`): the
    entropy it recorded (since 2026-12-05), else counted in its data; a `--prepared` folder gone since,
    of a node that recorded none, goes to `unigram_gone` (the caveat says the plateau is unchecked)."""
    from encoderlab.data.packed import unigram_entropy

    recorded = result.get("unigram")
    if jsonlines.finite_number(recorded):
        data.unigram[name] = float(recorded)
        return
    prepared = data.spec.dataset(name).prepared  # where it is now (study/prepared.py)
    if prepared and not Path(prepared).exists():
        data.unigram_gone[name] = prepared
        return
    data.unigram[name] = unigram_entropy(Path(prepared) if prepared else folder / result["data"])


def _read_hub_commits(data: StudyData, name: str, result: dict, folder: Path) -> None:
    """Fill dataset `name`'s `tokenizer_commits`, `tokenizer_ids` and `corpus_commits` from its prepared folder's meta.json
    (the `--prepared` folder, else the node's own). A folder gone, damaged, or from before the commits were
    recorded leaves them out: the report then names the tokenizer or corpus without a commit, as before."""
    from encoderlab.data.freshness import held_commit
    from encoderlab.data.packed import read_meta

    prepared = data.spec.dataset(name).prepared
    try:
        meta = read_meta(Path(prepared) if prepared else folder / result["data"])
    except (UserError, OSError):
        return
    if (commit := tokenizer_commit(meta)) is not None:
        data.tokenizer_commits[name] = commit
    spec = meta.get("spec") if isinstance(meta.get("spec"), dict) else {}
    if type(spec.get("vocab_size")) is int:
        data.tokenizer_ids[name] = spec["vocab_size"]
    recipe = meta.get("recipe") if isinstance(meta.get("recipe"), dict) else {}
    sources, read = recipe.get("sources"), meta.get("sources")
    if not (isinstance(sources, list) and isinstance(read, list) and len(sources) == len(read)):
        return  # paired by position, as `prepared.check_corpus` pairs them
    data.corpus_commits[name] = tuple(
        (ident["hub_id"], source.get("hf_revision"), held_commit(record))
        for source, record in zip(sources, read, strict=True)
        if isinstance(source, dict)
        and isinstance(record, dict)
        and isinstance(ident := record.get("identity"), dict)
        and ident.get("kind") == "hf"
        and isinstance(ident.get("hub_id"), str)
    )


def tokenizer_commit(meta: dict) -> str | None:
    """The hub commit a prepared folder's tokenizer was read at (its meta.json `tokenizer.commit`, written
    since 2026-12-06 for a tokenizer named by a hub id); None when it records none. The report's and
    `study plan`'s hub inputs read it here."""
    recorded = meta.get("tokenizer")
    commit = recorded.get("commit") if isinstance(recorded, dict) else None
    return commit if isinstance(commit, str) else None


def _held_out_losses(path: Path) -> dict[str, Any]:
    """A run's validation.json (its `val/*` losses at the last step). Cut short or edited by hand was a
    JSONDecodeError or TypeError traceback in the report; it is one line naming the file."""
    from encoderlab.errors import first_line

    try:
        raw = jsonlines.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problem = f"{type(exc).__name__}: {first_line(exc)}"
    else:
        numbers = isinstance(raw, dict) and all(  # null: not finite (a diverged model's, `caveats.py`)
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
            for k, v in raw.items()
            if k.startswith("val/")
        )
        if numbers:
            return raw
        problem = "not a mapping of val/* names to losses"
    raise UserError(
        f"{path} is damaged ({problem}); restore it from a copy, or delete it (the report then shows no held-out "
        "loss for that run)"
    )
