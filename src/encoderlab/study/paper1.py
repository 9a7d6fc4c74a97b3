"""Paper 1's studies: pretraining from scratch (MLM ratios, CLM, CLM then MLM) and continued
pretraining (a CLM base and an MLM base each continued with MLM), as functions of a `Scale`.

At the gpu scales a study is paper 1's experiment: FineWeb-Edu through EuroBERT's tokenizer (the
Llama-3 vocabulary, 128,256 ids), the paper's model sizes, recipes at their own length and batch, and
the `paper` suite of 12 datasets with EncodEval's protocol and scores. The demo and cpu scales keep everything
offline and small (a local corpus, a BPE trained on it, pocket tasks, a `tiny` model); `StudySpec.paper`
makes `study list` and the report say so (`study/fidelity.py`).

FineWeb-Edu at paper scale. A 42k-step run reads 42,000 x 2,359,296 = 99.1B tokens, and paper 1 never
repeats one. The 100BT sample holds 100B GPT-2 tokens, fewer in Llama-3's larger vocabulary, so a run
would wrap around it; the studies read the first documents of the 350BT sample instead, capped at what
their longest chain of runs reads (`fineweb_docs`), so preparing it costs what is trained on.
"""

from __future__ import annotations

import math

from encoderlab.data.corpora import CORPORA
from encoderlab.study.scales import Scale, common, eval_spec, steps_at
from encoderlab.study.spec import ClaimSpec, DataSpec, RunSpec, StudySpec
from encoderlab.words import percent_text

PAPER1_TOKENIZER = "EuroBERT/EuroBERT-210m"
"""Paper 1's tokenizer: EuroBERT's, the Llama-3 vocabulary (128,256 ids, mask `<|mask|>` = 128002)."""
PAPER1_VOCAB = 128_256
"""Its size, which `study plan`'s estimates assume before the tokenizer is read."""
PAPER1_CORPUS = "fineweb-edu-350bt"
"""Paper 1's data: FineWeb-Edu (the named hub corpus of `data/corpora.py`)."""
PAPER1_TOKENS_PER_STEP = 1152 * 2048
"""The recipes' batch: 1,152 rows of 2,048 tokens (paper 1's appendix: 2,359,296 tokens a step)."""
GPT2_TOKENS_PER_DOC = CORPORA[PAPER1_CORPUS].tokens_per_doc
"""FineWeb-Edu's documents hold about 1,000 GPT-2 tokens each (`data.corpora`)."""
LLAMA3_PER_GPT2 = 0.85
"""Llama-3's tokenizer spends fewer tokens than GPT-2's on English web text; 0.85 assumed, not measured."""
PAPER1_STEPS = 42_000
"""Paper 1's full runs (its longest budget)."""
PAPER1_EARLY = (5_000, 10_000, 20_000, 40_000)
"""Paper 1's data-efficiency points of its 42k MLM-40 and CLM runs: it reports both at 5k and 40k steps
(undecayed checkpoints of the long runs) and puts CLM ahead until about 10k (SC, QA) and 20k steps (IR).
The authors' saved evaluations also score 1k and 2k (EncodEval `results/610m-{mlm40,clm}-42k-{1000,2000,
5000,10000,20000,40000}/`; no 3k, 15k or 30k): those two, inside the 2k warmup, are not run here, so the
`clm-early` claim compares the first point paper 1 states, 5k."""
PAPER1_SWITCH = {
    (42_000, 0.25): 10_000,
    (42_000, 0.75): 32_000,
    (22_000, 0.25): 5_000,
    (22_000, 0.75): 17_000,
}
"""(budget, CLM share) -> the step paper 1 switched from CLM to MLM where its checkpoints' names say another
step than the share's. The names are those of the authors' saved evaluations (hgissbkh/EncodEval 7e03774,
`results/610m-clm-{5k,11k}-mlm40-22k/`, `-{10k,21k,32k}-mlm40-42k/`, `-{3k,6k,9k}-mlm40-12k/`; no
`-6k-mlm40-22k`, `-16k-mlm40-22k` or `-31k-mlm40-42k`) and of the HF org `MLMvsCLM` (`-10k-mlm40-42k`, its
"10k CLM + 32k MLM" row, and `-17k-mlm40-22k`). The shares round both ways (5,500 -> 5k, 16,500 -> 17k,
31,500 -> 32k, 10,500 -> 10k), so they are listed, not computed. Used at the scales that are paper 1's
setup; other scales keep the shares."""
PAPER1_CPT_CLAIM = 22_000
"""The continued-pretraining length whose claim a study checks: +22k. Paper 1's recap of its 610M CPT table
(`reported.PAPER1`) puts the CLM base ahead of the MLM base on the average of its four families at +22k,
but behind at +12k (ahead on SC, TC and IR, behind on QA by more than those three gains together), so
"MLM-adapting a CLM model beats continuing MLM" is its +22k finding, not a +12k one. A scale without +22k
(the demo: +12k alone) checks the finding at its longest length and says so in the claim's text.
tests/study/test_reported.py holds every paper-1 claim of a paper-setup scale against the recap."""
MARGIN = 1.2
"""Documents read beyond the estimate, so an estimate off by up to 20% still repeats nothing (`study plan`
counts the prepared data's unique tokens exactly and refuses a corpus that would repeat)."""


def fineweb_docs(steps: int) -> int:
    """FineWeb-Edu documents to prepare for `steps` steps of paper 1's batch without a repeat."""
    tokens = steps * PAPER1_TOKENS_PER_STEP
    return math.ceil(MARGIN * tokens / (GPT2_TOKENS_PER_DOC * LLAMA3_PER_GPT2))


def main_data(scale: Scale, steps: int) -> DataSpec:
    """The corpus every from-scratch run reads: paper 1's at gpu scales (enough documents for `steps`
    steps, the longest chain of runs on it), else an offline corpus with a BPE trained on it."""
    if scale.paper_setup:
        return DataSpec(
            name="main",
            corpus=(PAPER1_CORPUS,),
            tokenizer=PAPER1_TOKENIZER,
            vocab_size=PAPER1_VOCAB,
            max_docs=fineweb_docs(steps),
        )
    return DataSpec(
        name="main",
        corpus=("general-en",) if scale.full else ("wiki-leads",),
        vocab_size=scale.vocab_size,
        max_docs=scale.max_docs,
    )


def paper1_eval(scale: Scale):
    """The `paper` suite with paper 1's protocol at gpu scales, else the scale's pocket tasks."""
    return eval_spec(scale, "paper" if scale.paper_setup else "pocket")


def at(scale: Scale, paper_steps: int) -> int:
    """`paper_steps` of paper 1's 42k-step timeline at the scale's run length (every step count of the
    grid shrinks by one factor, so budgets, warmups and decays keep their places)."""
    return max(1, round(paper_steps * (scale.steps or PAPER1_STEPS) / PAPER1_STEPS))


def _label(objective: str, budget: int | None) -> tuple[str, str]:
    """A run's id and label from its design and, for a shorter budget, the budget in paper steps."""
    name, label = objective.split("|")
    return (
        (name, label)
        if budget is None
        else (f"{name}-{budget // 1000}k", f"{label}, {budget // 1000}k budget")
    )


def _design(clm: float, ratio: float = 0.4) -> tuple[str, str, dict]:
    """(id|label, recipe, params) of CLM for a `clm` share of the steps, then MLM at `ratio`."""
    r = percent_text(ratio)
    if clm == 0:
        return f"mlm{r}|MLM-{r}", "pfs-mlm", {"ratio": ratio}
    if clm == 1:
        return "clm|CLM", "pfs-clm", {}
    c = percent_text(clm)
    return f"clm{c}-mlm{r}|CLM {c}% -> MLM-{r}", "pfs-clm-mlm", {"clm_fraction": clm, "ratio": ratio}


def _early_steps(scale: Scale) -> tuple[int, ...]:
    """The intermediate checkpoints of MLM-40 and CLM that are scored: paper 1's at its own setup, else
    the same shares of the scale's run (1/8, 1/4, 1/2; the demo: 1/4)."""
    if scale.paper_setup:
        return tuple(at(scale, s) for s in PAPER1_EARLY)
    return steps_at(scale, 0.125, 0.25, 0.5) if scale.full else steps_at(scale, 0.25)


def _pfs_runs(scale: Scale) -> list[RunSpec]:
    """The from-scratch runs: MLM at each ratio, CLM, CLM -> MLM-40 at each CLM fraction, CLM 25% -> MLM
    at the biphasic ratios, and the shorter budgets; the runs the claims compare at the claim seeds."""
    early = _early_steps(scale)
    ratios = (0.2, 0.3, 0.4, 0.5) if scale.full else (0.4,)
    fractions = (0.25, 0.5, 0.75) if scale.full else (0.25,)
    compared = {"mlm40", "clm", "clm25-mlm40"}  # the runs the claims compare

    def run(clm: float, ratio: float = 0.4, budget: int | None = None, **fields) -> RunSpec:
        design, recipe, params = _design(clm, ratio)
        name, label = _label(design, budget)
        if budget is not None:  # the long runs' warmup and decay, so a budget branches from them (branch.py)
            fields |= {"steps": at(scale, budget), "group": f"{budget // 1000}k"}
            params = {**params, "warmup": at(scale, 2000), "decay": at(scale, 2000)}
        if scale.paper_setup and (switch := PAPER1_SWITCH.get((budget or PAPER1_STEPS, clm))):
            params = {**params, "clm_fraction": switch / (budget or PAPER1_STEPS)}
        seeds = scale.claim_seeds or None if name in compared else None
        return RunSpec(name=name, label=label, recipe=recipe, params=params, seeds=seeds, **fields)

    runs = [run(0.0, r, eval_steps=early if r == 0.4 else ()) for r in ratios]
    runs.append(run(1.0, eval_steps=early))
    runs += [run(f) for f in fractions]
    runs += [run(0.25, r) for r in scale.biphasic_ratios]  # paper 1's mask-ratio figure of biphasic runs
    runs += [run(f, budget=b) for b in scale.budgets for f in scale.budget_fractions]
    return runs


def _pfs_claims(scale: Scale) -> tuple[ClaimSpec, ...]:
    """Paper 1's from-scratch findings: MLM wins on SC and QA, CLM learns faster early and fine-tunes more
    stably, and CLM then MLM beats MLM alone."""
    return (
        ClaimSpec(
            id="mlm-sc",
            text="MLM beats CLM on sequence classification",
            kind="beats",
            a="mlm40",
            b="clm",
            family="sc",
        ),
        ClaimSpec(
            id="mlm-qa", text="MLM beats CLM on extractive QA", kind="beats", a="mlm40", b="clm", family="qa"
        ),
        ClaimSpec(
            id="clm-early",
            text="CLM learns faster early in pretraining",
            kind="faster_early",
            a="clm",
            b="mlm40",
        ),
        ClaimSpec(
            id="clm-stable",
            text="CLM checkpoints fine-tune more stably across learning rates",
            kind="more_stable",
            a="clm",
            b="mlm40",
            lr_range=scale.stability_lrs,
        ),
        ClaimSpec(
            id="clm25-mlm",
            text="CLM then MLM (25/75) beats MLM alone under the same budget",
            kind="beats",
            a="clm25-mlm40",
            b="mlm40",
        ),
    )


def paper1_pfs(scale: Scale) -> StudySpec:
    """Paper 1, pretraining from scratch: MLM ratios, CLM, CLM->MLM splits under one budget; at full
    scales also CLM 25% -> MLM at the other ratios and the shorter budgets (`Scale.budgets`)."""
    return StudySpec(
        name="paper1-pfs",
        description=(
            "Paper 1's from-scratch comparison: MLM at several masking ratios, CLM, and CLM followed by "
            "MLM-40 at several CLM fractions, all on the same tokens in the same order and the same number "
            "of steps, each fine-tuned with the same LR x seed protocol; at full scales also CLM 25% followed "
            "by MLM at each masking ratio, and the 12k and 22k budgets (decaying from the 42k runs' stable "
            "phase: the same runs as trained alone, branched to save compute)."
        ),
        data=(main_data(scale, scale.steps or PAPER1_STEPS),),
        runs=tuple(_pfs_runs(scale)),
        eval=paper1_eval(scale),
        baseline="mlm40",
        claims=_pfs_claims(scale),
        expected_minutes={"demo": 6, "cpu": 165}.get(scale.name, 0.0),
        paper="paper1",
        **common(scale),
    )


REAL_ARM_SHAPE = {"seq_len": 512, "global_batch": 4 * 1152}
"""The real-model CPT arm's rows: MiniLM's 512 positions, paper 1's tokens per step."""
_REAL_ARM = (("smollm2", "SmolLM2-135M", "smollm2-135m", 49_152), ("minilm", "MiniLM", "minilm", 30_522))
"""The real-model CPT arm: (data and run name, label, start model and its tokenizer, its vocabulary)."""


def _cpt_runs(scale: Scale) -> list[RunSpec]:
    """The CLM and MLM bases, each continued with MLM-40 for each of the scale's budgets."""
    warmup = at(scale, 200)  # cpt-mlm's warmup and decay on the paper's timeline, shared by every budget
    runs = [
        RunSpec(name="clm-base", label="CLM base", recipe="pfs-clm", group="bases"),
        RunSpec(name="mlm-base", label="MLM-40 base", recipe="pfs-mlm", params={"ratio": 0.4}, group="bases"),
    ]
    for budget in sorted(scale.cpt_budgets, reverse=True):  # a shorter one branches from a longer one
        steps = at(scale, budget)
        # +2k holds no 2k decay after its warmup: it decays over the rest (and, so, branches from nothing)
        params = {"warmup": warmup, "decay": min(at(scale, 2000), steps - warmup)}
        for base in ("clm", "mlm"):
            runs.append(
                RunSpec(
                    name=f"{base}-base+mlm-{budget // 1000}k",
                    label=f"{base.upper()} base + MLM-40, +{budget // 1000}k",
                    recipe="cpt-mlm",
                    init=f"{base}-base",
                    steps=steps,
                    params=params,
                    group=f"cpt-{budget // 1000}k",
                )
            )
    return runs


def _cpt_claims(scale: Scale) -> list[ClaimSpec]:
    """MLM-adapting the CLM base beats continuing the MLM base: at +22k, where paper 1's numbers show it
    (`PAPER1_CPT_CLAIM`), else at the scale's longest length, named as a departure in the claim's text."""
    b = PAPER1_CPT_CLAIM if PAPER1_CPT_CLAIM in scale.cpt_budgets else max(scale.cpt_budgets)
    k = f"+{b // 1000}k"
    where = (
        f"{k} steps"
        if b == PAPER1_CPT_CLAIM
        else f"{k} steps, this scale's longest; paper 1's numbers show it at +{PAPER1_CPT_CLAIM // 1000}k, not at {k}"
    )
    return [
        ClaimSpec(
            id=f"cpt-clm-{b // 1000}k",
            text=f"MLM-adapting a CLM-pretrained model beats continuing MLM on an MLM model ({where})",
            kind="beats",
            a=f"clm-base+mlm-{b // 1000}k",
            b=f"mlm-base+mlm-{b // 1000}k",
        )
    ]


def _real_arm(scale: Scale, corpus: tuple[str, ...]) -> tuple[list[DataSpec], list[RunSpec], ClaimSpec]:
    """A real decoder turned encoder against a real encoder, each with the same MLM budget on the same
    documents of `corpus` (each in its own tokenizer, so each has its own prepared data). SmolLM2's
    tokenizer has no mask token: cpt-mlm adds one (train/vocab.py, recorded in the run). MiniLM has 512
    positions, so both pack 512-token rows, 4x as many as the bases' 2048-token rows, so a step holds the
    same 2,359,296 tokens."""
    cpt_steps = at(scale, 12_000)  # the real-model arm's budget
    docs = fineweb_docs(cpt_steps) if scale.paper_setup else scale.max_docs  # each reads cpt_steps
    data = [
        DataSpec(name=name, corpus=corpus, tokenizer=init, vocab_size=vocab, max_docs=docs)
        for name, _, init, vocab in _REAL_ARM
    ]
    runs = [
        RunSpec(
            name=f"{name}+mlm",
            label=f"{label} + MLM-40",
            recipe="cpt-mlm",
            init=init,
            data=name,
            group="real",
            steps=cpt_steps,
            params=REAL_ARM_SHAPE,
        )
        for name, label, init, _ in _REAL_ARM
    ]
    claim = ClaimSpec(
        id="cpt-real",
        text="A real decoder MLM-adapted beats a real encoder given the same continued MLM",
        kind="beats",
        a="smollm2+mlm",
        b="minilm+mlm",
    )
    return data, runs, claim


def paper1_cpt(scale: Scale) -> StudySpec:
    """Paper 1, continued pretraining: CLM and MLM bases each continued with MLM-40 for each of the
    scale's budgets (+2k, +12k, +22k steps of paper 1's timeline; the demo: +12k)."""
    longest = at(scale, PAPER1_STEPS) + at(scale, max(scale.cpt_budgets))
    data = [main_data(scale, longest)]  # each continuation reads past its base
    runs, claims = _cpt_runs(scale), _cpt_claims(scale)
    if scale.real_models:
        real_data, real_runs, real_claim = _real_arm(scale, data[0].corpus)
        data, runs, claims = data + real_data, runs + real_runs, [*claims, real_claim]
    return StudySpec(
        name="paper1-cpt",
        description=(
            "Paper 1's continued pretraining: a CLM base and an MLM base trained on the same data for the same "
            "steps, each continued with MLM-40 on the text after its base's (+2k, +12k, +22k steps of paper 1's "
            "timeline; the demo: +12k); at gpu scales also SmolLM2-135M (a real decoder, given a mask token) "
            "MLM-adapted against MiniLM with continued MLM."
        ),
        data=tuple(data),
        runs=tuple(runs),
        eval=paper1_eval(scale),
        baseline=f"mlm-base+mlm-{max(scale.cpt_budgets) // 1000}k",
        claims=tuple(claims),
        # measured (docs/studies.md: paper1-cpt cpu 6,221 CPU-s on 2 cores)
        expected_minutes={"demo": 11, "cpu": 55}.get(scale.name, 0.0),
        paper="paper1",
        **{**common(scale), "steps": scale.steps},
    )
