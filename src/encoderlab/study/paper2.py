"""Paper 2's study: a CLM detour against the MLM baseline when continuing an existing encoder on a
domain, with CKA against a seed-noise twin and, from scale `cpu` up, the paper's freezing runs.

The start model differs by scale, because the claim can only be tested from a model that has an MLM
head and is not at the ceiling of the evaluation:
- `demo`: MiniLM (offline). A sentence-embedding model with no MLM head that starts at the ceiling of
  pubmedqa-retrieval, so the demo shows the pipeline, not the effect.
- `cpu`: a `tiny` MLM encoder the study pretrains itself on general English (`base`, MLM-30 with
  ModernBERT's masking, a node cached like any other), continued on the offline biomedical corpus in
  the base's own tokenizer. The detour and the baseline are trained at the scale's three pretraining
  seeds from that one base, so "the detour beats the baseline" is tested over pretraining runs.
- `gpu-*`: ModernBERT-base or -large from the hub continued on Biomed-Enriched (paper 2's English
  corpus, streamed from the hub), evaluated with paper 2's protocol (the `biomed` suite: one LR, five
  seeds, best epoch).

A study has one suite, so the code domain, which paper 2 did not evaluate, is a second study built by
the same function (`paper2_detour_code`, catalogue entry `paper2-detour-code`, gpu scales only): the
same runs and claims on starcoderdata's Python, evaluated on `code-retrieval` at paper 2's LR and seeds.
Its `cpt` claim (continued pretraining beats the start) is left out: code-retrieval's functions come
from CPython's standard library, which The Stack holds copies of and starcoderdata is not
decontaminated against, so a continued model has read the test functions with their docstrings. The
detour and the baseline read the same data, so their comparison stays controlled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from encoderlab.errors import UserError
from encoderlab.study.scales import Scale, common
from encoderlab.study.spec import CkaSpec, ClaimSpec, DataSpec, EvalSpec, RunSpec, StudySpec

_DETOUR_DEMO_RUNS = {"steps": 40, "micro_batch": 8}
"""The demo continues MiniLM (22M parameters, 30k vocabulary): ~2-3 s per step on 2 shared CPU
cores, so three runs of the scale's 400 steps alone would take over an hour."""
_DETOUR_DEMO_EVAL = EvalSpec(suite="domain", lrs=(1e-4,), seeds=(0, 1), max_steps=12)
"""One task, one LR, two seeds, 12 fine-tuning steps: a smoke signal that fits the 15-minute demo
(a pubmedqa-retrieval node took about 97 s on 2 cores, the whole demo 12 min). Profiled in-process on
2026-12-06 (one thread, a machine loaded by other jobs; `fine_tune` then `score_tuned` on MiniLM): 145
CPU-s per node, 111 of them the 12 contrastive steps (32 queries and 32 abstracts cut at 192 tokens,
forward and backward, linear layers' matmuls 54% of a step, dropout's masks 9%), 28 scoring 210 val and
630 test texts without autograd (~34 ms a text), 5 loading the model and the tokenised task; peak RSS
3.9 GB, the step's fp32 activations (transformers' attention with dropout keeps its probabilities for the
backward), so a worker per node at `--jobs 2` wants ~8 GB. Nothing is recomputed or held twice: each node
embeds its own fine-tuned model's corpus once, and consecutive nodes of one model in a process load it
once (`nodes._LOADED`); over 3 nodes in one process the live tensors stayed at the model's 87 MB
(`tests/eval/test_scoring_without_grad.py` guards both)."""

_CPU_CONTINUED_STEPS = 200
"""Steps of each continued run at `cpu` (16 x 256 tokens, so 819k tokens, plus a 10% decay). Measured
on one thread on 2026-12-01: a `tiny` CLM step 1.05 CPU-s, an MLM step 0.75 (the 8k-vocabulary head
over every token is what CLM adds), so a detour run costs ~225 CPU-s and a baseline ~165."""
_CPU_BASE_LR = 2e-3
"""Peak LR of the cpu base (paper 1's 5e-4 left a 128-wide model near unigram statistics after 1,000
steps: MLM loss 6.6-6.9 at steps 400-450, measured 2026-12-01; the base stands in for a finished
encoder, so it trains at the LR a model this narrow takes)."""
_CPU_EVAL = EvalSpec(
    suite="domain", tasks=("pubmedqa-retrieval",), lrs=(1e-3,), seeds=(0, 1, 2), max_steps=50
)
"""Paper 2's protocol shape (one fixed LR, several fine-tuning seeds) on the offline biomedical task:
pubmedqa-retrieval, capped at 50 fine-tuning steps of 32 pairs (about 2.7 passes over its 600 training
queries). The LR is the best of a small grid measured on the base (docs/studies.md), chosen before any
continued run existed, so it favours neither arm."""

_DETOUR_GPU_MODELS = {
    "210m": ("answerdotai/ModernBERT-base", 10_000_000_000),
    "610m": ("answerdotai/ModernBERT-large", 25_000_000_000),
    "1b": ("answerdotai/ModernBERT-large", 50_000_000_000),
}
"""(model, CLM or MLM tokens) of paper 2's grid (Rian-T/thesis, chapter 5 and appendix) by gpu
scale: Base at 10B, Large at 25B
(the French sweep's best) and at 50B (the English runs); each adds a 10% decay."""
_MODERNBERT_VOCAB = 50_368
"""ModernBERT's vocabulary (answerdotai/ModernBERT-base's config)."""


_TWIN_SEED_OFFSET = 25
"""The baseline's seed twin trains at the recipe's seed 17 + 25 = 42: paper 2's seed-noise control pairs
MLM models trained with seeds 17 and 42 (Rian-T/thesis plots/chapter5/data/cka_mlm_control_heldout.json,
"MLM s17 vs MLM s42"), "on identical data" (chapter 5 article.tex L332), the data-shuffle seed 42
shared (appendix.tex L194-195).

What the two seeds changed there is not stated, and the detour's training code is not public. In
ModernBERT's code (Composer, sequence packing, as the paper says) the training seed seeds torch
(`seed_all`, main.py L370, each rank at seed + rank) and the `shuffle_seed` key seeds both the data order
and the MLM masks (text_data.py L386, L414; sequence_packer.py L179). So if paper 2 kept that code, its
twin kept the masks too and differed by dropout: attention-output dropout 0.1 in every ModernBERT and
BioClinical-ModernBERT training yaml. encoderlab's own models and ModernBERT's hub configs have no dropout
(MiniLM, the demo's start model, keeps its 0.1, also drawn from the training seed) and a missing head is
seeded from the start model's weights, so at `cpu` and the gpu scales the training seed drives the masks alone: seeding the twin's masks
from the data seed would leave it the baseline itself on the CPU (a divergence of 0, not a noise floor).
The twin measures mask noise where the paper probably measured dropout noise, neither known to be the
larger (docs/analysis.md, with the citations)."""


def _paper2_grid(suite: str, tasks: tuple[str, ...] = ()) -> EvalSpec:
    """`suite` (its `tasks`) at paper 2's one LR and five seeds."""
    from encoderlab.eval.suites import PAPER2_LRS, PAPER2_SEEDS

    return EvalSpec(suite=suite, tasks=tasks, lrs=PAPER2_LRS, seeds=PAPER2_SEEDS)


@dataclass(frozen=True)
class Domain:
    """A domain the detour is tested on: its runs' suffix, corpora, evaluation and CKA texts."""

    name: str
    """Suffix of the runs, claims and dataset (`detour-biomed`)."""
    words: str
    """The corpus in words, for the description."""
    gpu_corpus: str
    """The named hub corpus (`data.corpora`) of the gpu scales."""
    gpu_eval: Callable[[], EvalSpec]
    """The evaluation of the gpu scales."""
    cka_texts: str
    """Asset of the texts CKA compares layers on."""
    cpt_claim: bool = True
    """Check that continued pretraining beats the start model (False where the test set is in the corpus)."""


BIOMED = Domain(
    name="biomed",
    words="a biomedical corpus",
    gpu_corpus="biomed-enriched",  # paper 2's English corpus; the cpu scales read the offline asset
    gpu_eval=lambda: _paper2_grid("biomed"),
    cka_texts="pubmedqa",  # PubMed abstracts, as the paper's: not in `biomed`; unchecked against Biomed-Enriched
)
CODE = Domain(
    name="code",
    words="Python code (starcoderdata)",
    gpu_corpus="starcoderdata-python",
    gpu_eval=lambda: _paper2_grid("domain", ("code-retrieval",)),
    cka_texts="code-python",  # CPython's standard library: code, as the corpus (not held out of it)
    cpt_claim=False,  # code-retrieval's stdlib functions are in The Stack (the module docstring)
)


def _freeze_runs(dom: str, shared: dict) -> list[RunSpec]:
    """Paper 2's freezing runs (2.7): low or middle layers frozen during CLM, low layers during the decay."""
    return [
        RunSpec(
            name=f"freeze-low-{dom}",
            label=f"detour, low layers frozen in CLM ({dom})",
            recipe="detour-freeze-low",
            **shared,
        ),
        RunSpec(
            name=f"freeze-mid-{dom}",
            label=f"detour, middle layers frozen in CLM ({dom})",
            recipe="detour-freeze-mid",
            **shared,
        ),
        RunSpec(
            name=f"freeze-low-decay-{dom}",
            label=f"detour, low layers frozen in the decay ({dom})",
            recipe="detour-freeze-low-decay",
            **shared,
        ),
    ]


def _freeze_claims(dom: str) -> list[ClaimSpec]:
    return [
        ClaimSpec(
            id=f"freeze-{dom}",
            text=(  # what the runs test; the paper's reading of it is attributed, not claimed
                f"Freezing the middle layers during CLM beats freezing the low layers ({dom}; paper 2, 2.7: "
                "61.2 vs 59.3, read there as the detour's gain living in the low layers)"
            ),
            kind="beats",
            a=f"freeze-mid-{dom}",
            b=f"freeze-low-{dom}",
        ),
        ClaimSpec(
            id=f"freeze-decay-{dom}",
            text=(
                f"Freezing the low layers during the decay beats freezing them during CLM ({dom}; paper 2, 2.7: "
                "61.2 vs 59.3, read there as the low layers changing during CLM, not the decay)"
            ),
            kind="beats",
            a=f"freeze-low-decay-{dom}",
            b=f"freeze-low-{dom}",
        ),
    ]


def _cpu_base(scale: Scale, tasks: tuple[str, ...]) -> RunSpec:
    """The MLM encoder the cpu scale continues: `tiny`, MLM-30 with ModernBERT's masking, on general English."""
    return RunSpec(
        name="base",
        label="MLM base, general English (start)",
        recipe="pfs-mlm",
        params={"ratio": 0.3},
        overrides={
            "optim.lr": _CPU_BASE_LR,
            "phases.0.objective.selection": "bernoulli",
            "phases.0.objective.replacement": "80-10-10",
        },
        data="general",
        group="reference",
        steps=scale.steps,
        tasks=tasks,
    )


@dataclass(frozen=True)
class _Start:
    """Where a scale's continued runs start from, and what they read (see the module docstring)."""

    base: str
    """The continued runs' `init`: a hub or asset model, or the run `base` at cpu."""
    start: RunSpec
    """The reference row: the start model as it is (evaluated), or the cpu base (trained here)."""
    data: tuple[DataSpec, ...]
    tasks: tuple[str, ...] | None
    """The evaluated tasks; None for every task of the suite."""
    seeds: tuple[int, ...] | None = None
    """Pretraining seeds of the detour and the baseline; None for the run's one seed."""
    params: dict = field(default_factory=dict)
    """Recipe parameters of every continued run (the token budget at the gpu scales)."""

    def shared(self, dom: str) -> dict:
        """The RunSpec fields every continued run on `dom` shares."""
        return dict(init=self.base, data=dom, group=dom, tasks=self.tasks, params=self.params)


def _gpu_start(scale: Scale, dom: Domain) -> _Start:
    """ModernBERT from the hub, continued on the domain's hub corpus in its own tokenizer."""
    base, tokens = _DETOUR_GPU_MODELS[scale.size]
    data = DataSpec(
        name=dom.name,
        corpus=(dom.gpu_corpus,),
        tokenizer=base,
        vocab_size=_MODERNBERT_VOCAB,  # the tokenizer's own (a plan's estimates read it)
        max_docs=scale.max_docs,
    )
    start = RunSpec(name="start", label=f"{base} (start)", init=base, group="reference", data=dom.name)
    return _Start(base=base, start=start, data=(data,), tasks=None, params={"tokens": tokens})


def _cpu_start(scale: Scale, dom: str, tasks: tuple[str, ...]) -> _Start:
    """The study's own tiny MLM base on general English, continued on the domain in its tokenizer."""
    data = (
        DataSpec(
            name="general", corpus=("general-en",), vocab_size=scale.vocab_size, max_docs=scale.max_docs
        ),
        DataSpec(name=dom, corpus=(dom,), tokenizer="general", max_docs=scale.max_docs),
    )
    return _Start(
        base="base", start=_cpu_base(scale, tasks), data=data, tasks=tasks, seeds=scale.claim_seeds or None
    )


def _demo_start(scale: Scale, dom: str, tasks: tuple[str, ...]) -> _Start:
    """MiniLM (offline), continued on the domain in its own tokenizer."""
    base = "minilm"
    start = RunSpec(
        name="start", label=f"{base} (start)", init=base, group="reference", data=dom, tasks=tasks
    )
    data = DataSpec(name=dom, corpus=(dom,), tokenizer=base, max_docs=scale.max_docs)
    return _Start(base=base, start=start, data=(data,), tasks=tasks)


def _continued_runs(dom: str, s: _Start, twin_evaluated: bool) -> list[RunSpec]:
    """The detour, the MLM baseline, and the baseline's seed-noise twin for CKA."""
    shared = s.shared(dom)
    return [
        RunSpec(name=f"detour-{dom}", label=f"CLM detour ({dom})", recipe="detour", seeds=s.seeds, **shared),
        RunSpec(
            name=f"baseline-{dom}",
            label=f"MLM baseline ({dom})",
            recipe="detour-baseline",
            seeds=s.seeds,
            **shared,
        ),
        RunSpec(  # the CKA noise floor: the baseline with another training seed, same data order
            name=f"baseline-{dom}-s2",
            label=f"MLM baseline, seed twin ({dom})",
            recipe="detour-baseline",
            seed=_TWIN_SEED_OFFSET,
            seeds=s.seeds and s.seeds[:1],
            evaluate=twin_evaluated,  # at cpu the baseline's other pretraining seeds are evaluated
            **shared,
        ),
    ]


def _detour_claims(dom: str, scored_on: str) -> list[ClaimSpec]:
    """The detour beats the baseline on what the scale scores (`_scored_on`), and their CKA divergence
    sits in the low layers."""
    return [
        ClaimSpec(
            id=f"detour-{dom}",
            text=f"The CLM detour beats the MLM baseline on {scored_on}",
            kind="beats",
            a=f"detour-{dom}",
            b=f"baseline-{dom}",
        ),
        ClaimSpec(
            id=f"cka-{dom}",
            # relative to seed noise: the raw divergence is largest in the deep layers (paper 2's own data)
            text=f"Relative to seed noise, CKA divergence from the detour is concentrated in the low layers ({dom})",
            kind="cka_low_layers",
            a=f"detour-{dom}",
            b=f"baseline-{dom}",
        ),
    ]


def _scored_on(evaluation: EvalSpec, tasks: tuple[str, ...]) -> str:
    """What the detour claim is scored on, in words: the task(s) named (the offline pubmedqa-retrieval
    below the gpu scales, code-retrieval), or the whole suite with its size (paper 2's biomedical tasks on
    the hub: 7, not the paper's 11, docs/reproduce.md). It said "the biomed domain suite" at every scale."""
    from encoderlab.eval.suites import SUITES

    named = evaluation.tasks or tasks
    if named:
        return ", ".join(named)
    return f"the {evaluation.suite} suite ({len(SUITES[evaluation.suite])} tasks)"


def _cpt_claim(dom: str, start: str) -> ClaimSpec:
    return ClaimSpec(
        id=f"cpt-{dom}",
        text=f"Continued pretraining on the domain (the MLM baseline) beats the start model ({dom})",
        kind="beats",
        a=f"baseline-{dom}",
        b=start,
    )


def paper2_detour(scale: Scale, domain: Domain = BIOMED) -> StudySpec:
    """Paper 2: a CLM detour against the MLM baseline when continuing an existing encoder on a domain."""
    own_base = scale.name == "cpu"
    dom, tasks = domain.name, ("pubmedqa-retrieval",)
    if scale.real_models:
        s = _gpu_start(scale, domain)
    elif domain is not BIOMED:  # the catalogue offers other domains at gpu scales only
        raise UserError(f"paper 2's detour on the {dom} domain runs at the gpu scales only, not {scale.name}")
    else:
        s = _cpu_start(scale, dom, tasks) if own_base else _demo_start(scale, dom, tasks)
    runs = [s.start, *_continued_runs(dom, s, twin_evaluated=scale.real_models)]
    evaluation = {"demo": _DETOUR_DEMO_EVAL, "cpu": _CPU_EVAL}.get(scale.name) or domain.gpu_eval()
    claims = _detour_claims(dom, _scored_on(evaluation, () if scale.real_models else tasks))
    if scale.full:
        runs += _freeze_runs(dom, s.shared(dom))
        claims += _freeze_claims(dom) + [_cpt_claim(dom, s.start.name)] * domain.cpt_claim
    cka = CkaSpec(
        a=f"detour-{dom}",
        b=f"baseline-{dom}",
        noise=(f"baseline-{dom}-s2", f"baseline-{dom}"),
        texts=domain.cka_texts,
        n_texts=scale.cka_texts,
    )
    return StudySpec(
        name="paper2-detour" + ("" if domain is BIOMED else f"-{dom}"),
        paper="paper2",
        description=(
            f"Paper 2: continue {'a tiny MLM encoder pretrained here on general English' if own_base else s.base} "
            f"on {domain.words} with a CLM detour (CLM, then a short MLM-15% decay) against the MLM "
            "baseline (MLM-30%, then the same decay) on identical data, steps and tokens (not FLOPs: CLM's head "
            "predicts every position); evaluation on the domain "
            "tasks, layer-wise CKA against a seed-noise twin, and at full scales paper 2's freezing runs."
        ),
        data=s.data,
        runs=tuple(runs),
        eval=evaluation,
        baseline=f"baseline-{dom}",
        cka=(cka,),
        claims=tuple(claims),
        # measured (docs/studies.md); gpu: estimated from the runs
        expected_minutes={"demo": 12, "cpu": 40}.get(scale.name, 0.0),
        **{
            **common(scale),
            "size": scale.size if own_base else None,
            **{"demo": _DETOUR_DEMO_RUNS, "cpu": {"steps": _CPU_CONTINUED_STEPS}}.get(scale.name, {}),
        },
    )


def paper2_detour_code(scale: Scale) -> StudySpec:
    """Paper 2's detour on Python code (gpu scales): `paper2_detour` on the `CODE` domain."""
    return paper2_detour(scale, CODE)
