"""What a study checks of its pretraining runs before anything runs, as each run's node would check them.

- against its start model's positions (`study.positions`: a hub id's from a mirror or the local hub cache,
  at `study run` from its configs downloaded first, never its weights);
- against memory (`train.memory.check_fits`, when the run trains on the CPU: on a GPU the check needs CUDA,
  which the study process leaves to its nodes; `planned_elsewhere` says when a plan is made away from them);
- against its dataset (`data.packed.check_one_row`, the reader's own check): counted where the prepared
  data is known (a folder given with `--prepared`, or this study's finished prepare node), else, before
  preparation, bounded from above by one token per byte of the documents prepare would read plus
  `PER_DOCUMENT` each. That scan stops as soon as a row's worth is read, so it reads a few documents of a
  usable corpus and all of one too short for a row; a hub corpus (a download) is the node's;
- its freeze spec against its model's depth (`check_freeze_depths`).

Called by `checks.check_start` / `check_fetched` and by `study plan`; apart from the other checks because
these read the resolved run configs (`graph.pretraining`), not the spec's sources.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.study.absent import gone_prepared
from encoderlab.study.graph import Node, Pretraining, pretraining
from encoderlab.study.positions import check_cka_lengths, check_eval_lengths, check_start_models
from encoderlab.study.spec import DataSpec, StudySpec
from encoderlab.words import count

PER_DOCUMENT = 4
"""Tokens a document may hold beyond one per byte of its text: its bos and eos, and a tokenizer's
word-start marker before its first word (a SentencePiece dummy prefix), with room to spare."""


def planned_elsewhere(spec: StudySpec) -> bool:
    """Whether the study is sized for GPUs (its `hardware` names them, as the gpu-* scales' does) and
    none is visible here: `study plan` on a login node or laptop, whose CPU memory says nothing of the
    GPUs the runs will train on (every 610m and 1b plan was refused as too large for this CPU)."""
    from encoderlab.train.start import cuda_visible

    return "GPU" in spec.hardware and not cuda_visible()


def elsewhere_note(spec: StudySpec) -> str:
    """`study plan`'s note when memory goes unchecked because the study is `planned_elsewhere` (else "")."""
    if not planned_elsewhere(spec):
        return ""
    return (
        f"note: memory is not checked: this study is sized for {spec.hardware} and no CUDA device is "
        "visible here; `study run` checks each run on the machine it trains on"
    )


def check_runs(
    spec: StudySpec,
    study_dir: Path | None = None,
    nodes: Iterable[Node] = (),
    memory: bool = True,
    fetched: frozenset[str] | None = None,
    trained: list[Pretraining] | None = None,
    fetch: frozenset[str] = frozenset(),
) -> None:
    """Refuse a pretraining run whose rows its node would refuse (see the module docstring): longer than
    its start model's positions, beyond the memory of the CPU it trains on (unless not `memory`), or
    longer than its dataset. With `fetched` (`check_fetched`), only what reads these assets, just fetched:
    the positions of start models when one is among them, the rows of a dataset whose corpus reads one
    (and that no prepared data counts). `trained`: the study's `pretraining(spec)` when the caller has it
    already. Not runs on a dataset whose `--prepared` folder is gone (all finished: `absent.py`). `fetch`:
    the start models whose configs may be downloaded for their positions (`check_start`'s hub ids;
    `study plan` downloads none, reading mirrors and the local hub cache)."""
    from encoderlab.study.needs import corpus_locations
    from encoderlab.study.plan import finished_meta

    nodes = list(nodes)
    models = [p for p in (pretraining(spec) if trained is None else trained) if p.config is not None]
    if fetched is None:
        check_freeze_depths(spec, models)
    if fetched is None or any(r.init in fetched for r in spec.runs):
        check_cka_lengths(spec, limits := check_start_models(spec, models, fetch), fetch)
        check_eval_lengths(spec, nodes, limits, fetch)
    models = [p for p in models if p.run.data not in gone_prepared(spec)]
    prepares = {n.name: n for n in nodes if n.kind == "prepare"}
    metas = {d.name: finished_meta(d, study_dir, prepares.get(f"prepare/{d.name}")) for d in spec.data}
    for p in models if memory else ():
        _check_memory(spec, p, metas[p.run.data])
    longest: dict[str, Pretraining] = {}
    for p in models:
        if p.run.data not in longest or p.config.layout.seq_len > longest[p.run.data].config.layout.seq_len:
            longest[p.run.data] = p
    for name, p in longest.items():
        d = spec.dataset(name)
        if fetched is None or (metas[name] is None and not fetched.isdisjoint(corpus_locations(d.corpus))):
            _check_rows(spec, d, p, metas[name])


def check_freeze_depths(spec: StudySpec, models: list[Pretraining]) -> None:
    """Refuse a run whose freeze spec its model's depth cannot take, as its node would (`train.step`):
    `detour-freeze-low` on a `nano` model (2 layers) failed after its base had trained, with "give the
    layers explicitly, e.g. 0", which no recipe parameter of a study gives. A model from scratch has its
    size's depth, a run continued from another run of the study that run's; a start model from outside
    the study (its depth known once loaded) is left to the node."""
    from encoderlab.model.config import ModelConfig
    from encoderlab.train.freeze import PRESETS, parse_layers

    depths: dict[str, int | None] = {}  # model id -> its blocks
    for p in models:
        cfg = p.config
        fresh = None if cfg.model.init else ModelConfig.from_size(cfg.model.size, 1).n_layers
        depths[p.model] = depths.get(p.base) if p.base is not None else fresh
        for freeze in (ph.freeze for ph in cfg.phases if ph.freeze and depths[p.model] is not None):
            try:
                parse_layers(freeze, depths[p.model], owner="its model has")
            except UserError as exc:
                why = "paper 2's low/mid/late groups need at least 3" if freeze in PRESETS else str(exc)
                raise UserError(
                    f"study {spec.name}, run {p.run.name}: it freezes {freeze}, but its model has "
                    f"{count(depths[p.model], 'layer')}: {why}; train it at a size of more layers"
                ) from None


def _check_memory(spec: StudySpec, p: Pretraining, meta: dict | None) -> None:
    """The pretraining node's device and memory checks (`TrainStep`), for a run on the CPU. The
    vocabulary is the prepared data's when known, else left out: the estimate stays a lower bound."""
    from encoderlab.model.config import ModelConfig
    from encoderlab.train.memory import check_fits
    from encoderlab.train.start import cuda_visible, run_device

    cfg = p.config
    try:
        if run_device(cfg, cuda_visible()) == "cpu":
            vocab = meta["spec"]["vocab_size"] if meta is not None else 1
            check_fits(None if cfg.model.init else ModelConfig.from_size(cfg.model.size, vocab), cfg, "cpu")
    except UserError as exc:
        raise UserError(f"study {spec.name}, run {p.run.name}: {exc}") from None


def _check_rows(spec: StudySpec, d: DataSpec, p: Pretraining, meta: dict | None) -> None:
    """Refuse the longest rows read from dataset `d` (run `p`'s) when not one fits in its train split,
    naming what the study file sets them with: `seq_len` (the study's, or the run's recipe param), unless
    an override `layout.seq_len` (the run's or the study's `run_overrides`) wins over it or the recipe takes
    none (a smoke recipe): "lower seq_len" then changed nothing."""
    from encoderlab.data.packed import check_one_row
    from encoderlab.train.recipes import recipe_defaults

    where, seq_len = f"study {spec.name}, run {p.run.name}: ", p.config.layout.seq_len
    overridden = "layout.seq_len" in {**spec.run_overrides, **p.run.overrides}
    knob = "seq_len" if not overridden and "seq_len" in recipe_defaults(p.run.recipe) else "layout.seq_len"
    if meta is not None:
        folder = d.prepared or f"dataset {d.name}'s prepared data"
        check_one_row(
            meta["splits"]["train"]["tokens"], seq_len, f"{where}the train split of {folder}", knob=knob
        )
        return
    bound = tokens_at_most(d, seq_len)
    if bound is not None:
        tokens, docs = bound
        where = f"{where}dataset {d.name} ({count(docs, 'document')}, before preparing)"
        check_one_row(tokens, seq_len, where, "at most ", knob=knob)


def tokens_at_most(d: DataSpec, enough: int) -> tuple[int, int] | None:
    """(an upper bound on the tokens of dataset `d`, its documents) from the documents prepare would
    read, in its order and up to its `max_docs`; None once `enough` tokens are possible, and for a hub
    corpus (the node downloads it) or a corpus that cannot be read (its node says why)."""
    from encoderlab.data.corpora import CORPORA
    from encoderlab.data.mixing import mix_documents
    from encoderlab.study.needs import corpus_locations, corpus_sources

    if any(c in CORPORA or c.startswith("hf:") for c in corpus_locations(d.corpus)):
        return None
    total = docs = 0
    try:
        for doc in itertools.islice(mix_documents(corpus_sources(d.corpus), seed=d.seed), d.max_docs):
            docs, total = docs + 1, total + len(doc.text.encode("utf-8")) + PER_DOCUMENT
            if total >= enough:
                return None
    except UserError:
        return None
    return total, docs
