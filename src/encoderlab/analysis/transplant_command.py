"""`encoderlab analyze transplant`: one transplant of A's layers into B, or a sweep of them.

A transplant's `--out` is a model folder of kind `transplant` (a sweep's, a folder of them), so
`--out B/final` can never overwrite model B, and the two outputs never share a folder: one transplant
replaces its folder whole, which over a sweep's would delete every transplant of it. Everything that
can be refused is refused before the first transplant is written: the mode's flags (exactly one of
`--layers` and `--sweep`, and no flag the mode would ignore, the probe's without `--probe-task`), the
models and `--out`, the tokenizers, and each spec of a sweep against B. A scored sweep (`--probe-task`) scores A and B before `--out` is
made, so a model whose features are refused leaves nothing behind; each model is read with its own
tokenizer (A's for A, B's for B and for every transplant, which is saved with B's).
"""

from __future__ import annotations

from pathlib import Path

from encoderlab.analysis import plots, probe, transplant
from encoderlab.analysis.commandargs import (
    TRANSPLANT,
    ModelA,
    ModelB,
    check_arguments,
    input_paths,
    load_model_on,
)
from encoderlab.analysis.inputs import Encoding, analysis_length, check_models
from encoderlab.errors import UserError
from encoderlab.model.config import AttentionMode
from encoderlab.outdir import check_output, create_output


def _is_transplant_folder(folder: Path) -> bool:
    """A transplant (or a sweep of them) from before output markers."""
    return (folder / "transplant.json").is_file() or (folder / "transplant_sweep.json").is_file()


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
    check_arguments(device, {}, max_examples=max_examples)
    _check_mode(layers, sweep, probe_task, part=part, embeddings=embeddings, head=head, groups=groups)
    _check_probe_flags(
        probe_task, sweep, max_examples=max_examples, max_length=max_length, mode=attention_mode
    )
    check_models((model_a, model_b))
    check_output(
        out, TRANSPLANT, sources=input_paths(model_a, model_b, probe_task), legacy=_is_transplant_folder
    )
    _check_transplant_out(out, sweep=sweep is not None)
    task = probe.load_task(probe_task, max_examples) if probe_task else None
    (a, tok_a), (b, tok_b) = load_model_on(model_a, device), load_model_on(model_b, device)
    sources = {"a": model_a, "b": model_b}
    encoding = Encoding(
        max_length=analysis_length(max_length, [(a, tok_a), (b, tok_b)]), attention_mode=attention_mode
    )
    _check_pair((a, tok_a), (b, tok_b), embeddings=embeddings, head=head)
    if layers is not None:
        spec = transplant.TransplantSpec(
            layers=transplant.parse_layers(layers, len(b.layers)), part=part, embeddings=embeddings, head=head
        )
        return _save_one(a, b, tok_b, spec, out, sources)
    score, tested = _last_layer_probe(task, (a, tok_a), tok_b, encoding, device, out / "cache")
    _sweep(a, b, tok_b, _sweep_specs(b, sweep, groups), out, sources, score, (task, tested))
    return out


def _check_pair(pair_a: tuple, pair_b: tuple, *, embeddings: bool, head: bool) -> None:
    """The blocks' architectures, then the tokenizers (refused, or a note), then the vocabularies: a note
    that the blocks are moved, then a refusal to move them, was two lines. Blocks alone need no common
    vocabulary. The tokenizers come before the vocabulary's size: `--embeddings` between two tokenizers of
    other sizes was refused as "different architectures (vocab_size 68 vs 58)", and the tokenizers' line,
    which says to move blocks alone, was never shown."""
    transplant.check_same_architecture(pair_a[0], pair_b[0], vocabulary=False)
    transplant.check_tokenizers(pair_a[1], pair_b[1], embeddings=embeddings, head=head)
    if embeddings or head:  # one tokenizer, models of other vocabulary sizes (a padded embedding)
        transplant.check_same_architecture(pair_a[0], pair_b[0], vocabulary=True)


def _save_one(a, b, tokenizer, spec: transplant.TransplantSpec, out: Path, sources: dict[str, str]) -> Path:
    """Save the one transplant `spec` of A into B as the model folder `out` (with B's tokenizer)."""
    path = transplant.save_transplant(a, b, spec, out, tokenizer=tokenizer, sources=sources)
    create_output(path, TRANSPLANT)  # the model folder is replaced whole by the save: mark it after
    print(f"wrote {path}: {spec.describe()} from {sources['a']}, the rest from {sources['b']}")
    return path


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


def _check_probe_flags(probe_task, sweep, *, max_examples: int, max_length, mode: str) -> None:
    """Refuse the probe's own flags without `--probe-task`: `--max-examples`, `--max-length` and
    `--attention-mode` shape only the probe that scores a sweep, and were ignored without a word (a
    transplant saved as if they had not been given). `--device` is not among them: the models are
    loaded and transplanted there, probed or not."""
    if probe_task is not None:
        return
    given = [
        flag
        for flag, on in (
            (f"--max-examples {max_examples}", max_examples != 2000),
            (f"--max-length {max_length}", max_length is not None),
            (f"--attention-mode {mode}", mode != "bidirectional"),
        )
        if on
    ]
    if given:
        them, verb = ("them", "set") if len(given) > 1 else ("it", "sets")
        done = (
            f"--sweep {sweep} runs no probe without --probe-task and would ignore {them}; drop {them}, or add "
            "--probe-task TASK"
            if sweep
            else f"--layers makes one transplant and runs no probe, so would ignore {them}; drop {them}"
        )
        raise UserError(f"{', '.join(given)} {verb} the probe of --probe-task, but {done}")


def _last_layer_probe(task, donor: tuple, tokenizer, encoding: Encoding, device: str, cache: Path):
    """A sweep's score: the test accuracy of a linear probe on a model's last layer, read with the
    model's own tokenizer: A's (`donor`, A and its tokenizer) for A, B's for B and every transplant
    (each is saved with B's). A was scored with B's tokenizer, a wrong A and gap where they differ.
    With it, the list the test rows of each score are appended to, in the order of the sweep's table;
    (None, []) without a probe task."""
    tested: list[int] = []
    if task is None:
        return None, tested

    def score(model, cache_dir: Path | None = cache, label: str = "the model") -> float:
        last = len(model.layers) - 1
        own = donor[1] if model is donor[0] else tokenizer
        (row,) = probe.probe_model(
            model.to(device), own, task, encoding, cache_dir=cache_dir, layers=[last], label=label
        )
        tested.append(row.n_test)
        return row.accuracy

    return score, tested


def _scale_line(task, tested: list[int]) -> str:
    """What a sweep's scores are and at which resolution: the table and the figure gave a score and a share
    of the gap to the hundredth, with nothing saying it came from one split of, say, 60 texts, where one
    text is 1.67 points and A and B two texts apart made "+200% of the gap"."""
    unit = "words" if task.kind == "token" else "texts"
    lo, hi = min(tested), max(tested)
    n = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return (
        f"scores: test accuracy (%) of a ridge probe on the last layer, on one seeded split of {n} test {unit} "
        f"of {task.name}: one of them is {100 / lo:.2f} points, and no interval is given (docs/analysis.md)"
    )


def _sweep(a, b, tokenizer, specs, out: Path, sources: dict, score, tested: tuple) -> None:
    """Save every transplant of a sweep into `out` and its table; with `score`, also score each and plot
    the share of the B -> A gap recovered. `tested`: the probe's task and the test rows of each score,
    in the table's order (A, B, then the transplants), written beside the scores and said in a line."""
    # A and B's blocks were checked by `_check_pair` (a sweep moves blocks alone)
    # A and B scored before --out is made, uncached: a model whose features are refused writes nothing
    # (the transplants were saved first, then A's NaN features refused)
    labels = {k: f"model {k.upper()} ({v})" for k, v in sources.items()}
    ends = (score(a, None, labels["a"]), score(b, None, labels["b"])) if score else None
    create_output(out, TRANSPLANT)
    rows = transplant.transplant_sweep(
        a, b, specs, out, tokenizer=tokenizer, sources=sources, score=score, ends=ends
    )
    _drop_other_transplants(out, {row["name"] for row in rows})
    for row, n in zip(rows, tested[1]):  # empty without a probe task (`_last_layer_probe`)
        row["n_test"] = n
    plots.save_table(rows, out / "transplant_sweep")
    if score:
        plots.plot_transplant(rows, out / "transplant_sweep")
    else:  # the table was rewritten without scores; a previous sweep's bar chart showed them
        (out / "transplant_sweep.png").unlink(missing_ok=True)
    for row in rows:
        print(transplant.sweep_line(row))
    if score:
        print(_scale_line(*tested))
    print(f"wrote {out}")


def _drop_other_transplants(out: Path, names: set[str]) -> None:
    """Remove the transplants an earlier sweep left in a reused --out that this sweep's table does not list
    (`--sweep layers`, then `--sweep parts`: layer-0... stayed beside all-attention, perhaps of other
    models, in a folder whose table describes only the new sweep)."""
    import shutil

    for folder in out.iterdir():
        if folder.is_dir() and folder.name not in names and (folder / "transplant.json").is_file():
            shutil.rmtree(folder)
