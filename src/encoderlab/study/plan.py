"""The study guard: before anything runs, what each pretraining run reads and costs.

`plan_study(spec)` resolves every pretraining run (`graph.pretraining`) and states, per run: its
dataset and tokenizer, the tokens it trains on against the unique tokens its corpus holds (passes over
the corpus), its parameters and a GPU-hour estimate; and for the study, the evaluation suite. Paper 1
never repeats its corpus (100B unique FineWeb-Edu tokens), so a scale that claims to reproduce it must
not quietly read a small corpus thousands of times: a spec with `max_passes` (the gpu scales: 1) is
refused, in one line naming the fix, when a run would read its corpus more often.

Unique tokens come from the best source available, and the plan says which:
- **counted**: the prepared data of the study folder, or the folder a dataset names (`DataSpec.prepared`,
  `--prepared NAME=DIR`: a corpus prepared across machines), from `meta.json`'s `unique_tokens` of the
  train split;
- **estimated**, before preparation: a named hub corpus's declared size (`data.corpora`: the dataset
  card's count, in the card's tokenizer, e.g. GPT-2's for FineWeb-Edu, or where the card has none the
  dataset paper's, e.g. StarCoder's for starcoderdata's Python), or a fetched asset's or a local
  file's characters / `CHARS_PER_TOKEN`, capped by `max_docs`, less the validation split;
- **at most**, before preparation: a named hub corpus whose card states only its split's bytes over all
  columns (Biomed-Enriched): bytes / `CHARS_PER_TOKEN` bounds its tokens from above, so a run's passes
  are a lower bound (`>=`), which refuses only when it is itself over the limit;
- **unknown**: an asset not fetched yet, or a hub dataset without a declared size.
A run that continues another on the same data reads the stream after its base's last row, so its
passes count the stream position it reaches, not its own tokens alone.

GPU-hours of pretraining are, per phase of a run, 6 x parameters x the tokens it trains at 40% of an
H100's dense bf16 peak (`scales.GPU_FLOPS`), or its optimizer steps x `evalcost.STEP_FLOOR_S` x the
model's layers / `evalcost.BASE_LAYERS` x the layout's data-parallel ranks if longer (`evalcost.
floored_seconds`, the one formula evaluation uses too). A pretraining step is at least one eager
optimizer step, the same launch- and host-bound floor as a fine-tuning step [D: not measured on this
code's pretraining; gradient accumulation's extra micro-batches are not added, so it stays a floor]: at
the gpu scales a step's FLOPs take seconds and the floor changes nothing, at demo and cpu (4-layer models,
steps of a few thousand tokens) it is the whole estimate. A run's phases share its layout, so its steps
carry the same tokens in every phase and counting per phase gives the run's max; a branch counts only
the steps after the one it starts from. Evaluation is counted from the study's eval nodes at the same
rate and floors (`study/evalcost.py`, `with_evaluation`: its fine-tuning and scoring tokens). Parameters
are the model size's (with the dataset's vocabulary) for runs from scratch, their base's for continued
runs, and otherwise a table of known start models (`scales.START_MODEL_PARAMS`, `START_MODEL_LAYERS`),
else what a start model's files on this machine say (`scales.start_model_size`: safetensors headers
and config, no weights read).

This module computes the plan; `study/plantext.py` writes it out for `study plan`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from encoderlab import jsonlines
from encoderlab.errors import UserError
from encoderlab.objectives import MLM
from encoderlab.study.cputime import PlanDevice, model_vocab, trained_vocabs
from encoderlab.study.evalcost import STEP_FLOOR_S, EvalCost, floored_seconds
from encoderlab.study.graph import Node, Pretraining, pretraining
from encoderlab.study.scales import start_model_size
from encoderlab.study.spec import DataSpec, StudySpec
from encoderlab.words import count

CHARS_PER_TOKEN = 4.0
"""Characters per token assumed by estimates (English BPE; a study's 8k-vocabulary BPE on general-en
measured about 4.2)."""


@dataclass(frozen=True, kw_only=True)
class CorpusSize:
    """How many unique tokens a dataset of the study holds, and how that is known."""

    dataset: str
    """The `DataSpec` name."""
    unique_tokens: float | None
    """Unique tokens of its train split (None: unknown)."""
    counted: bool
    """True when counted in prepared data; False for an estimate (or unknown)."""
    at_most: bool = False
    """True when `unique_tokens` is an upper bound (a card's bytes over all its columns, or a mixture of
    several sources, which stops when the first runs out unless its `stop` is all_exhausted), not an
    estimate."""
    how: str
    """Where the number comes from, in words."""
    tokenizer_ids: int | None = None
    """The ids of the tokenizer its prepared data was tokenized with (meta.json `spec.vocab_size`), when
    counted: a tokenizer the study trained holds fewer than `vocab_size` asks when its corpus has no more
    merges, which the plan then says (`plantext.own_tokenizer_text`); None before it is prepared."""


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """One pretraining run (at one pretraining seed)."""

    model: str
    """Model id."""
    dataset: str
    """The dataset it reads."""
    tokens: int
    """Tokens it trains on."""
    reaches: int
    """Tokens into the data stream it reads up to (more than `tokens` for a run continuing its base's stream)."""
    passes: float | None
    """`reaches` / the dataset's unique tokens (None: unknown)."""
    at_least: bool = False
    """True when `passes` is a lower bound (its corpus's size is an upper bound): above the limit, it refuses."""
    params: float | None
    """Parameters of the model trained, embeddings included (None: unknown): what its FLOPs count."""
    size_n: float | None = None
    """N, its non-embedding parameters, the size `encoderlab advise` reads a study's runs at and
    `--target-size` takes (`advise/studyread.py`), for a model from scratch (None: a run continuing a
    checkpoint, which advise leaves out)."""
    layers: int | None = None
    """Its transformer blocks (None: unknown), which scale its evaluation's per-step floor (`evalcost`)."""
    positions: int | None = None
    """The longest input its model takes (None: unknown), which caps the tokens an evaluation task of no
    `max_length` reads per text (`evalcost`)."""
    gpu_hours: float | None
    """Over the steps it trains itself, per phase max(6 N D at 40% of an H100's peak, steps x the step
    floor; `evalcost.floored_seconds`) (None: parameters or layers unknown)."""
    branch: str = ""
    """`MODEL@STEP` when it starts from another run's checkpoint (`study/branch.py`): those steps are
    trained, and counted, there."""
    recipe: str = ""
    """How it trains, in one line (`recipe_text`): its start model, optimizer and phases."""


@dataclass(frozen=True, kw_only=True)
class StudyPlan:
    """What a study will train and read, before it runs."""

    spec: StudySpec
    corpora: dict[str, CorpusSize]
    runs: list[RunPlan]
    evaluation: EvalCost | None = None
    """What its eval nodes cost (`evalcost.with_evaluation`); None: not counted yet."""
    device: PlanDevice | None = None
    """Where its runs train, with their measured CPU time (`cputime.plan_device`); None: not said."""
    trained_vocabs: dict[str, int] = dataclasses.field(default_factory=dict)
    """Dataset -> the ids of the tokenizer the study trained on it, read from its prepare node's output
    (`cputime.trained_vocabs`); absent: not trained yet, its models sized at the `vocab_size` asked."""

    @property
    def gpu_hours(self) -> float:
        """Pretraining GPU-hours of the runs whose parameters are known."""
        return sum(r.gpu_hours or 0.0 for r in self.runs)

    @property
    def total_gpu_hours(self) -> float:
        """Pretraining and evaluation GPU-hours (evaluation once counted, `evalcost.with_evaluation`)."""
        return self.gpu_hours + (self.evaluation.gpu_hours if self.evaluation else 0.0)

    @property
    def max_passes(self) -> float | None:
        """The most passes any run makes over its corpus (None: none known)."""
        known = [r.passes for r in self.runs if r.passes is not None]
        return max(known) if known else None

    def max_passes_text(self) -> str:
        """`max_passes` as `study list` shows it: `?`, `1.75`, or `>=1.75` for a lower bound; the same
        3 significant digits as `study plan`'s passes column, so the two commands show one figure."""
        known = [r for r in self.runs if r.passes is not None]
        if not known:
            return "?"
        text = passes_text(max(known, key=lambda r: r.passes), 3)
        # a run on a corpus not yet sized may read it more often: the known most is then a lower bound
        return text if len(known) == len(self.runs) or text.startswith(">=") else f">={text}"

    def refusal(self) -> str | None:
        """Why the spec's `max_passes` refuses this study (one line naming the fix), or None."""
        limit = self.spec.max_passes
        over = [
            r for r in self.runs if limit is not None and r.passes is not None and r.passes > limit + 1e-9
        ]
        if not over:
            return None
        r = max(over, key=lambda r: r.passes)
        c = self.corpora[r.dataset]
        what = "counted" if c.counted else "estimated"
        least, most = ("at least ", "at most ") if r.at_least else ("", "")
        times = passes_text(r, 3).removeprefix(">=")
        from encoderlab.study.catalog import STUDIES

        where = (  # a study of the user's own has no `study show` to write it out: it is a file already
            f"a study file (encoderlab study show {self.spec.name} --scale {self.spec.scale} > my.yaml)"
            if self.spec.name in STUDIES
            else "its study file"
        )
        return (
            f"run {r.model} would read dataset {r.dataset} {least}{times} times ({short_number(r.reaches)} tokens "
            f"of {most}{short_number(c.unique_tokens)} unique, {what}); study {self.spec.name} allows {count(limit, 'pass', 'passes')}: give it a "
            f"corpus with more unique tokens{_larger_example(self.spec.dataset(r.dataset).corpus, r.reaches)}, or allow repeats "
            f"with max_passes: null in {where}"
        )


def _larger_example(corpus: tuple[str, ...], tokens: float) -> str:
    """` (e.g. NAME)`, a named general-English corpus of at least `tokens` (`data.corpora.larger_general_corpus`),
    or nothing: none is, or `corpus` reads an asset (whose domain its name does not say)."""
    from encoderlab.data.assets.registry import ASSETS
    from encoderlab.data.corpora import larger_general_corpus
    from encoderlab.study.needs import corpus_locations

    names = corpus_locations(corpus)
    larger = None if any(n in ASSETS for n in names) else larger_general_corpus(names, tokens)
    return f" (e.g. {larger})" if larger else ""


def passes_text(r: RunPlan, digits: int) -> str:
    """A run's passes to `digits` significant digits: `?` unknown, `>=1.75` a lower bound. A lower bound
    is rounded down, not to nearest: 1.7506 passes at least is `>=1.75`, and to 2 digits `>=1.7`, never
    `>=1.8`, which would claim more repeats than are known."""
    if r.passes is None:
        return "?"
    if not r.at_least or r.passes <= 0:
        return f"{r.passes:.{digits}g}"
    step = 10.0 ** (math.floor(math.log10(r.passes)) - digits + 1)
    # the 1e-9 keeps a bound that is exactly a figure (1.75 stored as 1.7499999...) at that figure
    return f">={math.floor(r.passes / step + 1e-9) * step:.{digits}g}"


def short_number(x: float | None) -> str:
    """A count in 3 significant digits with its unit, e.g. `99.1B`, `310M`; `?` unknown."""
    if x is None:
        return "?"
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g}{unit}"
    return f"{x:.0f}"


def plan_study(
    spec: StudySpec,
    study_dir: Path | None = None,
    nodes: Iterable[Node] = (),
    trained: list[Pretraining] | None = None,
) -> StudyPlan:
    """The plan of `spec`, counting unique tokens in `study_dir`'s prepared data where it has them: the
    finished ones among `nodes`, the study's prepare nodes as `spec` builds them now (`graph.prepare_graph`),
    so a folder's data of another study, or of an earlier version of a dataset, is never counted as this one's.
    `trained`: the study's `pretraining(spec)` when the caller has it already (as `graph.build_graph`'s)."""
    prepares = {n.name: n for n in nodes if n.kind == "prepare"}
    corpora = {
        d.name: corpus_size(d, finished_meta(d, study_dir, prepares.get(f"prepare/{d.name}")))
        for d in spec.data
    }
    vocabs = trained_vocabs(spec, {n: c.tokenizer_ids for n, c in corpora.items()}, study_dir, prepares)
    runs, size_of = [], {}
    # a dataset's vocabulary once, not once per run: reading a named tokenizer (EuroBERT's) took ~1.5 s
    vocab = functools.cache(lambda name: model_vocab(spec, spec.dataset(name), vocabs))
    for p in pretraining(spec) if trained is None else trained:
        if p.config is None:
            continue
        params, layers, positions, size_n = (
            size_of.get(p.base, (None,) * 4)
            if p.base
            else (*_size(p.config, vocab(p.run.data)), _size_n(p.config))
        )
        size_of[p.model] = params, layers, positions, size_n
        corpus = corpora[p.run.data]
        run = _run_plan(p.model, p.run.data, p.config, corpus.unique_tokens, params, p.branch, layers)
        recipe = recipe_text(p.config, p.base)
        runs.append(
            dataclasses.replace(
                run, recipe=recipe, at_least=corpus.at_most, positions=positions, size_n=size_n
            )
        )
    return StudyPlan(spec=spec, corpora=corpora, runs=runs, trained_vocabs=vocabs)


def _run_plan(
    model: str,
    dataset: str,
    cfg,
    unique: float | None,
    params: float | None,
    branch=None,
    layers: int | None = None,
) -> RunPlan:
    per_step = cfg.layout.tokens_per_step
    tokens = cfg.steps * per_step
    reaches = (cfg.data.step_offset + cfg.steps) * per_step
    return RunPlan(
        model=model,
        dataset=dataset,
        tokens=tokens,
        reaches=reaches,
        passes=reaches / unique if unique else None,
        params=params,
        layers=layers,
        gpu_hours=_pretraining_seconds(cfg, params, layers, branch.step if branch else 0) / 3600
        if params and layers
        else None,
        branch=f"{branch.base}@{branch.step:,}" if branch else "",
    )


def _pretraining_seconds(cfg, params: float, layers: int, start: int) -> float:
    """GPU-seconds of a run's steps from `start` on (a branch's earlier ones are its base's), phase by
    phase at the longer of their FLOPs and their floor (module docstring); each data-parallel rank takes
    the floor on every step."""
    seconds = 0.0
    for phase in cfg.plan():
        steps = max(0, phase.end - max(phase.start, start))
        tokens = steps * cfg.layout.tokens_per_step
        seconds += floored_seconds(6 * params * tokens, steps * cfg.layout.world_size, STEP_FLOOR_S, layers)
    return seconds


def check_run(spec: StudySpec, model: str, dataset: str, cfg, meta: dict) -> None:
    """Refuse one pretraining run, about to train, whose counted passes exceed the spec's `max_passes`
    (the study's start can only estimate a corpus that was not prepared yet)."""
    corpus = corpus_size(spec.dataset(dataset), meta)
    check_passes(
        StudyPlan(
            spec=spec,
            corpora={dataset: corpus},
            runs=[_run_plan(model, dataset, cfg, corpus.unique_tokens, None)],
        )
    )


def recipe_text(cfg, base: str | None = None) -> str:
    """How a resolved run trains, in one line: where it starts, its optimizer, then each phase's
    objective (with its masking), length, schedule and frozen layers, e.g. `from
    answerdotai/ModernBERT-base; decoupled_adamw lr 0.0002 wd 1e-05 ...; clm 3,179 steps ... -> mlm15 ...`."""
    start = (
        f"from run {base}"
        if base
        else f"from {cfg.model.init}"
        if cfg.model.init
        else f"{cfg.model.size} from scratch"
    )
    o = cfg.optim
    optim = (
        f"{o.kind} lr {o.lr:g} betas {o.betas[0]:g}/{o.betas[1]:g} eps {o.eps:g} wd {o.weight_decay:g}"
        f"{'' if o.decay_norms_and_biases else ' (not on norms and biases)'}"
    )
    return "; ".join([start, optim, " -> ".join(_phase_text(p) for p in cfg.plan())])


def _phase_text(planned) -> str:
    phase, s = planned.phase, planned.phase.schedule
    objective = phase.objective.tag
    if isinstance(phase.objective, MLM):  # how it picks positions and what it puts there
        objective += f" {phase.objective.selection} {phase.objective.replacement}"
    schedule = (
        s.kind + (f", warmup {s.warmup:,}" if s.warmup else "") + (f", decay {s.decay:,}" if s.decay else "")
    )
    if s.end_fraction:
        schedule += f" to {s.end_fraction:.0%}"
    frozen = f"; layers {phase.freeze} frozen" if phase.freeze else ""
    carried = "; optimizer reset" if phase.reset_optimizer and planned.index else ""
    return f"{objective} {planned.steps:,} steps ({schedule}{frozen}{carried})"


def _size(cfg, vocab: int) -> tuple[float | None, int | None, int | None]:
    """The parameters, transformer blocks and positions of the model a run trains (None: unknown); a
    model from scratch has the positions `train.start` gives it for the run's rows."""
    init = cfg.model.init
    if init:
        return start_model_size(init)
    from encoderlab.model.config import ModelConfig
    from encoderlab.train.start import scratch_positions

    model = ModelConfig.from_size(cfg.model.size, vocab_size=vocab)
    return float(model.num_params()), model.n_layers, scratch_positions(cfg.layout.seq_len)


def _size_n(cfg) -> float | None:
    """`RunPlan.size_n` of a run's model: None for one continued from a checkpoint."""
    from encoderlab.model.config import non_embedding_params

    return None if cfg.model.init else non_embedding_params(cfg.model.size)


def finished_meta(data: DataSpec, study_dir: Path | None, node: Node | None) -> dict | None:
    """meta.json of the dataset's prepared folder: the one it names (`DataSpec.prepared`), else that of
    its prepare `node` in `study_dir` if that node finished (its marker is of the node's key). Of a folder
    it names that is gone since that node finished (`study/absent.py`), the counts the node recorded
    (`_recorded_counts`), so the report and plan of the study say the figures they said with the folder
    there; None (estimated) where it recorded none."""
    from encoderlab.study.runner import node_dir, read_marker

    marker = read_marker(Path(study_dir), node) if study_dir is not None and node is not None else None
    finished = marker is not None
    if data.prepared is not None and finished and not Path(data.prepared).exists():
        return _recorded_counts(marker.result)
    if data.prepared is not None:
        from encoderlab.study.prepared import check_corpus, prepared_meta

        meta = prepared_meta(data.prepared, data.name)
        check_corpus(meta, data.corpus, data.name, data.prepared)
        return meta
    if not finished:
        return None
    meta = node_dir(Path(study_dir), node) / "data" / "meta.json"
    if not meta.is_file():
        return None
    try:
        return jsonlines.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # damaged by hand: estimated, as before it was prepared
        return None


def _recorded_counts(result: dict) -> dict | None:
    """The counts of its data a finished prepare node recorded in its `result` (`nodes._recorded`: the
    meta.json's `unique_tokens`), when they hold the train split's, as `corpus_size` reads a meta.json;
    else None. Only these: the start checks read no other field of a folder gone (`runchecks.check_runs`)."""
    from encoderlab.data.packed import is_count

    meta = result.get("meta")
    unique = meta.get("unique_tokens") if isinstance(meta, dict) else None
    train = unique.get("train") if isinstance(unique, dict) else None
    return {"unique_tokens": {"train": train}} if is_count(train) and train > 0 else None


def corpus_size(data: DataSpec, meta: dict | None = None) -> CorpusSize:
    """The unique tokens of a dataset: counted from prepared data's `meta`, else estimated from its sources."""
    if meta is not None:
        unique = (meta.get("unique_tokens") or {}).get("train") or meta["splits"]["train"]["tokens"]
        where = f"the prepared folder {data.prepared}" if data.prepared else "the prepared data"
        recorded = meta.get("spec") if isinstance(meta.get("spec"), dict) else {}
        ids = recorded.get("vocab_size")  # read already: no tokenizer is loaded for it
        return CorpusSize(
            dataset=data.name,
            unique_tokens=unique,
            counted=True,
            how=f"counted in {where}",
            tokenizer_ids=ids if type(ids) is int else None,
        )
    parts = [_source_estimate(c, data.max_docs) for c in data.corpus]
    unknown = [how for tokens, how, _ in parts if tokens is None]
    if unknown:
        return CorpusSize(dataset=data.name, unique_tokens=None, counted=False, how="; ".join(unknown))
    from encoderlab.data.prepare import PrepareConfig

    kept = 1.0 - PrepareConfig.__dataclass_fields__["val_fraction"].default
    total = sum(tokens for tokens, _, _ in parts) * kept
    how = "estimated from " + "; ".join(how for _, how, _ in parts) + ", less the validation split"
    stops_early = len(parts) > 1 and data.stop == "first_exhausted"  # all_exhausted reads each source whole
    if stops_early:
        how += (
            "; a mixture stops when its first source runs out, so it may read less"
            " (one folder or glob entry reads each of its files whole, and `stop: all_exhausted` every entry)"
        )
    at_most = any(bound for _, _, bound in parts) or stops_early
    return CorpusSize(dataset=data.name, unique_tokens=total, counted=False, how=how, at_most=at_most)


def _source_estimate(source: str, max_docs: int | None) -> tuple[float | None, str, bool]:
    """(estimated tokens, how, whether the tokens are an upper bound) of one corpus entry; tokens None when
    it cannot be estimated."""
    from encoderlab.data.assets import ASSETS
    from encoderlab.data.assets.cache import read_manifest
    from encoderlab.data.corpora import CORPORA
    from encoderlab.data.filekinds import content_bytes
    from encoderlab.data.sources import parse_source, resolve_files

    source = parse_source(source).location  # the entry's files, whatever its #options
    if source in CORPORA:
        return _hub_estimate(CORPORA[source], max_docs)
    if source in ASSETS:
        manifest = read_manifest(source)
        if manifest is None:
            return None, f"{source}: not fetched (encoderlab assets fetch {source})", False
        share = min(1.0, max_docs / manifest["documents"]) if max_docs and manifest.get("documents") else 1.0
        chars = manifest["chars"] * share
        capped = f", first {count(max_docs, 'document')}" if share < 1 else ""
        return (
            chars / CHARS_PER_TOKEN,
            f"{source}: {short_number(chars)} characters / {CHARS_PER_TOKEN:g}{capped}",
            False,
        )
    try:  # the files `data prepare` would read (a glob, compressed files), sized as text
        files = resolve_files(source) or []
    except UserError as exc:  # a corpus prepare would refuse: say why, as the plan's reason
        return None, f"{source}: {exc}", False
    if not files:
        return None, f"{source}: no asset, named hub corpus or local file (prepare it to count)", False
    size, note = content_bytes(files)
    return size / CHARS_PER_TOKEN, f"{source}: {short_number(size)} bytes{note} / {CHARS_PER_TOKEN:g}", False


def _hub_estimate(c, max_docs: int | None) -> tuple[float | None, str, bool]:
    """A named hub corpus: the card's token count, else an upper bound from the card's bytes of every
    column (a split's text is one of them), else unknown."""
    if c.declared_tokens is None:
        if c.declared_bytes is None or max_docs is not None:
            return None, f"{c.name}: its card states no token count (prepare it to count)", False
        how = (
            f"{c.name}: at most the card's {short_number(c.declared_bytes)} bytes over all its columns / "
            f"{CHARS_PER_TOKEN:g} (the text is one of them; prepare it to count)"
        )
        return c.declared_bytes / CHARS_PER_TOKEN, how, True
    how = f"{c.name}: {c.declared_by}'s {short_number(c.declared_tokens)} {c.token_unit} tokens"
    if max_docs is None:
        return c.declared_tokens, how, False
    if c.tokens_per_doc is None:
        return (
            None,
            f"{how}, capped at {count(max_docs, 'document')} of unstated size (prepare it to count)",
            False,
        )
    capped = min(c.declared_tokens, max_docs * c.tokens_per_doc)
    return (
        capped,
        f"{how}, capped at {count(max_docs, 'document')} of ~{c.tokens_per_doc:,.0f} tokens each",
        False,
    )


def check_passes(plan: StudyPlan) -> None:
    """Refuse the study when its `max_passes` is exceeded (one line naming the fix)."""
    why = plan.refusal()
    if why:
        raise UserError(why)
