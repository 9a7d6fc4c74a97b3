"""What a study is: a typed, declarative grid.

A `StudySpec` lists datasets (a corpus prepared once with one tokenizer), pretraining runs
(`RunSpec`: a named recipe with typed parameters and RunConfig overrides, from scratch or from
another run or an asset), the
evaluation protocol every run gets (`EvalSpec`), analyses (CKA pairs against a seed-noise pair)
and the paper's claims it checks (`ClaimSpec`). `graph.build_graph` turns it into nodes; nothing
here runs anything, so a spec can be listed, hashed and validated quickly. The studies of the papers
are built from it in `paper1.py` and `paper2.py`, at the scales of `scales.py` (`catalog.get_study`).

Design choices:
- **Controlled variables are data, not conventions.** Runs that are compared share a `group`;
  the graph refuses a group whose runs differ in dataset, data seed or token budget, and every run
  is evaluated with the one `EvalSpec` of the study.
- **Scales are parameters, not separate studies.** A built-in study is a function of a `Scale`
  (model size, steps, batch, evaluation grid); `demo` and `cpu` shrink the grid for 2 CPU cores,
  the `gpu-*` scales pass the recipes' paper defaults through untouched.
- **The grid is explicit.** Sizes x pretraining seeds multiply every run; anything else (mask
  ratios, CLM fractions) is one `RunSpec` per point, so the report can name each row.
- **Typed all the way.** A run's recipe parameters are checked against the recipe's signature and
  its overrides against RunConfig's fields when the spec is built (a `UserError` naming the run);
  `resolve.resolve_run` turns them into the RunConfig the node trains, with no text in between.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from encoderlab.config import UNRECORDED
from encoderlab.data.stoprule import DEFAULT_STOP, Stop
from encoderlab.errors import UserError

FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # \Z: `$` let a final line break through
"""A study's name and scale: the default study folder is runs/NAME-SCALE, so no path may hide in them."""

ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")  # \Z, as FOLDER_NAME
"""Run and dataset names and claim ids (`clm-base+mlm-12k`). A run at several seeds is `NAME/sN` in
node names and tables, so a run named `mlm/s1` was a second model of that id, `@` means MODEL@STEP in
the plan, and a line break or a `|` broke the report's tables. Display text goes in a run's `label`."""

ClaimKind = Literal["beats", "faster_early", "more_stable", "cka_low_layers"]


@dataclass(frozen=True, kw_only=True)
class DataSpec:
    """A pretraining corpus prepared once and read by every run that names it."""

    name: str
    """Id of this dataset inside the study (runs refer to it)."""
    corpus: tuple[str, ...]
    """Sources mixed into the corpus, each as `--source` takes it: an asset, a named hub corpus,
    `hf:ORG/NAME`, or a local file, folder or glob (relative to the study file), with `#key=value`
    options (`my.jsonl#text_field=body,weight=2`)."""
    tokenizer: str = "train"
    """'train' trains a BPE tokenizer on the corpus; the name of another dataset of the study that trains
    one (not this dataset's own name, which is read as an asset or path) reuses that tokenizer (a domain corpus read by runs continued from a model the study trained on
    that dataset); otherwise an asset, model folder or tokenizer path."""
    vocab_size: int = 8192
    """Vocabulary of a trained tokenizer; an existing one trains at its own size, which the plan reads
    too where it finds the tokenizer without a download (else the plan's estimates assume this)."""
    max_docs: int | None = None
    """Use at most this many documents (the first ones in a seeded order), counted as read: those decontamination
    removes and those held out for validation are among them (`data prepare --max-docs`); None uses all."""
    seed: int = 0
    """Data seed: the document split and the packed order every run reads."""
    decontaminate: bool = True
    """Remove from the corpus the texts of the evaluation sets this study fine-tunes on (by id and long
    n-gram overlap): those of its tasks' assets that are long-text sets (`needs.decontamination_sets`).
    The list follows from the study alone, never from what else happens to be fetched."""
    prepared: str | None = None
    """A folder already prepared from `corpus` with `tokenizer` (`data prepare`, or `data merge` of a
    prepare sharded over machines), read instead of preparing (`study/prepared.py`); then `max_docs`
    and `stop` are unset (the folder holds what it holds, counted by the study guard)."""
    stop: Stop = DEFAULT_STOP
    """When a mixture of several `corpus` entries ends, as `data prepare --stop` and `data tokenizer --stop`
    (the trained tokenizer reads the same mixture): first_exhausted when the first entry runs out (the
    weights' proportions kept, the rest unread), all_exhausted once every entry was read whole (those that
    run out repeat). Left out of the prepare node's key and the report's at first_exhausted, so a study
    without it keeps its keys."""


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One pretraining run (or a reference model evaluated as is, when `recipe` is None)."""

    name: str
    """Id inside the study, used in node names, tables and claims."""
    label: str = ""
    """Display name in the report (defaults to `name`)."""
    recipe: str | None = None
    """Named recipe of `encoderlab.train.recipes`; None evaluates `init` without training."""
    params: dict[str, Any] = field(default_factory=dict)
    """Arguments of the recipe (`{ratio: 0.3}`), checked against its signature; they win over the scale's."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """Fields of the resolved RunConfig by dotted path (`{optim.lr: 1.0e-3}`), applied after the study's."""
    init: str | None = None
    """Start from another run of this study (its final model) or an asset / model folder / hub id."""
    data: str = "main"
    """Name of the `DataSpec` this run reads."""
    group: str = "main"
    """Runs in one group are compared: same data, same data seed, same token budget (checked)."""
    seed: int | None = None
    """Training seed offset (>= 0, added to the pretraining seed); used for seed-noise twins, which keep the
    data order of the run they twin."""
    seeds: tuple[int, ...] | None = None
    """Pretraining seeds of this run (None: the study's `seeds`). Each seed trains the run again with its
    own initialisation, masks and data order; runs compared at one seed read the same data order. A run
    continuing a study run trained at one seed continues that one model at each of its own seeds."""
    steps: int | None = None
    """Optimizer steps; None takes the scale's steps (and the recipe's default at gpu scales)."""
    eval_steps: tuple[int, ...] = ()
    """Intermediate checkpoints also evaluated (data-efficiency curve)."""
    tasks: tuple[str, ...] | None = None
    """Restrict evaluation to these tasks of the study's suite (a domain study's own tasks)."""
    evaluate: bool = True
    """Fine-tune and score this run; False for a run only analysed (a CKA seed-noise twin at the demo)."""

    def __post_init__(self) -> None:
        from encoderlab.config import check_values

        where = f"run {self.name}"
        unset = all(v is None for v in (self.steps, self.seeds, self.seed))
        if self.recipe is None and (self.params or self.overrides or self.eval_steps or not unset):
            # eval_steps scored the one model as its "checkpoints"; seeds and seed were dropped (`seeds_of`)
            raise UserError(
                f"{where} has no recipe (it is evaluated as is), so it takes no params, overrides, steps, "
                "seed, seeds or eval_steps (it is one model, with no checkpoints)"
            )
        if self.recipe is None and not self.init:  # its eval nodes failed on `source` after the runs trained
            raise UserError(
                f"{where} has no recipe and no init; give it an init (a model to evaluate as is) or a recipe"
            )
        if self.recipe is not None:
            from encoderlab.train.config import RunConfig
            from encoderlab.train.recipes import recipe_args

            try:
                params = recipe_args(self.recipe, self.params)
            except UserError as exc:
                raise UserError(f"{where}: {exc}") from None
            object.__setattr__(self, "params", params)
            object.__setattr__(self, "overrides", check_values(RunConfig, self.overrides, where))

    @property
    def display(self) -> str:
        """The label shown in the report."""
        return self.label or self.name


@dataclass(frozen=True, kw_only=True)
class EvalSpec:
    """The fine-tuning protocol every run of the study gets."""

    suite: str | None = "pocket"
    """Evaluation suite of `encoderlab.eval`; null: only the tasks of `task_files`."""
    tasks: tuple[str, ...] = ()
    """Tasks of the suite (empty: all)."""
    lrs: tuple[float, ...] = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)
    """Learning-rate grid; the best one is chosen on validation."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """Fine-tuning seeds; the same seeds for every model, so comparisons are paired."""
    checkpoint_lrs: tuple[float, ...] = ()
    """LRs for intermediate checkpoints (empty: the full grid)."""
    checkpoint_tasks: tuple[str, ...] = ()
    """Tasks for intermediate checkpoints (empty: the same as final models)."""
    max_steps: int | None = None
    """Cap on fine-tuning steps per run, for every task (None: each task's own protocol). Only the
    demo sets it, to fit 2 CPU cores; its scores are then a smoke signal, not the paper's protocol."""
    task_files: tuple[str, ...] = ()
    """Task files or folders of one's own (`encoderlab eval --task-file`, docs/evaluation.md); their
    tasks join the suite's."""


@dataclass(frozen=True, kw_only=True)
class CkaSpec:
    """Layer-wise CKA between two runs, with a seed-noise pair as the baseline."""

    a: str
    """Run compared (e.g. the detour)."""
    b: str
    """Run it is compared to (e.g. the MLM baseline)."""
    noise: tuple[str, str] | None = None
    """Two runs that differ only in seed; their divergence is the noise floor per layer."""
    texts: str = "biomed"
    """Asset of held-out texts."""
    n_texts: int = 500
    """Number of texts (the paper: 500)."""
    max_length: int = 512
    """Tokens per text at most (the paper's 512): capped at the compared models' positions when they take
    fewer, as `analyze cka`'s default is; another value beyond them is refused."""


@dataclass(frozen=True, kw_only=True)
class ClaimSpec:
    """A finding of a paper, checked on this study's numbers."""

    id: str
    """Short id."""
    text: str
    """The claim as the paper states it."""
    kind: ClaimKind
    """beats: a > b on `family`; faster_early: a > b at the first intermediate checkpoint;
    more_stable: a's score varies less across LRs than b's; cka_low_layers: paper 2's low layers of
    `a` vs `b` diverge beyond seed noise and beyond the other layers (`analysis.cka_report.low_layer_summary`)."""
    a: str
    """Run expected to win (or the compared run for CKA)."""
    b: str
    """Run expected to lose (or the reference run for CKA)."""
    family: str | None = None
    """beats: the task family compared (sc, tc, qa, ir), or None for the average over all tasks (the
    other kinds always compare that average)."""
    lr_range: tuple[float, float] = (1e-5, 1e-4)
    """more_stable: the fine-tuning LRs (inclusive) over which the spread is measured (paper 1 looks at
    1e-5 to 1e-4, where no run diverges); LRs of the grid outside it are left out."""

    def lrs_in_range(self, lrs: Iterable[float]) -> list[float]:
        """The LRs of `lrs` inside `lr_range`, sorted, its bounds included up to float rounding: what a
        more_stable claim measures its spread over (`measures`) and what a study file must hold two of
        (`specproblems.untestable_claims`), one rule for both."""
        lo, hi = self.lr_range
        return sorted({lr for lr in lrs if lo * (1 - 1e-9) <= lr <= hi * (1 + 1e-9)})


@dataclass(frozen=True, kw_only=True)
class StudySpec:
    """A whole controlled comparison: data, runs, evaluation, analyses, claims."""

    name: str
    """Study name."""
    data: tuple[DataSpec, ...]
    """Datasets."""
    runs: tuple[RunSpec, ...]
    """Pretraining runs and reference models."""
    baseline: str
    """Run every other run is compared to in the results table."""
    eval: EvalSpec = field(default_factory=EvalSpec)
    """Evaluation protocol."""
    scale: str = "custom"
    """Scale name this spec was built for (a label for a study of one's own)."""
    description: str = ""
    """One paragraph for the report."""
    size: str | None = None
    """Model size of from-scratch runs (None: the recipe default, or the study only adapts existing models)."""
    seq_len: int | None = None
    """Packed sequence length (None: the recipe default)."""
    micro_batch: int | None = None
    """Rows per micro-batch (None: the recipe default)."""
    grad_accum: int | None = None
    """Micro-batches per step (None: the recipe default)."""
    steps: int | None = None
    """Default steps per run (None: the recipe default)."""
    seeds: tuple[int, ...] = (0,)
    """Pretraining seeds; every run is trained once per seed (unless it names its own `seeds`)."""
    cka: tuple[CkaSpec, ...] = ()
    """CKA analyses."""
    claims: tuple[ClaimSpec, ...] = ()
    """Claims checked in the report."""
    expected_minutes: float = 0.0
    """Expected wall time on the scale's hardware (shown by `study list`; >= 0, 0: unknown)."""
    hardware: str = ""
    """Hardware the expected time refers to."""
    run_overrides: dict[str, Any] = field(default_factory=dict)
    """RunConfig fields by dotted path set on every pretraining run (`{precision: fp32}` on CPU)."""
    branch: bool = True
    """Train runs that compute the same first steps once: a run starts from another's checkpoint where
    their training is identical (`study/branch.py`); False trains every run from its first step."""
    paper: str = ""
    """The paper whose claims the study checks (`paper1` or `paper2`; empty: none); `study list` and the report state every way the
    study departs from that paper's data, tokenizer, tasks, model and protocol (`study/fidelity.py`)."""
    max_passes: float | None = None
    """Refuse the study when a pretraining run would read its corpus more often than this (the gpu
    scales: 1, as paper 1 never repeats); None allows any number, which `study plan` shows."""
    folder: str | None = field(default=None, compare=False, metadata=UNRECORDED)
    """The folder of the study file it was read from, where its relative paths were looked for (None:
    a built-in study, or a study folder's record): what a refusal of a hub id names as the folder it is
    not (`checks.check_hub_ids`). Never written or keyed (`UNRECORDED`): a study file moved elsewhere is
    the same study."""
    names_hub_ids: bool = field(default=False, compare=False, metadata=UNRECORDED)
    """True for a built-in study (`catalog.get_study`) and a study folder's record (`data.read_study`): an
    OWNER/NAME start model or tokenizer is a hub id, and a working folder shadowing it is refused
    (`hubids.check_shadowed_hub_ids`). False for a study file's (relative paths made absolute beside it)
    and a study built in Python's, whose relative paths are the working folder's (`hubids.pin_local_starts`)."""

    def __post_init__(self) -> None:
        from encoderlab.config import check_values
        from encoderlab.train.config import RunConfig

        problems = self.problems()
        if problems:
            raise UserError("\n".join(problems))
        overrides = check_values(RunConfig, self.run_overrides, f"study {self.name}")
        object.__setattr__(self, "run_overrides", overrides)
        # a float as study.json reads it back: a built-in's 12 digested apart from the folder's 12.0 (report key)
        object.__setattr__(self, "expected_minutes", float(self.expected_minutes))

    def problems(self) -> list[str]:
        """Every inconsistency between the parts of the spec, one line each (empty: none)."""
        from encoderlab.study.specproblems import id_problems, spec_problems
        from encoderlab.study.starts import start_problems

        names = [r.name for r in self.runs]
        out = [
            f"study {self.name}: {field} must be >= 1 when set, got {value}; give a positive {field} or null"
            for field in ("seq_len", "micro_batch", "grad_accum", "steps")
            if (value := getattr(self, field)) is not None and value < 1
        ]
        out += [
            f"study {field} {value!r} may hold only ASCII letters, digits, '.', '_' and '-' (it names the default "
            "study folder runs/NAME-SCALE)"
            for field, value in (("name", self.name), ("scale", self.scale))
            if not FOLDER_NAME.match(value)
        ]
        dnames = [d.name for d in self.data]
        out += id_problems(self)
        for kind, listed in (("run", names), ("dataset", dnames)):
            dup = sorted({n for n in listed if listed.count(n) > 1})
            if dup:
                out.append(f"study {self.name}: {kind} names must be unique, repeated: {', '.join(dup)}")
        out += spec_problems(self)
        datasets = {d.name for d in self.data}
        out += [
            f"run {run.name} reads dataset '{run.data}'; defined: {', '.join(sorted(datasets))}"
            for run in self.runs
            if datasets and run.data not in datasets  # none at all: one line (`specproblems.value_problems`)
        ]
        for d in self.data:
            if d.prepared is not None and (
                d.max_docs is not None
                or d.stop != DEFAULT_STOP
                or d.tokenizer == "train"
                or d.tokenizer in datasets
            ):
                out.append(
                    f"dataset {d.name} reads the prepared folder {d.prepared}, so it takes no max_docs or stop "
                    "and names the tokenizer the folder was prepared with (not 'train' or another dataset's)"
                )
            src = next((x for x in self.data if x.name == d.tokenizer and x is not d), None)
            if src is not None and src.tokenizer != "train":
                out.append(
                    f"dataset {d.name} reuses the tokenizer of dataset {src.name}, which trains none (its "
                    f"tokenizer: {src.tokenizer}); let {src.name} train one (tokenizer: train) or name a tokenizer"
                )
        refs = [("baseline", self.baseline)] + [(f"claim {c.id}", n) for c in self.claims for n in (c.a, c.b)]
        refs += [(f"cka {c.a}-vs-{c.b}", n) for c in self.cka for n in (c.a, c.b, *(c.noise or ()))]
        out += [
            f"{where} names run '{name}', which the study does not have; runs: {', '.join(dict.fromkeys(names))}"
            for where, name in refs
            if names and name not in names
        ]
        out += start_problems(self, names)
        return out

    def run(self, name: str) -> RunSpec:
        """The run called `name`."""
        return next(r for r in self.runs if r.name == name)

    def dataset(self, name: str) -> DataSpec:
        """The dataset called `name`."""
        return next(d for d in self.data if d.name == name)

    def tokenizer_trainer(self, d: DataSpec) -> DataSpec | None:
        """The dataset whose corpus trains `d`'s tokenizer: `d` itself (`tokenizer: train`), or the dataset
        it names that trains one; None when the study trains none for it (a named tokenizer)."""
        if d.tokenizer == "train":
            return d
        return next(
            (x for x in self.data if x.name == d.tokenizer and x.tokenizer == "train" and x is not d), None
        )

    def init_seed(self, run: RunSpec, seed: int) -> int:
        """The pretraining seed of the study run that `run` continues, for `run`'s seed `seed`: the same
        seed, or the only one that run is trained at (paper 2's setting: one start model, its continued
        pretraining replicated at several seeds)."""
        theirs = self.seeds_of(self.run(run.init))
        return theirs[0] if len(theirs) == 1 else seed

    def seeds_of(self, run: RunSpec) -> tuple[int, ...]:
        """The pretraining seeds `run` is trained at (a model evaluated as is: the study's first)."""
        if run.recipe is None:
            return self.seeds[:1]
        return run.seeds or self.seeds


__all__ = ["CkaSpec", "ClaimKind", "ClaimSpec", "DataSpec", "EvalSpec", "RunSpec", "StudySpec"]
