"""How far a study is from the paper whose claims it checks, said wherever the study is shown.

A study reproduces a paper only when it trains the paper's models on the paper's data with the
paper's tokenizer and evaluates them on the paper's tasks. The demo and cpu scales do none of this
(they fit 2 CPU cores), and a report that only said "holds at this scale" would let a reader take a
tiny model on 4M tokens for the paper's experiment. So a study names its paper (`StudySpec.paper`)
and `departures` compares the spec with that paper's setup (`PaperSetup`) aspect by aspect: data,
tokenizer, tasks, model, pretraining length, fine-tuning protocol. The departures are derived from
the spec every time, never written beside it, so a scale that changes its data changes what it says;
`study list`, the report's first section and docs/reproduce.md show them.

What counts as the paper's: the corpora of `PaperSetup.corpora` (any number of their documents: the
unique-token check of `study plan` is what says whether a cap is enough), the tokenizer by its hub id,
the suite with all its tasks and the paper's LR grid and seeds without a step cap, the model sizes,
and the recipes' own length and batch (a scale that passes none). Pretraining seeds are not compared:
a study may train more than the paper's one, which strengthens a claim rather than changing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from encoderlab.study.spec import StudySpec


@dataclass(frozen=True, kw_only=True)
class Departure:
    """One aspect in which a study differs from its paper."""

    aspect: str
    """data | tokenizer | tasks | model | pretraining | fine-tuning."""
    here: str
    """What the study does."""
    paper: str
    """What the paper did."""

    def sentence(self) -> str:
        return f"{self.aspect}: {self.here}, not {self.paper}"


@dataclass(frozen=True, kw_only=True)
class PaperSetup:
    """What a paper trained and evaluated on (papers.md), as a study's spec would say it."""

    short: str
    """The paper in two words (`study list`)."""
    title: str
    """How the report names the paper."""
    corpora: tuple[str, ...]
    """Corpus names that are the paper's data."""
    data: str
    """The paper's data, in words."""
    tokenizer: str
    """The paper's tokenizer (a hub id)."""
    tokenizer_aliases: tuple[str, ...] = ()
    """Other hub ids that carry the same tokenizer (ModernBERT-large's is ModernBERT-base's)."""
    tokenizer_text: str
    """The paper's tokenizer, in words."""
    suite: str
    """The evaluation suite of the paper's tasks."""
    suite_text: str
    """The paper's tasks, in words."""
    sizes: tuple[str, ...]
    """Model sizes the paper trained (a study that trains from scratch at another size departs)."""
    start_models: tuple[str, ...] = ()
    """Hub ids of the models the paper continues (empty: it trains from scratch at `sizes`)."""
    models: str = ""
    """The paper's models in words (empty: the sizes)."""
    training: str
    """The paper's pretraining length and batch, in words."""
    lrs: tuple[float, ...]
    """Fine-tuning LR grid."""
    seeds: tuple[int, ...]
    """Fine-tuning seeds."""


PAPERS: dict[str, PaperSetup] = {
    "paper1": PaperSetup(
        short="paper 1",
        title="paper 1 (Should We Still Pretrain Encoders with Masked Language Modeling?)",
        corpora=("fineweb-edu-10bt", "fineweb-edu-100bt", "fineweb-edu-350bt"),
        data="FineWeb-Edu (about 100B unique tokens, none repeated)",
        tokenizer="EuroBERT/EuroBERT-210m",
        tokenizer_text="EuroBERT's Llama-3 tokenizer (128,256 ids)",
        suite="paper",
        suite_text="the paper's 12 datasets (SC, TC, QA, IR) with EncodEval's protocol",
        sizes=("210m", "610m", "1b"),
        training="42,000 steps of 2,359,296 tokens (1,152 x 2,048)",
        lrs=(1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4),
        seeds=(0, 1, 2, 3, 4),
    ),
    "paper2": PaperSetup(
        short="paper 2",
        title="paper 2 (A Causal Language Modeling Detour Improves Encoder Continued Pretraining)",
        corpora=("biomed-enriched",),
        data="Biomed-Enriched PubMed Central paragraphs (60% of its English 50B mix, with medical "
        "instructions and MIMIC-III notes)",
        tokenizer="answerdotai/ModernBERT-base",
        tokenizer_aliases=("answerdotai/ModernBERT-large",),
        tokenizer_text="ModernBERT's tokenizer (50,368 ids)",
        suite="biomed",
        suite_text="its 11 English biomedical tasks with BioClinical-ModernBERT's protocol (the 6 on the "
        "hub: the biomed suite)",
        sizes=(),
        start_models=("answerdotai/ModernBERT-base", "answerdotai/ModernBERT-large"),
        models="ModernBERT-base or -large, continued",
        training="10B (Base), 25B or 50B (Large) tokens in batches of 384 x 8,192, then a 10% decay",
        lrs=(5e-5,),
        seeds=(42, 43, 44, 45, 46),
    ),
}
"""The papers a built-in study can name (`StudySpec.paper`)."""


def departures(spec: StudySpec) -> tuple[Departure, ...]:
    """Every aspect in which `spec` differs from its paper's setup (empty: it is the paper's, or it
    names no paper)."""
    paper = PAPERS.get(spec.paper)
    if paper is None:
        return ()
    compared = {r.data for r in spec.runs if r.name == spec.baseline}  # the data the claims compare on
    data = [d for d in spec.data if d.name in compared] or list(spec.data[:1])
    out = []
    corpora = sorted({c for d in data for c in d.corpus})
    if not set(corpora) <= set(paper.corpora):
        capped = {d.max_docs for d in data if d.max_docs}
        cap = f" (first {min(capped):,} documents)" if capped else ""
        out.append(Departure(aspect="data", here=" + ".join(corpora) + cap, paper=paper.data))
    tokenizers = sorted({d.tokenizer for d in data})
    if not set(tokenizers) <= {paper.tokenizer, *paper.tokenizer_aliases}:
        trainer = {
            x.name: x for x in spec.data if x.tokenizer == "train"
        }  # datasets whose tokenizer is reused
        here = ", ".join(
            f"a {d.vocab_size:,}-id BPE trained on the corpus"
            if d.tokenizer == "train"
            else f"a {trainer[d.tokenizer].vocab_size:,}-id BPE trained on {' + '.join(trainer[d.tokenizer].corpus)}"
            if d.tokenizer in trainer and d.tokenizer != d.name
            else d.tokenizer
            for d in data
        )
        out.append(Departure(aspect="tokenizer", here=here, paper=paper.tokenizer_text))
    ev = spec.eval
    if ev.suite != paper.suite or ev.tasks:
        tasks = ", ".join(ev.tasks) if ev.tasks else "all"
        out.append(Departure(aspect="tasks", here=f"{ev.suite} suite: {tasks}", paper=paper.suite_text))
    model = _model_departure(spec, paper)
    if model is not None:
        out.append(model)
    if any(v is not None for v in (spec.steps, spec.seq_len, spec.micro_batch, spec.grad_accum)):
        rows = (spec.micro_batch or 0) * (spec.grad_accum or 1)
        here = f"{spec.steps:,} steps of {rows * (spec.seq_len or 0):,} tokens ({rows} x {spec.seq_len})"
        out.append(Departure(aspect="pretraining", here=here, paper=paper.training))
    if ev.lrs != paper.lrs or ev.seeds != paper.seeds or ev.max_steps is not None:
        grid = f"LRs {', '.join(f'{x:g}' for x in ev.lrs)} x {len(ev.seeds)} seeds"
        cap = f", at most {ev.max_steps} steps per run" if ev.max_steps is not None else ""
        paper_grid = (
            f"LRs {', '.join(f'{x:g}' for x in paper.lrs)} x {len(paper.seeds)} seeds, the tasks' steps"
        )
        out.append(Departure(aspect="fine-tuning", here=grid + cap, paper=paper_grid))
    return tuple(out)


def _model_departure(spec: StudySpec, paper: PaperSetup) -> Departure | None:
    """The model of the compared runs against the paper's: its start model when the paper continues
    one, else the size trained from scratch."""
    wanted = paper.models or "/".join(paper.sizes)
    if paper.start_models:
        start = next((r.init for r in spec.runs if r.name == spec.baseline), None)
        if start in paper.start_models:
            return None
        own = start in {r.name for r in spec.runs}
        here = (
            f"a {spec.size or ''} model the study pretrains ({start})".replace("a  ", "a ") if own else start
        )
        return Departure(aspect="model", here=here or "none", paper=wanted)
    if spec.size is not None and spec.size not in paper.sizes:
        return Departure(aspect="model", here=spec.size, paper=wanted)
    return None


def setup_line(spec: StudySpec) -> str:
    """One line for `study list`: the paper's setup, or the aspects it departs in."""
    paper = PAPERS.get(spec.paper)
    if paper is None:
        return "(not compared with a paper's setup)"
    gone = departures(spec)
    if not gone:
        return f"{paper.short}'s setup"
    return f"NOT {paper.short}'s setup: " + ", ".join(d.aspect for d in gone)


def setup_text(spec: StudySpec) -> str:
    """The report's first paragraph: whether the study is the paper's experiment, and how it is not."""
    paper = PAPERS.get(spec.paper)
    if paper is None:
        return "This study names no paper; its claims are checked on its own setup."
    gone = departures(spec)
    if not gone:
        return (
            f"This scale runs {paper.title}'s setup: its data, tokenizer, tasks, model sizes, pretraining length "
            "and fine-tuning protocol. The claims below test the paper's findings on it."
        )
    listed = "; ".join(d.sentence() for d in gone)
    return (
        f"**This scale does not reproduce {paper.title}.** It differs in {listed}. The claims below say what "
        "holds at this scale; only a scale without these differences tests the paper's own result."
    )
