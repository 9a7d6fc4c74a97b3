"""Ladders from study folders, read from the files a study leaves behind and nothing else.

The study package is evolving, so this reader depends on as little of it as possible, all in this
file: `graph.json` (node name -> key, to skip markers of superseded nodes), each node's `node.json`
marker (kind, config, deps, result), and a pretraining node's run folder (`run/config.yaml`, the
resolved RunConfig; `run/metrics.jsonl`, the per-step records). Of `encoderlab.study` only the
marker's reader is imported (`study/marker.py`, which imports nothing of the study), with its check of an
eval node's record (`eval_damage`: a score NaN, null or missing, a test split dropped), which the report's
reader runs too, so both refuse a hand-damaged node.json in one line. One observation per finished
pretraining node trained from scratch:

* schedule: the run config's phases (objective, steps, mask ratio) as shares of the run; a CLM-then-MLM
  run's CLM share as the study asked for it (study.json, the study's record: its `clm_fraction`) where its
  steps are that share rounded to whole steps, so a short run's switch (CLM 50% of 31 steps: 16) is not
  read as another share (52%); else its whole steps, keyed beside the study's other such runs (`stepshares`);
* N: the non-embedding parameters of the run's named model size; D: tokens trained;
* C: the sum of the FLOPs training logged per step (None when it logged none: 6ND is used);
* seed: the run config's training seed;
* the metric: a key of metrics.jsonl, its last logged value (`val/mlm15`: the held-out MLM loss at a
  fixed 15% mask, the yardstick comparable across objectives); or `finetune:TASK`, the mean test
  score over fine-tuning seeds at the LR chosen on validation (`encoderlab.eval.summary.select_lr`).
* what a `val/*` loss was scored on (`Yardstick`: a digest of the prepared data's tokenizer and val split, seq_len,
  validation.rows, data.attend), so a ladder of runs scored on other held-out rows is refused.
* how a `finetune:TASK` score was fine-tuned (`FinetuneSetup`: the task's signature, the LR grid and seeds of
  its finished eval nodes, `max_steps`, task files), so a ladder of scores fine-tuned otherwise is refused.
Runs continued from another model have no from-scratch (N, D) and are left out, with a note; so are
the study's pretraining runs not finished yet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from encoderlab import jsonlines
from encoderlab.advise.ladder import (
    KNOWN_METRICS,
    FinetuneSetup,
    MeasuredWith,
    Metric,
    Observation,
    Schedule,
    Stage,
    Yardstick,
)
from encoderlab.advise.stepshares import StepSplit, settle
from encoderlab.errors import UserError
from encoderlab.jsonlines import read_records
from encoderlab.study.marker import NodeMarker, damaged_node, eval_damage

FINETUNE = "finetune:"
"""Prefix of a fine-tuning metric read from a study's eval nodes (`finetune:TASK`)."""

_NOT_COMPARABLE = {"loss"}
"""metrics.jsonl keys whose values differ in kind between objectives (CLM and MLM training losses)."""


@dataclass(frozen=True)
class _Node:
    """The part of a node marker this reader uses."""

    name: str
    kind: str
    config: dict
    deps: tuple[str, ...]
    result: dict
    folder: Path


def is_study(path: Path) -> bool:
    """A folder written by `encoderlab study run`."""
    return Path(path, "graph.json").is_file()


def _graph(study: Path) -> list[dict]:
    """graph.json: every node of the study's current graph (name, kind, key, config, deps)."""
    try:
        graph = jsonlines.loads((study / "graph.json").read_text())
        if not all(isinstance(g, dict) and "name" in g and "key" in g for g in graph):
            raise TypeError
        return graph
    except (OSError, ValueError, TypeError):
        raise UserError(
            f"{study}/graph.json is unreadable; rerun `encoderlab study run` on that folder"
        ) from None


def _nodes(study: Path, graph: list[dict]) -> dict[str, _Node]:
    """Finished nodes of the study's current graph, by name."""
    keys = {g["name"]: g["key"] for g in graph}
    nodes = {}
    for path in sorted(study.glob("nodes/*/*/node.json")):
        m = NodeMarker.load(path)  # None: being written or damaged, so the node counts as unfinished
        if m is not None and keys.get(m.name) == m.key:
            nodes[m.name] = _Node(m.name, m.kind, m.config, m.deps, m.result, path.parent)
    return nodes


def _check_task(study: Path, graph: list[dict], metric: str) -> None:
    """`finetune:TASK` names a task the study evaluates (finished or not): else "finish the study" misled."""
    if not metric.startswith(FINETUNE):
        return
    configs = [g.get("config") for g in graph if g.get("kind") == "eval"]
    tasks = sorted({c.get("task") for c in configs if isinstance(c, dict) and c.get("task")})
    task = metric[len(FINETUNE) :]
    if not tasks:  # said "its tasks: none (...); use --metric finetune:TASK with one of them": there are none
        raise UserError(
            f"--metric {metric}: the study {study} fine-tunes no run (it has no evaluation nodes); use a metric its "
            f"training logs, such as --metric val/mlm15, or advise a study whose runs are fine-tuned on {task}"
        )
    if task not in tasks:
        raise UserError(
            f"--metric {metric}: the study {study} evaluates no task '{task}'; its tasks: {', '.join(tasks)}; "
            "use --metric finetune:TASK with one of them"
        )


def _asked_shares(study: Path) -> dict[str, float]:
    """{run name: the CLM share its recipe was asked for}, from the study's record (study.json: the spec as
    `study run` last ran it): a run's `clm_fraction` param, else its recipe's default, for the recipes that
    take one. Read as plain JSON, so this reader depends on no more of the study package; a folder without a
    readable record gives none, and every run's share is read off its steps (`_schedule`)."""
    from encoderlab.outdir import STUDY_RECORD
    from encoderlab.train.recipes import RECIPES, recipe_defaults

    try:
        runs = jsonlines.loads((study / STUDY_RECORD).read_text(encoding="utf-8")).get("runs")
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return {}
    asked = {}
    for run in runs if isinstance(runs, list) else ():
        if not (isinstance(run, dict) and isinstance(run.get("recipe"), str) and run["recipe"] in RECIPES):
            continue
        params = run.get("params") if isinstance(run.get("params"), dict) else {}
        share = params.get("clm_fraction", recipe_defaults(run["recipe"]).get("clm_fraction"))
        if jsonlines.finite_number(share) and 0 <= share <= 1:
            asked[str(run.get("name"))] = float(share)
    return asked


def _run_name(node: str, asked: dict[str, float]) -> str:
    """The study run a pretraining node trains: `pretrain/RUN`, or `pretrain/RUN/sN` for one of its seeds
    (`study.graph.run_id`)."""
    rid = node.removeprefix("pretrain/")
    base, _, seed = rid.rpartition("/s")
    return base if rid not in asked and base and seed.isdigit() else rid


def _schedule(cfg, asked: float | None = None) -> Schedule | StepSplit:
    """The run config's phases as stages, consecutive equal stages merged. A CLM-then-MLM run whose CLM steps
    are the recipe's whole-step rounding of the share it was asked for (`asked`, `pfs_clm_mlm`'s
    `round(steps * clm_fraction)`) is that share: read off its steps, CLM 50% of 31 steps (16) was 52%, another
    schedule beside the same split's longer runs, and a finished study was refused as sharing no rung. Any
    other run of two stages or more (nothing recorded, or phases the share does not explain: overridden since)
    is its whole steps (`StepSplit`), which `stepshares.settle` keys beside the study's other runs and marks
    approximate (`Stage.approx`, `~50%`): never a recipe's exact share of the same digits."""
    steps = [
        (p.objective.type_tag, getattr(p.objective, "mask_ratio", None), p.n_steps(cfg.layout))
        for p in cfg.phases
    ]
    total = sum(n for _, _, n in steps)
    merged: list[list] = []
    for tag, ratio, n in steps:
        if tag not in ("clm", "mlm"):
            raise UserError(f"a run trains objective '{tag}'; advise compares CLM and MLM schedules only")
        ratio = None if tag == "clm" else round(ratio, 4)
        if merged and merged[-1][:2] == [tag, ratio]:
            merged[-1][2] += n
        else:
            merged.append([tag, ratio, n])
    if (
        asked is not None
        and [m[0] for m in merged] == ["clm", "mlm"]
        and merged[0][2] == round(total * asked)
    ):
        return Schedule.biphasic(asked, merged[1][1])
    if len(merged) == 1:  # all of the steps: exact
        return Schedule((Stage(merged[0][0], 1.0, merged[0][1]),))
    return StepSplit(tuple((tag, ratio) for tag, ratio, _ in merged), tuple(n for _, _, n in merged))


def _records(path: Path) -> list[dict]:
    try:
        return read_records(path)  # without the torn last line of a killed run
    except OSError:
        raise UserError(f"{path} is missing; the run did not finish writing its metrics") from None


def _finetune_score(nodes: dict[str, _Node], pretrain: str, task: str) -> tuple[float, FinetuneSetup] | None:
    """Mean test score over fine-tuning seeds at the LR chosen on validation (final model), by
    evaluation's own selection rule, and the setup it was fine-tuned with (`FinetuneSetup`: the runs'
    LRs and seeds, the task's signature, the nodes' `max_steps` and task files); an eval marker's result
    is the run's `EvalRecord`."""
    from encoderlab.config import from_dict
    from encoderlab.eval.summary import EvalRecord, select_lr

    evals = [
        n
        for n in nodes.values()
        if n.kind == "eval"
        and n.deps[:1] == (pretrain,)
        and n.config.get("step") is None
        and n.config.get("task") == task
    ]
    if not evals:
        return None
    records = [from_dict(EvalRecord, n.result, f"{n.folder}/node.json") for n in evals]
    if (bad := eval_damage(records)) is not None:  # a score or split edited away: select_lr's traceback
        raise damaged_node(evals[bad[0]].folder, evals[bad[0]].name, bad[1])
    setup = FinetuneSetup(
        task=",".join(sorted({r.task_signature for r in records})),
        lrs=tuple(sorted({float(r.lr) for r in records})),
        seeds=tuple(sorted({int(r.seed) for r in records})),
        max_steps=evals[0].config.get("max_steps"),
        task_files=tuple(evals[0].config.get("task_files") or ()),
    )
    return select_lr(records).test.mean, setup


def metric_of(name: str) -> Metric:
    """The direction of a metric a study can be read for."""
    if name.startswith(FINETUNE):
        return Metric(name=name, better="higher", ceiling=100.0)
    if name in _NOT_COMPARABLE:
        raise UserError(
            f"--metric {name}: training losses of CLM and MLM are different quantities; use val/mlm15, the held-out "
            "MLM loss at a fixed 15% mask, or finetune:TASK"
        )
    return KNOWN_METRICS.get(name) or Metric(name=name, better="lower")


def _diverged(records: list[dict], metric: str) -> str | None:
    """Why a run leaves the ladder when its last logged `metric` is not finite (a diverged model's held-out
    loss: null in metrics.jsonl, NaN in a file written by hand), else None. Such nulls were skipped, and the
    value of an earlier evaluation advised on as the run's."""
    last = next((r for r in reversed(records) if metric in r), None)
    value = None if last is None else last[metric]
    if last is None or not (value is None or (isinstance(value, float) and not math.isfinite(value))):
        return None
    return f"its last {metric} (step {last.get('step', '?')}) is not finite, so it diverged: left out"


def _value(
    node: _Node, nodes: dict[str, _Node], records: list[dict], metric: str, cfg
) -> tuple[float, MeasuredWith | None]:
    """A run's value of `metric` and what it was measured with (`Observation.scored_on`)."""
    scored_on: MeasuredWith | None = None
    if metric.startswith(FINETUNE):
        value, scored_on = _finetune_score(nodes, node.name, metric[len(FINETUNE) :]) or (None, None)
    else:
        scored_on = _yardstick(cfg)
        logged = [r[metric] for r in records if r.get(metric) is not None]
        value = logged[-1] if logged else None
        if isinstance(value, bool) or not isinstance(value, (int, float, type(None))):
            # an edited last line was skipped, and the value before it advised on
            raise UserError(
                f"{node.folder}/run/metrics.jsonl: the last {metric} is {value!r}, not a number (edited by "
                "hand?); restore the file, or choose another --metric"
            )
    if value is None:
        raise UserError(
            f"{node.folder}: run {node.name} has no {metric} (not logged, or its evaluations have not finished); "
            "choose another --metric or finish the study"
        )
    return float(value), scored_on


def _yardstick(cfg) -> Yardstick | None:
    """The held-out rows a run's `val/*` losses were scored on; None where its prepared data cannot be read
    (moved since), so nothing is claimed about it."""
    data = cfg.data
    if data.path == "synthetic":
        name = where = (
            f"the synthetic stream of vocab {data.synthetic_vocab}, mean document length {data.synthetic_doc_len}"
        )
    else:
        from encoderlab.data.packed import read_meta

        try:
            name = _held_out_rows(read_meta(Path(data.path)))
        except (UserError, OSError):
            return None
        where = f"{data.path} (val split {name[:12]})"
    return Yardstick(name, cfg.layout.seq_len, cfg.validation.rows, data.attend, where)


def _held_out_rows(meta: dict) -> str:
    """A digest of what validation scores in a prepared folder: its tokenizer and its val split's files (their
    sha256 in meta.json, no token read). Not `data.packed.identity`, which holds the corpus's path: one corpus
    prepared by two studies from two copies of it gives the same rows and other identities. A folder whose
    meta.json records no hash of its files falls back to that identity."""
    import hashlib
    import json

    from encoderlab.data.packed import identity

    val = (meta.get("split_files") or {}).get("val")
    files = (
        [v.get("sha256") if isinstance(v, dict) else None for _, v in sorted(val.items())]
        if isinstance(val, dict)
        else []
    )
    tokenizer = (
        (meta.get("recipe") or {}).get("tokenizer_hash") if isinstance(meta.get("recipe"), dict) else None
    )
    if not files or None in files or not tokenizer:
        return identity(meta)
    return hashlib.sha256(json.dumps([tokenizer, files]).encode()).hexdigest()


def read_study(path: Path | str, metric: str) -> tuple[list[Observation], list[str]]:
    """The from-scratch pretraining runs of a study folder, and notes on what was left out."""
    from encoderlab.config import load_yaml
    from encoderlab.model.config import non_embedding_params
    from encoderlab.train.config import RunConfig

    study = Path(path)
    graph = _graph(study)
    _check_task(study, graph, metric)
    nodes = _nodes(study, graph)
    asked = _asked_shares(study)
    runs, notes, continued = [], [], []  # runs: (schedule as read, the rest of its Observation)
    for node in (n for n in nodes.values() if n.kind == "pretrain"):
        config, metrics = node.folder / "run" / "config.yaml", node.folder / "run" / "metrics.jsonl"
        if not config.is_file():  # it said "config file ... does not exist", with no fix
            raise UserError(
                f"{node.folder}: finished run {node.name} has no run/config.yaml, so its schedule, size and seed are "
                "unknown; restore its run folder as training wrote it"
            )
        cfg = load_yaml(RunConfig, config)
        if cfg.model.init:
            continued.append(f"{node.name} from {cfg.model.init}")
            notes.append(
                f"{node.name} continues {cfg.model.init}, so it is not on a from-scratch ladder: left out"
            )
            continue
        records = _records(metrics)
        if not metric.startswith(FINETUNE) and (why := _diverged(records, metric)) is not None:
            notes.append(f"{node.name}: {why}")
            continue
        _check_whole(records, metrics, cfg.steps)
        flops = _logged(records, "flops", metrics, none_ok=True)  # training logs null where it measured none
        value, scored_on = _value(node, nodes, records, metric, cfg)
        runs.append(
            (
                _schedule(cfg, asked.get(_run_name(node.name, asked))),
                dict(
                    params=non_embedding_params(cfg.model.size),
                    tokens=float(
                        max(_logged(records, "tokens", metrics), default=0)
                        or cfg.steps * cfg.layout.tokens_per_step
                    ),
                    seed=int(cfg.seed),
                    value=value,
                    flops=float(sum(flops)) if flops else None,
                    source=f"{study}:{node.name}",
                    scored_on=scored_on,
                ),
            )
        )
    if not runs:
        raise UserError(_no_run(study, continued))
    schedules = settle([read for read, _ in runs])  # runs read off their steps, keyed beside each other
    observed = [Observation(schedule=s, **rest) for s, (_, rest) in zip(schedules, runs)]
    return observed, notes + _unfinished(study, graph, nodes)


def _no_run(study: Path, continued: list[str]) -> str:
    """The refusal of a study with no run to advise from. A study whose finished runs all continue a model
    (paper 2's, which continue one checkpoint) was told to "run or finish the study first", which it had."""
    if not continued:
        return f"{study} holds no finished pretraining run from scratch; run or finish the study first"
    shown = ", ".join(continued[:3]) + (f" and {len(continued) - 3} more" if len(continued) > 3 else "")
    return (
        f"{study} holds no pretraining run from scratch: its finished runs continue a model ({shown}), so none "
        "is on a ladder of sizes and budgets; advise a ladder study of runs from scratch, or a ladder file "
        "(docs/advise.md)"
    )


def _check_whole(records: list[dict], metrics: Path, steps: int) -> None:
    """Refuse a finished run whose metrics.jsonl stops before the run's last step: cut short or damaged since
    training wrote it (a finished run's file holds one line per step, `train/metrics.py`). D, C and the metric
    are read off that file, so such a run was advised at the tokens and FLOPs of the cut, a rung no run trained
    at, with the last evaluation left in the file (an earlier one's) as its final value, and no word said. A
    diverged run is left out with its note before this check (`_diverged`), whatever its file holds."""
    last = max((r["step"] for r in records if jsonlines.finite_number(r.get("step"))), default=0)
    if last < steps:
        raise UserError(
            f"{metrics}: its last step is {last:g} of the run's {steps} (cut short or damaged since training "
            "wrote it), so the run's tokens, FLOPs and final metrics are unknown; restore the file as training wrote it"
        )


def _logged(records: list[dict], key: str, metrics: Path, *, none_ok: bool = False) -> list[float]:
    """The values of `key` a run logged, each a finite number >= 0, or one line naming the file. A value
    edited to text was a TypeError traceback from max(); NaN or a negative count on a later line was hidden
    by the max of the earlier ones (or, on the first line, made D NaN)."""
    values = []
    for r in records:
        if key not in r or (none_ok and r[key] is None):
            continue
        v = r[key]
        if not (jsonlines.finite_number(v) and v >= 0):
            raise UserError(
                f"{metrics}: step {r.get('step', '?')} logs {key} {v!r}, not a count of {key} (edited by hand?); "
                "restore the file as training wrote it"
            )
        values.append(float(v))
    return values


def _unfinished(study: Path, graph: list[dict], nodes: dict[str, _Node]) -> list[str]:
    """A note naming the study's pretraining runs not finished: they were left out without a word."""
    names = [g["name"] for g in graph if g.get("kind") == "pretrain" and g["name"] not in nodes]
    if not names:
        return []
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return [
        f"{len(names)} pretraining run{'s' * (len(names) > 1)} of {study} not finished ({shown}): left out; "
        "finish the study (`encoderlab study run`) for the whole ladder"
    ]
