"""`encoderlab analyze cka|probe|curves`: parse, call the analysis API, print, write figures.

Each command checks what it can before loading any model, cheapest and most certain first (the
arguments, a model or task given twice, that every model source exists, then text counts, tasks and
the curves file), so a bad argument costs one line and no minutes of loading. Outputs go to `--out`:
a PNG per figure with its CSV and JSON, plus the full report as JSON.

Output folders follow `encoderlab.outdir`: `--out` is checked before anything loads (not a file,
not a folder encoderlab did not create, not one of the models or texts read) and created only once
every other check passed. cka, probe and curves share the kind `analyze`, so their figures can sit
in one folder. `--max-length` defaults to 512 tokens or the shortest maximum of the models loaded,
and a longer request is refused rather than crashing inside the position embedding.

`analyze transplant`, whose output is a model folder rather than figures, is
`analysis/transplant_command.py`; what the commands share before a model loads (argument types, the
checks of counts, seeds and device, loading a model) is `analysis/commandargs.py`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.analysis import cka, curves, plots, probe, transplant
from encoderlab.analysis.cka_report import CkaReport, too_few_layers
from encoderlab.analysis.commandargs import (
    ANALYZE,
    Dtype,
    ModelA,
    ModelB,
    Models,
    check_arguments,
    input_paths,
    load_model_on,
)
from encoderlab.analysis.inputs import Encoding, analysis_length, check_distinct, check_models, read_texts
from encoderlab.cliargs import Repeated, flatten
from encoderlab.errors import UserError
from encoderlab.model.config import AttentionMode
from encoderlab.outdir import check_output, create_output, drop_stale, output_folder

_ANALYSIS_STEMS = (
    "cka",
    "cka_ratio",
    "cka_report",
    "probe",
    "cache",
    "data_efficiency",
    "lr_sensitivity",
    "mask_ratio",
)


def _is_analysis_folder(folder: Path) -> bool:
    """A folder of analysis outputs from before output markers: only files our commands write."""
    return all(p.name.split(".")[0] in _ANALYSIS_STEMS for p in folder.iterdir())


def _write_cka(report: CkaReport, out: Path, ratio: bool) -> None:
    """cka_report.json, the CKA figure and, with a seed twin, the noise-ratio figure."""
    plots.write_json(report.to_dict(), out / "cka_report.json")
    rows = [
        {**r, "pair_label": "A vs B", "baseline_label": "B' vs B (seed noise)"}
        for r in report.to_dict()["layers"]
    ]
    plots.plot_cka(rows, out / "cka")
    if ratio:
        plots.plot_cka_ratio(rows, out / "cka_ratio")
    else:
        drop_stale(out, "cka_ratio")


UNDEFINED = "undefined"
"""What the CKA table prints for a NaN (it printed `nan`): a layer whose features are constant across the
texts has no CKA, nor ratio; the JSON holds null there, the CSV `nan`."""


def _cell(value: float | None, width: int, spec: str) -> str:
    """One number of the CKA table: `-` where there is none (no twin, no interval), `UNDEFINED` for NaN."""
    if value is None:
        return f"{'-':>{width}}"
    return f"{UNDEFINED:>{width}}" if math.isnan(value) else f"{value:{width}{spec}}"


def _print_cka(report: CkaReport) -> None:
    """The per-layer table, and the low-layer summary, or why a seed-twin comparison has none."""
    print(f"{'layer':>5} {'CKA':>9} {'1-CKA':>9} {'seed 1-CKA':>10} {'ratio':>9} {'95% CI':>15} {'floor':>6}")
    undefined = False
    for r in report.layers:
        ci = f"[{r.ratio_ci_low:.2f}, {r.ratio_ci_high:.2f}]" if r.ratio_ci_low is not None else "-"
        numbers = (r.cka, r.divergence, r.baseline_divergence, r.ratio)
        undefined |= any(v is not None and math.isnan(v) for v in numbers)
        print(
            f"{r.layer:>5} {_cell(r.cka, 9, '.4f')} {_cell(r.divergence, 9, '.4f')} "
            f"{_cell(r.baseline_divergence, 10, '.4f')} {_cell(r.ratio, 9, '.2f')} {ci:>15} "
            f"{_cell(r.chance_floor, 6, '.3f')}"
        )
    if undefined:
        print(
            f"{UNDEFINED}: a model's features in that layer are constant across the texts (the note line names "
            "the model and its layers), so CKA there, and the ratio, have no value (null in cka_report.json)"
        )
    summary = report.to_dict()["low_layers"]
    if summary:
        print(summary["sentence"])
    elif report.layers and all(r.ratio_per_seed is not None for r in report.layers):  # a twin, too few layers
        print(f"No low-layer summary: {too_few_layers(len(report.layers))}")


def _check_twin(pairs: dict, named: dict[str, str]) -> None:
    """Refuse a `--baseline` that cannot be B's seed twin, each of which ran and reported numbers that
    measure nothing: B's very weights (B itself, its run folder, a copy: every seed-noise divergence 0,
    every ratio infinite), A's very weights (the seed noise is then A vs B itself, so every ratio is 1
    by construction), or another architecture or tokenizer than B's (a twin is B's recipe at another seed,
    so its divergence from B would mix architecture or tokenization with seed noise)."""
    from encoderlab.model.fingerprint import fingerprint

    if "B'" not in pairs:
        return
    twin = named["B'"]
    fix = "give B's seed twin (the same recipe trained with another seed), or leave --baseline out"
    prints = {name: fingerprint(*pairs[name]) for name in ("A", "B", "B'")}
    if prints["B'"] == prints["B"]:
        raise UserError(
            f"--baseline {twin} has the very weights of model B ({named['B']}), so the seed noise would be 0; {fix}"
        )
    if prints["B'"] == prints["A"]:
        raise UserError(
            f"--baseline {twin} has the very weights of model A ({named['A']}), so the seed noise would be A "
            f"against B and every ratio 1; {fix}"
        )
    diff = transplant.architecture_difference(pairs["B'"][0], pairs["B"][0])
    if diff is not None:
        raise UserError(
            f"--baseline {twin} is not a seed twin of model B ({named['B']}): their architectures differ "
            f"({diff}); {fix}"
        )
    from encoderlab.data.tokenizer import tokenizer_hash

    # one vocabulary size passes the architecture; the twin's divergence then mixed tokenization with seed
    hashes = [tokenizer_hash(pairs[name][1]) for name in ("B'", "B")]
    if hashes[0] != hashes[1]:
        raise UserError(
            f"--baseline {twin} is not a seed twin of model B ({named['B']}): their tokenizers differ "
            f"(sha256 {hashes[0][:12]} and {hashes[1][:12]}), so its divergence from B would mix the "
            f"tokenization with seed noise; {fix}"
        )


def cka_command(
    model_a: ModelA,
    model_b: ModelB,
    *,
    texts: str,
    out: Path,
    baseline: str | None = None,
    n: int = 500,
    seeds: tuple[int, ...] = cka.PAPER2_SEEDS,
    max_length: int | None = None,
    batch_size: int = 16,
    attention_mode: AttentionMode = "bidirectional",
    device: str = "cpu",
    dtype: Dtype = "float32",
) -> CkaReport:
    """Layer-wise CKA divergence of model A from reference B, relative to B's seed twin (--baseline).

    Args:
        model_a: The model being compared (e.g. the CLM-detour model).
        model_b: The reference (e.g. the MLM model, seed 1).
        texts: Held-out texts: an asset name, a .jsonl file of records, or a .txt file (one per line); either may be .gz/.bz2/.xz/.zst.
        out: Folder for cka.png/.csv/.json, cka_ratio.* and cka_report.json.
        baseline: B's seed twin (same recipe, other seed); gives the per-layer noise ratio.
        n: Texts per sampling seed (at least 50; the paper uses 500).
        seeds: Sampling seeds; each draws n texts from the pool (the paper's 42 43 44); the ratio's interval is over them.
        max_length: Tokens per text at most (default: 512, or the models' maximum if lower).
        batch_size: Texts per forward pass.
        attention_mode: bidirectional (encoders) or causal (decoders read as decoders).
        device: Where the models run (cpu, cuda).
        dtype: Model precision (the paper ran float16 on GPU); CKA itself is always float64.
    """
    named = {"A": model_a, "B": model_b, **({"B'": baseline} if baseline else {})}
    check_arguments(device, {"--seeds": seeds}, batch_size=batch_size)
    check_models(named.values())
    check_output(out, ANALYZE, sources=input_paths(*named.values(), texts), legacy=_is_analysis_folder)
    pool = read_texts(texts)
    cka.sample_indices(len(pool), n, seeds)  # refuse too few texts before loading anything
    pairs = {name: load_model_on(src, device, dtype) for name, src in named.items()}
    _check_twin(pairs, named)
    max_length = analysis_length(max_length, list(pairs.values()))
    encoding = Encoding(max_length=max_length, batch_size=batch_size, attention_mode=attention_mode)
    report = cka.compare(
        pairs["A"],
        pairs["B"],
        pool,
        baseline=pairs.get("B'"),
        n=n,
        seeds=seeds,
        encoding=encoding,
        labels=named,
    )
    create_output(out, ANALYZE)
    _write_cka(report, out, ratio=baseline is not None)
    _print_cka(report)
    print(f"mean divergence {report.mean_divergence:.4f} (models run in {report.dtype}); wrote {out}")
    return report


PROBE_TASKS = ("brown-pos", "tweets")
"""`analyze probe`'s tasks when --tasks is not given: a token-level and a sequence-level one. --tasks is
`Repeated`, as eval's: `--tasks a b` and `--tasks a --tasks b` alike."""


def probe_command(
    models: Models,
    *,
    out: Path,
    tasks: Repeated = (),
    max_examples: int = 2000,
    seed: int = 0,
    max_length: int | None = None,
    batch_size: int = 16,
    attention_mode: AttentionMode = "bidirectional",
    device: str = "cpu",
    dtype: Dtype = "float32",
) -> list[dict]:
    """Linear probe accuracy of every layer of each model, for a token-level and a sequence-level task.

    Args:
        models: Model sources (folders, runs, HF folders, asset names).
        out: Folder for probe.png/.csv/.json and the feature cache (out/cache).
        tasks: Probing tasks: assets or .jsonl files with meta.label or meta.tokens + meta.tags
            (default: brown-pos tweets).
        max_examples: Examples (texts or sentences) per task at most, drawn with --seed.
        seed: Seed of the subsample and of the 60/20/20 split.
        max_length: Tokens per example at most (default: 512, or the models' maximum if lower).
        batch_size: Examples per forward pass.
        attention_mode: bidirectional (encoders) or causal (decoders read as decoders).
        device: Where the models run.
        dtype: Model precision; features are pooled in float64 and probes fitted in float64.
    """
    if not models:
        raise UserError("give at least one model to probe")
    tasks = flatten(tasks) if tasks else PROBE_TASKS  # `--tasks` alone is ((),): refused below
    if not tasks:  # `--tasks` with nothing after it: a traceback once probing was done, its --out left behind
        raise UserError("--tasks needs at least one task, got none; e.g. --tasks brown-pos tweets")
    check_distinct("model", models)
    check_distinct("task", tasks)
    check_arguments(device, {"--seed": (seed,)}, max_examples=max_examples, batch_size=batch_size)
    check_models(models)
    check_output(out, ANALYZE, sources=input_paths(*models, *tasks), legacy=_is_analysis_folder)
    loaded_tasks = [probe.load_task(t, max_examples, seed) for t in tasks]
    loaded = [(source, *load_model_on(source, device, dtype)) for source in models]
    length = analysis_length(max_length, [(model, tok) for _, model, tok in loaded])
    encoding = Encoding(max_length=length, batch_size=batch_size, attention_mode=attention_mode)
    rows: list[dict] = []
    with output_folder(out, ANALYZE, scratch=("cache",)):  # the feature cache is written while probing
        for source, model, tokenizer in loaded:
            for task in loaded_tasks:
                cache, label = out / "cache", f"model {source}"
                layers = probe.probe_model(
                    model, tokenizer, task, encoding, seed=seed, cache_dir=cache, label=label
                )
                rows += probe.as_rows(source, task, layers)
                print(f"{source} {task.name}: {_best_layer(layers)}")
    plots.plot_probe(rows, out / "probe")
    print(f"wrote {out}")
    return rows


def _best_layer(layers: list[probe.ProbeLayer]) -> str:
    """The best probed layer, or that none is defined: a layer constant across the examples has no score
    (NaN), which `max` compared as neither larger nor smaller and could name as the best."""
    defined = [r for r in layers if r.accuracy == r.accuracy]
    if not defined:
        return "no layer has a probe score (every layer is constant across the examples)"
    best = max(defined, key=lambda r: r.accuracy)
    return f"best layer {best.layer} ({best.accuracy:.2f}% test accuracy)"


def curves_command(
    spec: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="CURVES_YAML")],
    *,
    out: Path,
    level: curves.Level = "family",
) -> dict[str, list[dict]]:
    """Paper 1's curves (data efficiency, LR sensitivity, mask ratio) from evaluation results.

    Args:
        spec: YAML listing sources: {results: EVAL_FOLDER, model: LINE, step: N, mask_ratio: R}.
        out: Folder for data_efficiency.*, lr_sensitivity.* and mask_ratio.* (PNG, CSV, JSON).
        level: One panel per task family (the paper's category averages) or per task.
    """
    curves_input = curves.load_input(spec)  # the input first: a missing file was named after --out's problem
    check_output(out, ANALYZE, sources=[spec], legacy=_is_analysis_folder)
    tables = curves.curve_tables(curves_input, base=spec.parent, level=level)
    create_output(out, ANALYZE)
    draw = {
        "data_efficiency": plots.plot_data_efficiency,
        "lr_sensitivity": plots.plot_lr_sensitivity,
        "mask_ratio": plots.plot_mask_ratio,
    }
    for name, rows in tables.items():
        print(f"wrote {draw[name](rows, out / name)} ({len(rows)} points)")
    drop_stale(out, *(name for name in draw if name not in tables))  # a curve no source fills now
    return tables
