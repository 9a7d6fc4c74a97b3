"""Paper 2's study: a CLM detour against the MLM baseline when continuing an existing encoder on a
domain, with CKA against a seed-noise twin and, from scale `cpu` up, freezing low or middle layers."""

from __future__ import annotations

from encoderlab.study.scales import Scale, common, eval_spec
from encoderlab.study.spec import CkaSpec, ClaimSpec, DataSpec, EvalSpec, RunSpec, StudySpec

_DETOUR_DEMO_RUNS = {"steps": 40, "micro_batch": 8}
"""The demo continues MiniLM (22M parameters, 30k vocabulary): ~2-3 s per step on 2 shared CPU
cores, so three runs of the scale's 400 steps alone would take over an hour."""
_DETOUR_DEMO_EVAL = EvalSpec(suite="domain", lrs=(1e-4,), seeds=(0, 1), max_steps=12)
"""One task (_DETOUR_CPU_DOMAINS), one LR, two seeds, 12 fine-tuning steps: a smoke signal that fits
the 15-minute demo (a pubmedqa-retrieval node took about 97 s on 2 cores, the whole demo 12 min)."""


_DETOUR_CPU_RUNS = {"steps": 100, "micro_batch": 8}
"""MiniLM at 8 x 256 tokens per step for 100 steps, plus the 10-step decay. Measured on one thread: a
run with a CLM phase 460-530 CPU-s (the 30k-vocabulary head over every token costs as much as the
encoder), an MLM-phase run 310-340 CPU-s; the five continued runs take ~35 CPU-minutes."""
_DETOUR_CPU_EVAL = EvalSpec(
    suite="domain", tasks=("pubmedqa-retrieval",), lrs=(3e-5, 1e-4), seeds=(0, 1, 2), max_steps=12
)
"""pubmedqa-retrieval at 2 LRs x 3 seeds, 12 fine-tuning steps (a 24-step node cost 225 CPU-s, most of
it training). PubMedQA classification with its own 150-step protocol measured 436 s per node (MiniLM,
2 threads) and still scored below the majority class, so its 36 nodes (~4.4 h) bought no signal; it
waits for a GPU with the code domain."""
_DETOUR_CPU_DOMAINS = {"biomed": ("pubmedqa-retrieval",)}
"""The domain and task of the CPU scales: retrieval, where MiniLM (a sentence-embedding model) starts
strong and continued pretraining moves its score. PubMedQA classification left every model at its
majority class in the demo, and the start model below it with the cpu protocol."""


_DETOUR_GPU_MODELS = {
    "210m": ("answerdotai/ModernBERT-base", 10_000_000_000),
    "610m": ("answerdotai/ModernBERT-large", 25_000_000_000),
    "1b": ("answerdotai/ModernBERT-large", 50_000_000_000),
}
"""(model, CLM or MLM tokens) of paper 2's grid (papers.md 2.3) by gpu scale: Base at 10B, Large at 25B
(the French sweep's best) and at 50B (the English runs); each adds a 10% decay."""
_DETOUR_GPU_CORPORA = {"biomed": "biomed-enriched", "code": "starcoderdata-python"}
"""The domain corpora at gpu scales: paper 2's English biomedical corpus and Python from The Stack
(named hub corpora, `data.corpora`); the cpu scales read the small offline assets."""


def _domain_runs(dom: str, tasks: tuple[str, ...], scale: Scale, base: str, params: dict) -> list[RunSpec]:
    """The runs of one domain: the detour, the baseline and its seed twin, and the two freezes."""
    shared = dict(init=base, data=dom, group=dom, tasks=tasks, params=params)
    runs = [
        RunSpec(name=f"detour-{dom}", label=f"CLM detour ({dom})", recipe="detour", **shared),
        RunSpec(name=f"baseline-{dom}", label=f"MLM baseline ({dom})", recipe="detour-baseline", **shared),
        RunSpec(
            name=f"baseline-{dom}-s2",
            label=f"MLM baseline, seed 2 ({dom})",
            recipe="detour-baseline",
            seed=1,
            evaluate=scale.full,  # the demo's budget pays for its CKA noise floor only
            **shared,
        ),
    ]
    if scale.full:
        runs += [
            RunSpec(
                name=f"freeze-{part}-{dom}",
                label=f"detour, {where} layers frozen in CLM ({dom})",
                recipe=f"detour-freeze-{part}",
                **shared,
            )
            for part, where in (("low", "low"), ("mid", "middle"))
        ]
    return runs


def _domain_claims(dom: str, scale: Scale) -> list[ClaimSpec]:
    """The claims of one domain: the detour beats the baseline, its CKA divergence is low, and (full
    scales) freezing the middle layers beats freezing the low ones."""
    claims = [
        ClaimSpec(
            id=f"freeze-{dom}",
            text=(
                "The detour's gain lives in the low layers: freezing the middle layers during CLM "
                f"beats freezing the low layers ({dom})"
            ),
            kind="beats",
            a=f"freeze-mid-{dom}",
            b=f"freeze-low-{dom}",
        )
    ][: int(scale.full)]
    claims.append(
        ClaimSpec(
            id=f"detour-{dom}",
            text=f"The CLM detour beats the MLM baseline on the {dom} domain suite",
            kind="beats",
            a=f"detour-{dom}",
            b=f"baseline-{dom}",
        )
    )
    claims.append(
        ClaimSpec(
            id=f"cka-{dom}",
            text=f"CKA divergence from the detour is concentrated in the low layers ({dom})",
            kind="cka_low_layers",
            a=f"detour-{dom}",
            b=f"baseline-{dom}",
        )
    )
    return claims


def paper2_detour(scale: Scale) -> StudySpec:
    """Paper 2: a CLM detour against the MLM baseline when continuing an existing encoder on a domain."""
    base, tokens_param = "minilm", {}
    if scale.real_models:
        base, tokens = _DETOUR_GPU_MODELS[scale.size]
        tokens_param = {"tokens": tokens}
    domains = {"biomed": ("pubmedqa", "pubmedqa-retrieval"), "code": ("code-retrieval",)}
    if not scale.real_models:
        domains = _DETOUR_CPU_DOMAINS
    every_task = tuple(t for tasks in domains.values() for t in tasks)
    runs = [
        RunSpec(
            name="start",
            label=f"{base} (start)",
            init=base,
            group="reference",
            data=next(iter(domains)),
            tasks=every_task,
        )
    ]
    data, claims, cka = [], [], []
    for dom, tasks in domains.items():
        corpus = _DETOUR_GPU_CORPORA[dom] if scale.real_models else dom if dom != "code" else "code-python"
        data.append(DataSpec(name=dom, corpus=(corpus,), tokenizer=base, max_docs=scale.max_docs))
        runs += _domain_runs(dom, tasks, scale, base, tokens_param)
        claims += _domain_claims(dom, scale)
        cka.append(
            CkaSpec(
                a=f"detour-{dom}",
                b=f"baseline-{dom}",
                noise=(f"baseline-{dom}-s2", f"baseline-{dom}"),
                texts="pubmedqa" if dom == "biomed" else "code-python",
                n_texts=scale.cka_texts,
            )
        )
    return StudySpec(
        name="paper2-detour",
        description=(
            f"Paper 2: continue {base} on a domain corpus with a CLM detour (CLM, then a short MLM-15% decay) "
            "against the MLM baseline (MLM-30%, then the same decay) on identical data and compute; "
            "evaluation on the domain suite, layer-wise CKA against a seed-noise baseline, and at full "
            "scales freezing the low or middle layers during the CLM phase."
        ),
        data=tuple(data),
        runs=tuple(runs),
        eval={"demo": _DETOUR_DEMO_EVAL, "cpu": _DETOUR_CPU_EVAL}.get(scale.name)
        or eval_spec(scale, "domain"),
        baseline=f"baseline-{next(iter(domains))}",
        cka=tuple(cka),
        claims=tuple(claims),
        expected_minutes={"demo": 15, "cpu": 60}.get(scale.name, 0.0),
        **{
            **common(scale),
            "size": None,
            **{"demo": _DETOUR_DEMO_RUNS, "cpu": _DETOUR_CPU_RUNS}.get(scale.name, {}),
        },
    )
