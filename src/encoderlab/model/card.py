"""The model card (`README.md`) that `encoderlab export` writes into the exported folder.

It follows the Hugging Face conventions: YAML front matter rendered by `huggingface_hub`'s
`ModelCardData` (library, pipeline tag, tags, and a `model-index` with the evaluation results when
there are some, which the hub shows as a results widget), then Markdown sections a reader needs to
judge the model: how it was trained (the run's phases: objective, length, schedule, freezing; the
optimizer, the batch, the tokens seen), on what data (the prepared folder's sources with their file
hashes and decontamination), with which tokenizer, and how it scored.

Everything is read from what the run left on disk (`config.yaml`, `metrics.jsonl`, a checkpoint's
`state.json`, the prepared data's `meta.json`), never reconstructed, so the card cannot claim a
setting the run did not use. A folder that is not part of a run (a converted or transplanted model)
gets a card that says its training history is unknown (a transplant's also names its `transplant.json`,
which records which layers came from which model: the export does not copy it). An evaluation summary is included only when
its model fingerprint is the exported model's; a summary of another model is refused, because a card
with someone else's scores is worse than none.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from encoderlab import jsonlines
from encoderlab.errors import UserError, first_line
from encoderlab.jsonlines import read_records
from encoderlab.model.runlayout import recorded_start
from encoderlab.words import count_of, estimate_text, lr_grid, lr_text
from encoderlab.yamltext import read_yaml

_TASK_TYPES = {
    "sc": "text-classification",
    "tc": "token-classification",
    "qa": "question-answering",
    "ir": "sentence-similarity",
}
"""Hub task types of the evaluation families (model-index `task.type`)."""


@dataclass
class RunRecord:
    """What a run folder says about how one of its models was trained."""

    folder: Path
    config: dict
    step: int | None = None
    tokens: int | None = None
    data_meta: dict | None = None
    notes: list[str] = field(default_factory=list)
    start_commit: str | None = None
    """The hub commit of its start model, when it started from a hub id (env.json's `start_model`)."""


def find_run(source: Path) -> RunRecord | None:
    """The run behind a model folder: the run itself, its `final/`, a checkpoint or its `model/`."""
    source = Path(source).resolve()
    candidates = [(source, None), (source.parent, None)]
    if source.parent.name == "checkpoints":
        candidates = [(source.parent.parent, source)]
    elif source.name == "model" and source.parent.parent.name == "checkpoints":
        candidates = [(source.parent.parent.parent, source.parent)]
    for run, checkpoint in candidates:
        if (run / "config.yaml").is_file():
            return _read_run(run, checkpoint)
    return None


def _read_run(run: Path, checkpoint: Path | None) -> RunRecord | None:
    try:
        config = read_yaml((run / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    if not isinstance(config, dict) or "phases" not in config:
        return None
    start = recorded_start(run)
    record = RunRecord(folder=run, config=config, start_commit=start[1] if start else None)
    if checkpoint is not None:
        try:
            progress = jsonlines.loads((checkpoint / "state.json").read_text())["progress"]
            record.step, record.tokens = progress["step"], progress["tokens"]
        except (OSError, ValueError, KeyError, TypeError):
            record.notes.append("the checkpoint's state.json is unreadable, so its step is unknown")
    else:
        record.step, record.tokens = _last_metrics(run / "metrics.jsonl")
    data = config.get("data") or {}
    data = data.get("path") if isinstance(data, dict) else None  # else the card says the file is damaged
    if isinstance(data, str) and data != "synthetic":
        try:  # a relative path is relative to where the run was started, as the trainer read it
            record.data_meta = jsonlines.loads((Path(data) / "meta.json").read_text())
        except (OSError, ValueError):
            record.notes.append(
                f"the prepared data {data} is not readable here, so its sources are not listed"
            )
    return record


def _last_metrics(path: Path) -> tuple[int | None, int | None]:
    step = tokens = None
    try:
        records = read_records(path)
    except OSError:
        return None, None
    for rec in records:
        if "step" in rec and "tokens" in rec:
            step, tokens = rec["step"], rec["tokens"]
    return step, tokens


def read_eval_summary(folder: Path, fingerprint: str) -> dict:
    """`summary.json` of an `encoderlab eval --out` folder (a `ModelSummary` as plain data), refused
    unless it scored this model. Read as data: the card shows its numbers and nothing else."""
    path = Path(folder) / "summary.json" if Path(folder).is_dir() else Path(folder)
    try:
        summary = jsonlines.loads(path.read_text(encoding="utf-8"))
        tasks = summary["tasks"]
        lr_grid(summary["lrs"], summary["seeds"])  # read as the card prints it
        for t in tasks.values():
            t["metric"], t["family"], t["best_lr"], t["test"]["mean"], t["test"]["n"]  # noqa: B018
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise UserError(
            f"--eval {folder}: no readable summary.json of `encoderlab eval`; pass the folder given to eval --out"
        ) from None
    if summary.get("model") != fingerprint:
        raise UserError(_another_model(Path(folder), summary.get("model"), fingerprint))
    return summary


def _another_model(folder: Path, theirs, fingerprint: str) -> str:
    """Why an evaluation's summary is refused: it is another model's. An `--out` that two models were
    evaluated into holds the summary of the last one only, though its results hold this one's runs
    too: that case was told "scored another model", which it had not only."""
    try:
        runs = read_records(folder / "results.jsonl") if folder.is_dir() else []
    except (OSError, ValueError):
        runs = []
    if any(isinstance(r, dict) and r.get("model") == fingerprint for r in runs):
        return (
            f"--eval {folder}: its summary.json is another model's (fingerprint {theirs}, evaluated into it "
            f"last), though its results.jsonl holds this model's runs too; run `encoderlab eval` of this model "
            f"with --out {folder} again (its runs are cached: it only writes the summary), then export"
        )
    return (
        f"--eval {folder} scored another model (fingerprint {theirs}, this one is {fingerprint}); "
        "pass the evaluation of the model being exported"
    )


def render_card(
    name: str, kind: str, tokenizer, run: RunRecord | None, summary: dict | None, source: str
) -> str:
    """The README.md text: YAML front matter, then training, data, tokenizer and evaluation."""
    from huggingface_hub import ModelCardData

    from encoderlab import __version__

    try:  # what the run's config.yaml says; one edited into something no run writes says nothing
        objectives = sorted({p["objective"]["type"] for p in _trained_phases(run)}) if run else []
        training = _training(run, source)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        objectives, training = [], _unreadable_run(run, exc)
    data = ModelCardData(
        library_name="transformers",
        pipeline_tag="fill-mask",
        tags=["encoderlab", *objectives],
        model_name=name,
        eval_results=_eval_results(summary) or None,
    )
    body = [
        f"# {name}",
        "",
        f"A text encoder trained with encoderlab {__version__} and exported as `{kind}`: load it with "
        f'`transformers.AutoModelForMaskedLM.from_pretrained("{name}")`.',
        "",
        *training,
        *_tokenizer(tokenizer),
        *_evaluation(summary),
        f"_Card written by `encoderlab export` on {datetime.now(UTC):%Y-%m-%d} from `{source}`._",
    ]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body) + "\n"


def _training(run: RunRecord | None, source: str) -> list[str]:
    if run is None:
        return [
            "## Training",
            "",
            f"`{source}` is not part of an encoderlab run (no `config.yaml` next to it), so its training "
            "history is not known to this card.",
            *_transplant(Path(source)),
            "",
        ]
    c = run.config
    model, layout, optim = c.get("model") or {}, c.get("layout") or {}, c.get("optim") or {}
    at = f" at commit `{run.start_commit}`" if run.start_commit else ""
    start = (  # a continued run's `size` is a default it never read: the start model's shape is the model's
        f"continued from `{model['init']}`{at} (load: {model.get('load')})"
        if model.get("init")
        else f"size `{model.get('size')}`, trained from scratch"
    )
    rows = layout.get("micro_batch_size", 0) * layout.get("grad_accum", 1) * layout.get("world_size", 1)
    lines = [
        "## Training",
        "",
        f"- Model: {start}.",
        f"- Batch: {rows} rows x {layout.get('seq_len')} tokens per step; precision {c.get('precision')}; "
        f"seed {c.get('seed')}.",
        f"- Optimizer: {optim.get('kind', 'adamw')}, peak LR {optim.get('lr')}, betas {optim.get('betas')}, weight decay "
        f"{optim.get('weight_decay')}, clip {optim.get('clip')}.",
        f"- Trained for {_count(run.step)} steps, {_count(run.tokens)} tokens seen.",
        *(f"- Note: {n}." for n in run.notes),
        "",
        "| phase | objective | length | schedule | freeze | optimizer reset |",
        "|---|---|---|---|---|---|",
    ]
    trained = _trained_phases(run)
    if len(trained) < len(c["phases"]):
        lines.insert(
            -3,
            f"- A checkpoint at step {run.step:,}: the phases marked *not reached* are the run's plan, not this model's training.",
        )
    for i, p in enumerate(c["phases"]):
        obj = ", ".join(f"{k}={v}" for k, v in p["objective"].items() if k != "type")
        length = f"{p['steps']:,} steps" if p.get("steps") else f"{p.get('tokens', 0):,} tokens"
        length += "" if i < len(trained) else " (*not reached*)"
        s = p.get("schedule") or {}
        sched = f"{s.get('kind')} (warmup {s.get('warmup')}, decay {s.get('decay')} {s.get('decay_shape')})"
        lines.append(
            f"| {p.get('name') or i} | {p['objective']['type']}{f' ({obj})' if obj else ''} | {length} | "
            f"{sched} | {p.get('freeze') or '-'} | {'yes' if p.get('reset_optimizer') else 'no'} |"
        )
    return [*lines, "", *_data(c, run.data_meta)]


def _transplant(folder: Path) -> list[str]:
    """A transplant's provenance (`analyze transplant`): its `transplant.json` records which layers came from
    which model; the card named nothing of it, and the export does not carry the file."""
    path = folder / "transplant.json"
    if not path.is_file():
        return []
    try:
        record = jsonlines.loads(path.read_text())
        parts = f": {record['description']} from `{record['sources']['a']}`, the rest from `{record['sources']['b']}`"
    except (OSError, ValueError, TypeError, KeyError):
        # an edited record: the file is still the place to look
        parts = ""
    return [
        "",
        f"It is a transplant (`encoderlab analyze transplant`): `{path}` records which layers came from which "
        f"model{parts}.",
    ]


def _trained_phases(run: RunRecord) -> list[dict]:
    """The phases of the run that trained the exported model: those that start before its step (all of
    them when the step is unknown). A checkpoint's card listed the run's whole plan, and tagged the
    objectives of phases it never reached (`mlm` on a model that had trained CLM only)."""
    phases, layout = run.config["phases"], run.config.get("layout") or {}
    if run.step is None:
        return phases
    per_step = layout.get("seq_len", 1) * layout.get("micro_batch_size", 1) * layout.get("grad_accum", 1)
    per_step *= layout.get("world_size", 1)
    start, trained = 0, []
    for p in phases:  # a length in tokens rounds up to whole steps, as `Phase.n_steps` does
        if start >= run.step:
            break
        trained.append(p)
        start += p.get("steps") or math.ceil(p.get("tokens", 0) / per_step)
    return trained


def _unreadable_run(run: RunRecord, exc: Exception) -> list[str]:
    return [
        "## Training",
        "",
        f"The model comes from the run `{run.folder}`, but its `config.yaml` does not read as a run's config "
        f"({type(exc).__name__}: {first_line(exc)}; edited by hand?), so its training history is not listed here.",
        "",
    ]


def _data(config: dict, meta: dict | None) -> list[str]:
    path = (config.get("data") or {}).get("path")
    lines = ["## Data", ""]
    if path in (None, "", "synthetic"):
        return [*lines, "Synthetic random tokens (a smoke run): this model has learned no language.", ""]
    lines.append(f"Prepared data `{path}`.")
    if meta is None:
        return [*lines, ""]
    splits = meta.get("splits", {})
    lines.append(
        ", ".join(
            f"{name}: {s.get('docs', 0):,} documents, {s.get('tokens', 0):,} tokens"
            for name, s in splits.items()
        )
        + "."
    )
    lines += ["", "| source | documents | files (sha256) |", "|---|---|---|"]
    for src in meta.get("sources", []):
        files = ", ".join(
            f"`{Path(f['path']).name}` ({f.get('sha256', '?')[:12]})" for f in src.get("files", [])
        )
        lines.append(f"| {src.get('location')} | {src.get('docs', 0):,} | {files or '-'} |")
    against = (meta.get("decontamination") or {}).get("against") or []
    lines += ["", f"Decontaminated against: {', '.join(against) if against else 'nothing'}.", ""]
    return lines


def _tokenizer(tokenizer) -> list[str]:
    if tokenizer is None:
        return ["## Tokenizer", "", "None was saved with the model.", ""]
    from encoderlab.data.tokenizer import tokenizer_hash

    backend = json.loads(tokenizer.backend_tokenizer.to_str()).get("model", {}).get("type", "?")
    specials = ", ".join(f"{k} `{v}`" for k, v in tokenizer.special_tokens_map.items() if isinstance(v, str))
    return [
        "## Tokenizer",
        "",
        f"{backend}, {len(tokenizer):,} ids; special tokens: {specials or 'none'}; "
        f"sha256 `{tokenizer_hash(tokenizer)[:16]}`.",
        "",
    ]


def _evaluation(summary: dict | None) -> list[str]:
    if summary is None:
        return [
            "## Evaluation",
            "",
            "Not evaluated with this card (`encoderlab eval MODEL --out E`, then `encoderlab export ... --eval E`).",
            "",
        ]
    lines = [
        "## Evaluation",
        "",
        f"Fine-tuned per task over {lr_grid(summary['lrs'], summary['seeds'])}; the test score is "
        "the mean over seeds at the LR with the best validation mean, with its 95% t-interval.",
        "",
        "| task | family | metric | best LR | test |",
        "|---|---|---|---|---|",
    ]
    for task, t in summary["tasks"].items():
        test, flag = t["test"], t.get("degenerate")
        bad = f" (degenerate in {count_of(flag['runs'], flag['of'], 'seed')})" if flag else ""
        lines.append(
            f"| {task} | {t['family']} | {t['metric']} | {lr_text(t['best_lr'])} | {estimate_text(test['mean'], test.get('half_width'))} (n={test['n']}){bad} |"
        )
    return [*lines, ""]


def _eval_results(summary: dict | None) -> list:
    if summary is None:
        return []
    from huggingface_hub import EvalResult

    return [
        EvalResult(
            task_type=_TASK_TYPES.get(t["family"], "fill-mask"),
            dataset_type=task,
            dataset_name=task,
            dataset_split="test",
            metric_type=t["metric"],
            metric_value=round(t["test"]["mean"], 4),
        )
        for task, t in summary["tasks"].items()
    ]


def _count(n: int | None) -> str:
    return "an unknown number of" if n is None else f"{n:,}"
