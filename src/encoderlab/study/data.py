"""A study folder read back as typed data: the spec, the graph, and every finished node's result.

Everything downstream of a study's nodes (the results table, the claims, the figures) reads a
`StudyData`, never the folder, so a report can be regenerated at any time, also from a study that is
only partly finished. The records are evaluation's own (`eval.summary.EvalRecord`, exactly what the
eval node returned) placed at the study's model id and checkpoint (`StudyEval`), and a model's
numbers are evaluation's summaries of them (`summary`), so a study's number for a task is the number
`encoderlab eval` reports for the same runs.

Model ids are run names, with `/sN` for pretraining seed N when a study trains several
(`graph.run_id`); `split_id` takes them apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from encoderlab import jsonlines
from encoderlab.errors import UserError, closest, file_in_the_way, problem_of
from encoderlab.eval.summary import EvalRecord, ModelSummary, summarize_runs
from encoderlab.outdir import study_folder_above
from encoderlab.paths import typed
from encoderlab.study.graph import Node
from encoderlab.study.marker import NodeMarker, damaged_node, eval_damage
from encoderlab.study.nodeconfig import EvalNode, PretrainNode
from encoderlab.study.outputs import read_node_outputs
from encoderlab.study.runner import read_marker
from encoderlab.study.spec import CkaSpec, RunSpec, StudySpec
from encoderlab.study.startcommits import recorded_commits

_SEED = re.compile(r"^(?P<run>.+)/s(?P<seed>\d+)$")


def split_id(model: str) -> tuple[str, int | None]:
    """(run name, pretraining seed) of a model id; the seed is None in a single-seed study."""
    m = _SEED.match(model)
    return (m["run"], int(m["seed"])) if m else (model, None)


@dataclass(frozen=True)
class StudyEval:
    """One finished eval node: evaluation's record of the run, at the study's model and checkpoint."""

    model: str
    """Study model id (run name, `/sN` with several pretraining seeds)."""
    step: int | None
    """Pretraining checkpoint step (None: the final model)."""
    record: EvalRecord
    """What evaluation recorded."""
    task_files: tuple[str, ...] = ()
    """The task files its task comes from (`EvalNode.task_files`; empty for a suite's task): the report
    reads the hub datasets such a task names now (`hubinputs.current_repos`)."""


@dataclass(frozen=True, kw_only=True)
class CkaResult:
    """A CKA node's result: divergence per layer of a vs b, and of the seed-noise pair."""

    a: str
    """Run compared."""
    b: str
    """Reference run."""
    divergence: list[float | None]
    """1 - linear CKA per layer: entry l is block l's output (the embedding output is not one); None where
    CKA is undefined (a layer constant across the texts)."""
    noise_divergence: list[float | None] | None = None
    """The same for the seed-noise pair (None without one)."""
    ratio: list[float | None] | None = None
    """divergence / noise divergence per layer (None without a noise pair; an entry is None where the
    ratio is infinite or undefined, as `analyze cka` writes it)."""
    ratio_ci_low: list[float | None] | None = None
    """Per layer, the low end of the ratio's 95% interval over sampling seeds, widened for the texts the draws
    share (`analysis.cka_report.seed_interval`, the interval the claim's group means get); an entry is None
    where there is none (one distinct draw, a ratio not finite). None: no noise pair, or a node of before
    2026-12-06, which wrote no per-layer interval."""
    ratio_ci_high: list[float | None] | None = None
    """The high end of the same interval."""
    mean_divergence: float | None = None
    """Mean divergence over layers."""
    low_layers: dict[str, Any] | None = None
    """Paper 2's claim on this pair, `analysis.cka_report.low_layer_summary(...).to_dict()`: the low layers' ratio
    to seed noise with its interval over sampling seeds, `holds` (True/False, None without an interval)
    and its `sentence` (None without a seed-noise pair)."""
    n_texts: int | None = None
    """Texts compared (None: a node of before 2026-12-04)."""
    hidden_size: int | None = None
    """The wider model's hidden size (None or 0: unknown); n_texts at most this inflates CKA."""

    @property
    def few_texts(self) -> str:
        """The claim's caveat when CKA compared no more texts than the models have dimensions, which
        inflates CKA (`analysis.cka` warned of it in the node's log only); empty otherwise."""
        n, width = self.n_texts, self.hidden_size
        if not (n and width and n <= width):
            return ""
        return f"; on {n} texts, no more than the models' {width} hidden dimensions, which inflates CKA"


def cka_models(spec: StudySpec, c: CkaSpec, label: Callable[[str], str] = str) -> str:
    """The CKA claim's note of the models its CKA compared: one per run, its first pretraining seed's (the
    graph's CKA node, `spec.seeds_of(run)[0]`; the other seeds are not compared), or a start model as is; a
    seed twin's training seed offset (`RunSpec.seed`) is said, the one thing its pair differs in."""

    def one(name: str) -> str:  # a twin's offset said: "twin at seed 0" beside "baseline at seed 0" hid it
        run = spec.run(name)
        if run.recipe is None:
            return f"{label(name)} as is"
        offset = f" (training seed offset by {run.seed}, same data order)" if run.seed else ""
        return f"{label(name)} at seed {spec.seeds_of(run)[0]}{offset}"

    twin = [f"seed twin {one(c.noise[0])}"] if c.noise else []
    return f"; CKA compares each run at its first pretraining seed only: {', '.join([one(c.a), one(c.b), *twin])}"


@dataclass
class StudyData:
    """What a study folder holds."""

    spec: StudySpec
    nodes: list[Node]
    markers: dict[str, NodeMarker] = field(default_factory=dict)
    """Finished nodes' markers by node name."""
    held_out: dict[str, dict] = field(default_factory=dict)
    """Model id -> the held-out losses at its last step (the run's `validation.json`: `val/clm`,
    `val/mlm15`, ..., and its `step`), for finished pretraining runs that scored them. A diverged model's
    loss that is not finite is None (written as null) or NaN/inf (files written before 2026-12-04)."""
    held_out_steps: dict[str, dict[int, dict]] = field(default_factory=dict)
    """Model id -> step -> the held-out losses its run logged there (metrics.jsonl's records with `val/*`:
    every `validation.every` steps and at the last), read for the plateau caveat at a checkpoint."""
    unigram: dict[str, float] = field(default_factory=dict)
    """Dataset name -> the entropy of its training tokens' frequencies (`data.packed.unigram_entropy`):
    the held-out loss of a model that has learned token frequencies only."""
    unigram_gone: dict[str, str] = field(default_factory=dict)
    """Dataset name -> its `--prepared` folder, gone since, of which the study folder recorded no entropy
    (a prepare node from before 2026-12-05): the plateau of its runs is not checked."""
    folder: Path | None = None
    """The study folder read (None: built in memory), named when a finished node's record is damaged."""
    tokenizer_commits: dict[str, str] = field(default_factory=dict)
    """Dataset name -> the hub commit its tokenizer was read at, for a tokenizer named by a hub id (its
    prepared folder's `meta.json` `tokenizer.commit`, written since 2026-12-06)."""
    tokenizer_ids: dict[str, int] = field(default_factory=dict)
    """Dataset name -> the ids of the tokenizer its prepare used (meta.json `spec.vocab_size`): a tokenizer
    the study trained holds fewer than `vocab_size` asked when its corpus has no more merges."""
    start_commits: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Hub start model -> the commits its finished runs and evaluations as is recorded reading
    (`startcommits.recorded_commits`)."""
    corpus_commits: dict[str, tuple[tuple[str, str | None, str | None], ...]] = field(default_factory=dict)
    """Dataset name -> (hub id, the revision its corpus pins or None, the commit read or None) of each hub
    dataset its prepared folder's meta.json records reading (`outputs._read_hub_commits`)."""

    def hub_inputs_text(self) -> str:
        """Each hub input of the study, pinned or not, with the commit read (`hubinputs.hub_inputs_text`);
        "" when it has none."""
        from encoderlab.study.hubinputs import hub_inputs_text

        return hub_inputs_text(self)

    def tokenizer_text(self, dataset) -> str:
        """Dataset `dataset`'s tokenizer for the report, with the hub commit its prepare read, if any; one the
        study trains in the plan's words (`plantext.own_tokenizer_text`)."""
        from encoderlab.study.plantext import own_tokenizer_text

        if (own := own_tokenizer_text(self.spec, dataset, self.tokenizer_ids.get(dataset.name))) is not None:
            return own
        commit = self.tokenizer_commits.get(dataset.name)
        return f"{dataset.tokenizer} (commit {commit[:12]})" if commit else dataset.tokenizer

    def start_cell(self, run) -> str:
        """What run `run` starts from, for the report: scratch, a run, a path, or a hub id with the
        commit its runs or evaluations as is read (two when a study mixed them before that was refused)."""
        commits = self.start_commits.get(run.init or "")
        return (
            f"{run.init} (commit {', '.join(c[:12] for c in commits)})" if commits else run.init or "scratch"
        )

    @cached_property
    def eval_nodes(self) -> list[tuple[Node, EvalNode]]:
        """Every eval node of the graph with its typed config, in graph order, read once: the report asks
        per model and checkpoint (`planned_tasks`, `unfinished_evals`), and typing every eval node's config
        each time was a third of a small study's report."""
        return [(n, EvalNode.of(n)) for n in self.nodes if n.kind == "eval"]

    @cached_property
    def evals(self) -> list[StudyEval]:
        """Every finished eval node, in graph order."""
        out, done = [], []
        for n, node in self.eval_nodes:
            if n.name in self.markers:
                record = self._typed_result(EvalRecord, n)
                out.append(StudyEval(node.model, node.step, record, node.task_files))
                done.append(n)
        # a NaN score, or a split dropped: edited by hand (advise reads eval nodes through the same check)
        if (bad := eval_damage([e.record for e in out])) is not None:
            raise self.damaged(done[bad[0]], bad[1])
        return out

    def _typed_result(self, cls: type, node: Node) -> Any:
        """A finished node's result as `cls`; a record edited or damaged by hand (valid JSON, a value of
        another type) names its node.json and the rerun that redoes it (it was the bare field error)."""
        from encoderlab.config import from_dict

        try:
            return from_dict(cls, self.markers[node.name].result, where="result")
        except UserError as exc:
            raise self.damaged(node, problem_of(exc)) from None

    def damaged(self, node: Node, problem: str) -> UserError:
        """The error for a finished node whose node.json holds `problem`: the file, and the rerun that
        redoes the node."""
        from encoderlab.study.runner import node_dir

        if self.folder is None:
            return UserError(f"node {node.name}: {problem}")
        return damaged_node(node_dir(self.folder, node), node.name, problem)

    def result_of(self, name: str) -> dict:
        """The result of node `name`; empty while it has not finished."""
        marker = self.markers.get(name)
        return marker.result if marker is not None else {}

    def results_of(self, kind: str) -> dict[str, dict]:
        """Results of finished nodes of `kind` by node name."""
        return {
            n.name: self.markers[n.name].result
            for n in self.nodes
            if n.kind == kind and n.name in self.markers
        }

    @property
    def cka(self) -> list[CkaResult]:
        """Every finished CKA analysis; a number in one that is not finite is refused: the node writes null
        there (`atomic.json_safe`), so NaN or inf was edited in, and read, it decided the claim."""
        out = []
        for n in self.nodes:
            if n.kind == "cka" and n.name in self.markers:
                if (bad := non_finite(self.markers[n.name].result)) is not None:
                    raise self.damaged(
                        n, f"a number that is not finite, {bad}, which a CKA node never writes"
                    )
                out.append(self._typed_result(CkaResult, n))
        return out

    def run(self, model: str) -> RunSpec | None:
        """The run a model id belongs to."""
        name = split_id(model)[0]
        return next((r for r in self.spec.runs if r.name == name), None)

    def model_ids(self, run: str) -> dict[int, str]:
        """Pretraining seed -> model id of a run (one entry for a run trained at one seed)."""
        from encoderlab.study.graph import run_id

        spec_run = self.spec.run(run)
        return {s: run_id(spec_run, s, self.spec) for s in self.spec.seeds_of(spec_run)}

    def seed_of(self, model: str) -> int:
        """The pretraining seed of a model id."""
        name, seed = split_id(model)
        return seed if seed is not None else self.spec.seeds_of(self.spec.run(name))[0]

    def label(self, model: str) -> str:
        """Display label of a model id (the run's label, with '/sN' when it has a seed)."""
        name = split_id(model)[0]
        run = self.run(model)
        return (run.display if run else name) + model[len(name) :]

    def models(self, step: int | None = None) -> list[str]:
        """Model ids with finished evaluations at `step` (None: final models), in graph order."""
        return list(dict.fromkeys(e.model for e in self.evals if e.step == step))

    def shared_tasks(self, models: Iterable[str], step: int | None) -> tuple[dict[str, str], dict[str, str]]:
        """({task: family} of the tasks every one of `models` with results at `step` has results for, the
        other tasks some of them have). Whatever compares models averages over the shared tasks only: a
        report is rebuilt mid-study, and a failed node leaves a model without a task another has, where a
        family mean over two tasks against one over one of them would compare tasks, not models."""
        wanted, have = set(models), {}
        for e in self.evals:
            if e.model in wanted and e.step == step:
                have.setdefault(e.model, {})[e.record.task] = e.record.family
        if not have:
            return {}, {}
        shared = set.intersection(*(set(tasks) for tasks in have.values()))
        family = {t: f for tasks in have.values() for t, f in sorted(tasks.items())}
        kept = {t: f for t, f in family.items() if t in shared}
        return kept, {t: f for t, f in family.items() if t not in kept}

    def planned_tasks(self, models: Iterable[str], step: int | None) -> dict[str, dict[str, str]]:
        """model -> {task: family} that `models` are evaluated on at checkpoint `step`: the graph's eval nodes,
        finished or not, and every finished result. What a claim can ever compare, not what it has yet."""
        wanted, out = set(models), {}
        planned = (e for _, e in self.eval_nodes)
        for model, at, task, family in [
            *((e.model, e.step, e.task, e.family) for e in planned),
            *((e.model, e.step, e.record.task, e.record.family) for e in self.evals),
        ]:
            if model in wanted and at == step:
                out.setdefault(model, {})[task] = family
        return out

    def unfinished_evals(self, models: Iterable[str], step: int | None) -> tuple[int, int]:
        """(unfinished, all) eval nodes of `models` at checkpoint `step` (None: final models) in the graph: a
        report rebuilt mid-study, or after a node failed, says what its numbers have not seen yet."""
        wanted, total, done = set(models), 0, 0
        for n, node in self.eval_nodes:
            if node.model in wanted and node.step == step:
                total += 1
                done += n.name in self.markers
        return total - done, total

    def summary(
        self, model: str, step: int | None = None, keep: Callable[[EvalRecord], bool] | None = None
    ) -> ModelSummary:
        """Evaluation's summary of a model at a checkpoint, from its finished runs (`keep` selects some)."""
        return summarize_runs(_records(self.evals, model, step, keep), model)

    def final_steps(self) -> dict[str, int]:
        """Steps each pretrained model ran (from the pretrain results, else the resolved config)."""
        out = {}
        for n in self.nodes:
            if n.kind == "pretrain":
                res = self.result_of(n.name)
                out[n.name.split("/", 1)[1]] = res.get("steps") or PretrainNode.of(n).steps
        return out

    def mask_ratios(self) -> dict[str, tuple[str, float]]:
        """Model id -> (design, masking ratio) for the runs of the baseline's comparison group on the
        mask-ratio figure: MLM at one ratio, or CLM for a share then MLM at one ratio, kept where the
        design has two ratios or more (read from the RunConfig each node trained, not declared beside it;
        a seed twin in another group is left out). One model per run, its first pretraining seed's, as
        the results the paper reports are: a line is one point per ratio (each other seed of a run drew
        another point at its ratio, a vertical segment in the line)."""
        from encoderlab.study.resolve import mask_design

        group = self.spec.run(self.spec.baseline).group
        compared = {r.name for r in self.spec.runs if r.group == group}
        first = {name: ids[min(ids)] for name in compared if (ids := self.model_ids(name))}
        out = {}
        for n in self.nodes:
            model = n.name.split("/", 1)[-1]
            if n.kind == "pretrain" and first.get(split_id(model)[0]) == model:
                design = mask_design(PretrainNode.of(n).run)
                if design is not None:
                    out[model] = design
        ratios: dict[str, set[float]] = {}
        for design, ratio in out.values():
            ratios.setdefault(design, set()).add(ratio)
        return {m: d for m, d in out.items() if len(ratios[d[0]]) > 1}


def _records(
    evals: Iterable[StudyEval], model: str, step: int | None, keep: Callable[[EvalRecord], bool] | None
) -> list[EvalRecord]:
    return [
        e.record for e in evals if e.model == model and e.step == step and (keep is None or keep(e.record))
    ]


def load_study(study_dir: Path) -> StudyData:
    """Read a study folder; a folder that is not a study (or of an older layout) is a UserError."""
    study_dir = Path(study_dir)
    typed, nodes = read_study(study_dir)
    data = StudyData(spec=typed, nodes=nodes, folder=study_dir)
    for n in nodes:
        m = read_marker(study_dir, n)
        if m is not None:
            data.markers[n.name] = m
    read_node_outputs(data, study_dir)
    finished = recorded_commits(study_dir, [n for n in nodes if n.name in data.markers])
    data.start_commits = {hub_id: tuple(sorted(c)) for hub_id, c in finished.items()}
    return data


def check_study_folder(study_dir: Path, flag: str = "", fix: str = "") -> None:
    """Refuse a study folder argument that is a file or runs through one, naming the file: reading
    study.json through it said "Not a directory; choose another path or fix its permissions". `flag`
    names the argument (`--out `), `fix` adds the other way out."""
    blocking = file_in_the_way(study_dir)
    if blocking is None:
        return
    what = (
        f"{flag}{study_dir} is a file, not a study folder"
        if blocking == Path(study_dir)
        else f"{flag}{study_dir} cannot be a study folder: {blocking} is a file"
    )
    raise UserError(f"{what}; give the folder `study run --out` wrote (runs/NAME-SCALE by default){fix}")


def read_study(study_dir: Path) -> tuple[StudySpec, list[Node]]:
    """The spec and the graph a study folder was last run with (study.json, graph.json), typed."""
    from encoderlab.config import from_dict

    check_study_folder(study_dir)
    spec, graph = _read_record(study_dir, "study.json"), _read_record(study_dir, "graph.json")
    try:
        typed = from_dict(StudySpec, spec, where="study.json")
    except UserError as exc:
        raise UserError(
            f"{study_dir}/study.json does not match this encoderlab ({problem_of(exc)}); run the study again into it "
            "with the same command (finished nodes whose config did not change are kept)"
        ) from None
    try:
        nodes = [
            Node(kind=g["kind"], name=g["name"], config=g["config"], deps=tuple(g["deps"]), key=g["key"])
            for g in graph
        ]
    except (KeyError, TypeError):
        raise UserError(
            f"{study_dir}/graph.json is not a study graph (damaged or replaced); run the study again into "
            f"{study_dir} with the same command, which rewrites it (finished nodes are kept)"
        ) from None
    return replace(typed, names_hub_ids=True), nodes  # its local paths are absolute


def _read_record(study_dir: Path, name: str):
    """study.json or graph.json of a study folder, parsed; missing or damaged is one line (a damaged file
    was a JSONDecodeError traceback). graph.json is rewritten by every `study run`; study.json is
    what the folder's study is checked against, so it is restored, not rewritten."""
    path = study_dir / name
    try:
        return jsonlines.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        # its report/ or a node's folder: "run: study run NAME --out out/report" was no fix for that
        inside = study_folder_above(Path(study_dir).absolute())
        if inside is not None:
            raise UserError(
                f"{study_dir} lies inside the study folder {inside} and is not one itself; give {inside}"
            ) from None
        if not Path(study_dir).exists():  # a typo was told to run a study into it
            raise UserError(_missing_folder(Path(study_dir))) from None
        raise UserError(
            f"{study_dir} is not a study folder (no study.json/graph.json); run: encoderlab study run NAME --out {typed(study_dir)}"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        fix = (
            "restore it from a copy"
            if name == "study.json"
            else f"run the study again into {study_dir} with the same command, which rewrites it"
        )
        raise UserError(
            f"{path} is damaged ({type(exc).__name__}: {exc}); {fix} (finished nodes are kept)"
        ) from None


def _missing_folder(study_dir: Path) -> str:
    """The line for a study folder argument that does not exist, with the study folder beside it that its
    name is likely a typo of: "is not a study folder; run: encoderlab study run NAME --out" sent a typo of
    a finished study's folder to start a new study there."""
    try:
        beside = [p.name for p in study_dir.parent.iterdir() if (p / "study.json").is_file()]
    except OSError:  # no parent folder, or one that cannot be listed: no suggestion
        beside = []
    near = closest(study_dir.name, beside)
    hint = f" ({study_dir.parent / near}?)" if near else ""
    return f"study folder {study_dir} does not exist{hint}; give the folder `study run --out` wrote (runs/NAME-SCALE by default)"


def non_finite(value: Any, where: str = "") -> str | None:
    """The first number of a JSON value that is not finite ("ratio[2] is inf", "low_layers.low_ci[0] is
    nan"), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where or 'the value'} is {value}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        inner = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        if (bad := non_finite(item, inner)) is not None:
            return bad
    return None
