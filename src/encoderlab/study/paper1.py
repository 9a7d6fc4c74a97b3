"""Paper 1's studies: pretraining from scratch (MLM ratios, CLM, CLM then MLM) and continued
pretraining (a CLM base and an MLM base each continued with MLM), as functions of a `Scale`.

At the gpu scales a study is paper 1's experiment: FineWeb-Edu through EuroBERT's tokenizer (the
Llama-3 vocabulary, 128,256 ids), the paper's model sizes, recipes at their own length and batch, and
the `paper` suite of 12 datasets with EncodEval's protocol. The demo and cpu scales keep everything
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

PAPER1_TOKENIZER = "EuroBERT/EuroBERT-210m"
"""Paper 1's tokenizer: EuroBERT's, the Llama-3 vocabulary (128,256 ids, mask `<|mask|>` = 128002)."""
PAPER1_VOCAB = 128_256
"""Its size, which `study plan`'s estimates assume before the tokenizer is read."""
PAPER1_CORPUS = "fineweb-edu-350bt"
"""Paper 1's data: FineWeb-Edu (the named hub corpus of `data/corpora.py`)."""
PAPER1_TOKENS_PER_STEP = 1152 * 2048
"""The recipes' batch: 1,152 rows of 2,048 tokens (papers.md 1.3)."""
GPT2_TOKENS_PER_DOC = CORPORA[PAPER1_CORPUS].tokens_per_doc
"""FineWeb-Edu's documents hold about 1,000 GPT-2 tokens each (`data.corpora`)."""
LLAMA3_PER_GPT2 = 0.85
"""Llama-3's tokenizer spends fewer tokens than GPT-2's on English web text; 0.85 assumed, not measured."""
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


def paper1_pfs(scale: Scale) -> StudySpec:
    """Paper 1, pretraining from scratch: MLM ratios, CLM, CLM->MLM splits under one budget."""
    early = steps_at(scale, 0.125, 0.25, 0.5) if scale.full else steps_at(scale, 0.25)
    ratios = (0.2, 0.3, 0.4, 0.5) if scale.full else (0.4,)
    fractions = (0.25, 0.5, 0.75) if scale.full else (0.25,)
    compared = {"mlm40", "clm", "clm25-mlm40"}  # the runs the claims compare

    def seeds(name: str) -> tuple[int, ...] | None:
        return scale.claim_seeds or None if name in compared else None

    runs = [
        RunSpec(
            name=f"mlm{round(r * 100)}",
            label=f"MLM-{round(r * 100)}",
            recipe="pfs-mlm",
            params={"ratio": r},
            eval_steps=early if r == 0.4 else (),
            seeds=seeds(f"mlm{round(r * 100)}"),
        )
        for r in ratios
    ]
    runs.append(RunSpec(name="clm", label="CLM", recipe="pfs-clm", eval_steps=early, seeds=seeds("clm")))
    runs += [
        RunSpec(
            name=f"clm{round(f * 100)}-mlm40",
            label=f"CLM {round(f * 100)}% -> MLM-40",
            recipe="pfs-clm-mlm",
            params={"clm_fraction": f},
            seeds=seeds(f"clm{round(f * 100)}-mlm40"),
        )
        for f in fractions
    ]
    data = main_data(scale, scale.steps or 42_000)
    claims = (
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
    return StudySpec(
        name="paper1-pfs",
        description=(
            "Paper 1's from-scratch comparison: MLM at several masking ratios, CLM, and CLM followed by "
            "MLM-40 at several CLM fractions, all on the same tokens in the same order and the same number "
            "of steps, each fine-tuned with the same LR x seed protocol."
        ),
        data=(data,),
        runs=tuple(runs),
        eval=paper1_eval(scale),
        baseline="mlm40",
        claims=claims,
        expected_minutes={"demo": 6, "cpu": 145}.get(scale.name, 0.0),
        paper="paper1",
        **common(scale),
    )


REAL_ARM_SHAPE = {"seq_len": 512, "global_batch": 4 * 1152}
"""The real-model CPT arm's rows: MiniLM's 512 positions, paper 1's tokens per step."""


def paper1_cpt(scale: Scale) -> StudySpec:
    """Paper 1, continued pretraining: CLM and MLM bases each continued with MLM-40."""
    base_steps = scale.steps
    cpt_steps = max(1, (scale.steps or 42_000) // 4) if scale.steps else 12_000
    runs = [
        RunSpec(name="clm-base", label="CLM base", recipe="pfs-clm", group="bases"),
        RunSpec(
            name="mlm-base",
            label="MLM-40 base",
            recipe="pfs-mlm",
            params={"ratio": 0.4},
            group="bases",
        ),
        RunSpec(
            name="clm-base+mlm", label="CLM base + MLM-40", recipe="cpt-mlm", init="clm-base", steps=cpt_steps
        ),
        RunSpec(
            name="mlm-base+mlm", label="MLM base + MLM-40", recipe="cpt-mlm", init="mlm-base", steps=cpt_steps
        ),
    ]
    data = [main_data(scale, (scale.steps or 42_000) + cpt_steps)]  # each continuation reads past its base
    claims = [
        ClaimSpec(
            id="cpt-clm",
            text="MLM-adapting a CLM-pretrained model beats continuing MLM on an MLM model",
            kind="beats",
            a="clm-base+mlm",
            b="mlm-base+mlm",
        ),
    ]
    if scale.real_models:
        # A real decoder turned encoder against a real encoder, each with the same MLM budget on
        # the same documents (each in its own tokenizer, so each has its own prepared data). SmolLM2's
        # tokenizer has no mask token: cpt-mlm adds one (train/vocab.py, recorded in the run). MiniLM has
        # 512 positions, so both pack 512-token rows, 4x as many as the bases' 2048-token rows, so a step
        # holds the same 2,359,296 tokens.
        docs = fineweb_docs(cpt_steps) if scale.paper_setup else scale.max_docs  # each reads cpt_steps
        data += [
            DataSpec(name="smollm2", corpus=data[0].corpus, tokenizer="smollm2-135m", max_docs=docs),
            DataSpec(name="minilm", corpus=data[0].corpus, tokenizer="minilm", max_docs=docs),
        ]
        runs += [
            RunSpec(
                name="smollm2+mlm",
                label="SmolLM2-135M + MLM-40",
                recipe="cpt-mlm",
                init="smollm2-135m",
                data="smollm2",
                group="real",
                steps=cpt_steps,
                params=REAL_ARM_SHAPE,
            ),
            RunSpec(
                name="minilm+mlm",
                label="MiniLM + MLM-40",
                recipe="cpt-mlm",
                init="minilm",
                data="minilm",
                group="real",
                steps=cpt_steps,
                params=REAL_ARM_SHAPE,
            ),
        ]
        claims.append(
            ClaimSpec(
                id="cpt-real",
                text="A real decoder MLM-adapted beats a real encoder given the same continued MLM",
                kind="beats",
                a="smollm2+mlm",
                b="minilm+mlm",
            )
        )
    return StudySpec(
        name="paper1-cpt",
        description=(
            "Paper 1's continued pretraining: a CLM base and an MLM base trained on the same data for the same "
            "steps, each continued with MLM-40 for the same budget; at full scales also SmolLM2-135M (a real "
            "decoder) MLM-adapted against MiniLM with continued MLM."
        ),
        data=tuple(data),
        runs=tuple(runs),
        eval=paper1_eval(scale),
        baseline="mlm-base+mlm",
        claims=tuple(claims),
        expected_minutes={"demo": 11, "cpu": 40}.get(scale.name, 0.0),
        paper="paper1",
        **{**common(scale), "steps": base_steps},
    )
