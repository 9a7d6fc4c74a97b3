"""`encoderlab analyze cka|transplant|probe|curves`: parse, call the analysis API, print, write figures.

Each command checks what it can before loading any model, cheapest and most certain first (the
arguments, a model or task given twice, that every model source exists, then text counts, tasks and
the curves file), so a bad argument costs one line and no minutes of loading. Outputs go to `--out`:
a PNG per figure with its CSV and JSON, plus the full report as JSON.

Output folders follow `encoderlab.outdir`: `--out` is checked before anything loads (not a file,
not a folder encoderlab did not create, not one of the models or texts read) and created only once
every other check passed. cka, probe and curves share the kind `analyze`, so their figures can sit
in one folder; a transplant's `--out` is a model folder (or a sweep's folder of them) of kind
`transplant`, so `--out B/final` can never overwrite model B. `--max-length` defaults to 512
tokens or the shortest maximum of the models loaded, and a longer request is refused rather than
crashing inside the position embedding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import torch
import tyro

from encoderlab.analysis import cka, curves, plots, probe, transplant
from encoderlab.analysis.inputs import Encoding, analysis_length, check_distinct, check_models, read_texts
from encoderlab.cliargs import Repeated, flatten
from encoderlab.errors import UserError
from encoderlab.eval.protocol import resolve_device
from encoderlab.model.config import AttentionMode
from encoderlab.outdir import check_output, create_output, drop_stale, output_folder

ModelA = Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="MODEL_A")]
ModelB = Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="MODEL_B")]
Models = Annotated[
    tuple[str, ...], tyro.conf.Positional, tyro.conf.arg(metavar="MODEL ...", help_behavior_hint="(required)")
]


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
Dtype = Literal["float32", "bfloat16", "float16"]


ANALYZE, TRANSPLANT = "analyze", "transplant"
"""Ownership-marker kinds of analysis folders and transplanted models."""
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


def _is_transplant_folder(folder: Path) -> bool:
    """A transplant (or a sweep of them) from before output markers."""
    return (folder / "transplant.json").is_file() or (folder / "transplant_sweep.json").is_file()


def _sources(*sources: str | None) -> list[Path]:
    """The folders and files behind model and text sources that exist on this machine."""
    from encoderlab.model.sources import guarded_folder

    return [f for f in (guarded_folder(s) for s in sources if s) if f is not None]


def _check_arguments(device: str, seeds: dict[str, tuple[int, ...]], **counts: int) -> None:
    """Refuse, before anything loads, a device that is not there (`resolve_device`), a count below 1
    (`batch_size=0` looped with a zero step) or a negative seed (numpy's generators take none): all
    were tracebacks, a probe's after its cache was written; so was an empty list of seeds. `seeds` maps
    a flag to its values; `counts` are flags by their argument name."""
    resolve_device(device)
    for name, value in counts.items():
        if value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    for flag, values in seeds.items():
        if not values:  # `--seeds` with nothing after it: numpy's concatenate failed after the models loaded
            raise UserError(f"{flag} needs at least one seed, got none; e.g. {flag} 42 43 44")
        if any(v < 0 for v in values):
            raise UserError(
                f"{flag} must be >= 0 (numpy's generators take no negative seed), got {list(values)}"
            )


def _load(source: str, device: str, dtype: Dtype = "float32"):
    from encoderlab.analysis.inputs import load_model

    model, tokenizer = load_model(source)  # refuses a model without a tokenizer, or pruned while read
    return model.to(device=device, dtype=DTYPES[dtype]), tokenizer


def _write_cka(report: cka.CkaReport, out: Path, ratio: bool) -> None:
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


def _print_cka(report: cka.CkaReport) -> None:
    """The per-layer table, and the low-layer summary, or why a seed-twin comparison has none."""
    print(f"{'layer':>5} {'CKA':>7} {'1-CKA':>7} {'seed 1-CKA':>10} {'ratio':>7} {'95% CI':>15} {'floor':>6}")
    for r in report.layers:
        ci = f"[{r.ratio_ci_low:.2f}, {r.ratio_ci_high:.2f}]" if r.ratio_ci_low is not None else "-"
        base = (
            f"{r.baseline_divergence:10.4f} {r.ratio:7.2f} {ci:>15}"
            if r.ratio is not None
            else f"{'-':>10} {'-':>7} {'-':>15}"
        )
        print(f"{r.layer:>5} {r.cka:7.4f} {r.divergence:7.4f} {base} {r.chance_floor:6.3f}")
    summary = report.to_dict()["low_layers"]
    if summary:
        print(summary["sentence"])
    elif report.layers and all(r.ratio_per_seed is not None for r in report.layers):  # a twin, too few layers
        print(f"No low-layer summary: {cka.too_few_layers(len(report.layers))}")


def _check_twin(pairs: dict, named: dict[str, str]) -> None:
    """Refuse a `--baseline` that cannot be B's seed twin, each of which ran and reported numbers that
    measure nothing: B's very weights (B itself, its run folder, a copy: every seed-noise divergence 0,
    every ratio infinite), A's very weights (the seed noise is then A vs B itself, so every ratio is 1
    by construction), or another architecture than B's (a twin is B's recipe at another seed, so its
    divergence from B would mix architecture with seed noise)."""
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
) -> cka.CkaReport:
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
    _check_arguments(device, {"--seeds": seeds}, batch_size=batch_size)
    check_models(named.values())
    check_output(out, ANALYZE, sources=_sources(*named.values(), texts), legacy=_is_analysis_folder)
    pool = read_texts(texts)
    cka.sample_indices(len(pool), n, seeds)  # refuse too few texts before loading anything
    pairs = {name: _load(src, device, dtype) for name, src in named.items()}
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


def transplant_command(
    model_a: ModelA,
    model_b: ModelB,
    *,
    out: Path,
    layers: str | None = None,
    part: transplant.Part = "block",
    embeddings: bool = False,
    head: bool = False,
    sweep: transplant.SweepKind | None = None,
    groups: int = 3,
    probe_task: str | None = None,
    max_examples: int = 2000,
    max_length: int | None = None,
    attention_mode: AttentionMode = "bidirectional",
    device: str = "cpu",
) -> Path:
    """Copy layers (or their attention / MLP parts) of model A into model B and save the result.

    Args:
        model_a: The donor of the chosen parameters (e.g. the CLM-detour model).
        model_b: The recipient: everything not chosen comes from it (e.g. the MLM model).
        out: The model folder to write (one transplant), or the folder of a sweep's model folders.
        layers: Block indices: 0-7, 3, 0-3,8 or a freezing preset (paper2-low, paper2-mid, paper2-late).
        part: The whole block, or only its attention or MLP sub-block.
        embeddings: Also take the input embedding from A.
        head: Also take the final norm and LM head from A.
        sweep: Instead of --layers: groups (low/mid/late), layers (each alone), parts (all attention vs all MLP) or all (groups + parts, paper 2's table).
        groups: Number of contiguous groups in a groups sweep.
        probe_task: Score A, B and every transplant of a sweep with a last-layer linear probe on this task (asset or .jsonl) and plot the share of the B -> A gap recovered.
        max_examples: Examples of the probe task used at most.
        max_length: Tokens per probe example at most (default: 512, or the models' maximum if lower).
        attention_mode: Attention of the probe's forward passes (bidirectional or causal).
        device: Where models run for probing.
    """
    _check_arguments(device, {}, max_examples=max_examples)
    _check_mode(layers, sweep, probe_task, part=part, embeddings=embeddings, head=head, groups=groups)
    check_models((model_a, model_b))
    check_output(
        out, TRANSPLANT, sources=_sources(model_a, model_b, probe_task), legacy=_is_transplant_folder
    )
    _check_transplant_out(out, sweep=sweep is not None)
    task = probe.load_task(probe_task, max_examples) if probe_task else None
    (a, tok_a), (b, tok_b) = _load(model_a, device), _load(model_b, device)
    sources = {"a": model_a, "b": model_b}
    encoding = Encoding(
        max_length=analysis_length(max_length, [(a, tok_a), (b, tok_b)]), attention_mode=attention_mode
    )
    transplant.check_tokenizers(tok_a, tok_b, embeddings=embeddings, head=head)  # refused, or a note
    if layers is not None:
        spec = transplant.TransplantSpec(
            layers=transplant.parse_layers(layers, len(b.layers)), part=part, embeddings=embeddings, head=head
        )
        path = transplant.save_transplant(a, b, spec, out, tokenizer=tok_b, sources=sources)
        create_output(path, TRANSPLANT)  # the model folder is replaced whole by the save: mark it after
        print(f"wrote {path}: {spec.describe()} from {model_a}, the rest from {model_b}")
        return path
    score = _last_layer_probe(task, (a, tok_a), tok_b, encoding, device, out / "cache") if task else None
    _sweep(a, b, tok_b, _sweep_specs(b, sweep, groups), out, sources, score)
    return out


def _sweep_specs(b, sweep: str, groups: int) -> list:
    """The sweep's named specs, each checked against B (`transplant.check_spec`: ALBERT's shared layers)
    before the first transplant is written."""
    specs = transplant.sweep_specs(len(b.layers), sweep, groups)
    for _, one in specs:
        transplant.check_spec(b, one, sweep=sweep)
    return specs


def _check_transplant_out(out: Path, *, sweep: bool) -> None:
    """Refuse to mix the two transplant outputs: one transplant replaces its --out whole (the model folder
    save), which over a sweep's folder deleted every transplant of the sweep; a sweep over one
    transplant's model folder wrote its folders and table into that model folder."""
    if not out.is_dir():
        return
    if sweep and (out / "transplant.json").is_file():
        raise UserError(
            f"--out {out} holds one transplant (a model folder), and a sweep would write its transplants into it: "
            "choose another --out"
        )
    swept = (out / "transplant_sweep.json").is_file() or any(
        (p / "transplant.json").is_file() for p in out.iterdir()
    )
    if not sweep and swept:
        raise UserError(
            f"--out {out} holds a transplant sweep, which one transplant would replace whole (deleting its "
            "transplants): choose another --out"
        )


def _check_mode(layers, sweep, probe_task, *, part: str, embeddings: bool, head: bool, groups: int) -> None:
    """Exactly one of --layers and --sweep, and no flag the chosen mode would ignore: `--part`,
    `--embeddings` and `--head` shape one transplant (a sweep's specs were built without them, silently),
    `--groups` only a groups (or all) sweep, `--probe-task` only a sweep. Flags alone: checked before any
    path, as every command's arguments are (it was said only after a missing model or a refused --out)."""
    if (layers is None) == (sweep is None):
        raise UserError("give exactly one of --layers (one transplant) or --sweep (several)")
    if probe_task is not None and sweep is None:
        raise UserError(
            "--probe-task scores a sweep; add --sweep, or probe the saved model with 'analyze probe'"
        )
    given = [
        f
        for f, on in ((f"--part {part}", part != "block"), ("--embeddings", embeddings), ("--head", head))
        if on
    ]
    if sweep is not None and given:
        raise UserError(
            f"--sweep {sweep} builds its own transplants and would ignore {', '.join(given)}; drop them, or make "
            "each transplant with --layers"
        )
    if groups != 3 and sweep not in ("groups", "all"):
        mode = f"--sweep {sweep}" if sweep else "--layers"
        raise UserError(
            f"--groups {groups} splits the layers of --sweep groups or all, but {mode} would ignore it; "
            "drop --groups, or use --sweep groups"
        )


def _last_layer_probe(task, donor: tuple, tokenizer, encoding: Encoding, device: str, cache: Path):
    """A sweep's score: the test accuracy of a linear probe on a model's last layer, read with the
    model's own tokenizer: A's (`donor`, A and its tokenizer) for A, B's for B and every transplant
    (each is saved with B's). A was scored with B's tokenizer, a wrong A and gap where they differ."""

    def score(model, cache_dir: Path | None = cache, label: str = "the model") -> float:
        last = len(model.layers) - 1
        own = donor[1] if model is donor[0] else tokenizer
        (row,) = probe.probe_model(
            model.to(device), own, task, encoding, cache_dir=cache_dir, layers=[last], label=label
        )
        return row.accuracy

    return score


def _sweep(a, b, tokenizer, specs, out: Path, sources: dict, score) -> None:
    """Save every transplant of a sweep into `out` and its table; with `score`, also score each and plot
    the share of the B -> A gap recovered."""
    transplant.check_same_architecture(a, b)
    # A and B scored before --out is made, uncached: a model whose features are refused writes nothing
    # (the transplants were saved first, then A's NaN features refused)
    labels = {k: f"model {k.upper()} ({v})" for k, v in sources.items()}
    ends = (score(a, None, labels["a"]), score(b, None, labels["b"])) if score else None
    create_output(out, TRANSPLANT)
    rows = transplant.transplant_sweep(
        a, b, specs, out, tokenizer=tokenizer, sources=sources, score=score, ends=ends
    )
    _drop_other_transplants(out, {row["name"] for row in rows})
    plots.save_table(rows, out / "transplant_sweep")
    if score:
        plots.plot_transplant(rows, out / "transplant_sweep")
    else:  # the table was rewritten without scores; a previous sweep's bar chart showed them
        (out / "transplant_sweep.png").unlink(missing_ok=True)
    for row in rows:
        print(transplant.sweep_line(row))
    print(f"wrote {out}")


def _drop_other_transplants(out: Path, names: set[str]) -> None:
    """Remove the transplants an earlier sweep left in a reused --out that this sweep's table does not list
    (`--sweep layers`, then `--sweep parts`: layer-0... stayed beside all-attention, perhaps of other
    models, in a folder whose table describes only the new sweep)."""
    import shutil

    for folder in out.iterdir():
        if folder.is_dir() and folder.name not in names and (folder / "transplant.json").is_file():
            shutil.rmtree(folder)


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
    _check_arguments(device, {"--seed": (seed,)}, max_examples=max_examples, batch_size=batch_size)
    check_models(models)
    check_output(out, ANALYZE, sources=_sources(*models, *tasks), legacy=_is_analysis_folder)
    loaded_tasks = [probe.load_task(t, max_examples, seed) for t in tasks]
    loaded = [(source, *_load(source, device, dtype)) for source in models]
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
                best = max(layers, key=lambda r: r.accuracy)
                print(f"{source} {task.name}: best layer {best.layer} ({best.accuracy:.2f}% test accuracy)")
    plots.plot_probe(rows, out / "probe")
    print(f"wrote {out}")
    return rows


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
