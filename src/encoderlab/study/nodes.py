"""The real node kinds: data preparation, pretraining, fine-tuning evaluation and CKA.

Each kind is a thin adapter from a node's config and its inputs' folders to the API of the
package that owns the work (`encoderlab.data`, `encoderlab.train`, `encoderlab.eval`,
`encoderlab.analysis`); none of them re-implements anything. A pretraining node trains the RunConfig
resolved at graph build (`resolve.py`), reloaded with the strict typed loader, with only its paths
filled in. What lives here is where each output goes inside the node folder:

```
prepare:  tokenizer/ (trained, when asked; or read from the dataset it names)  data/ (prepared tokens)
pretrain: run/ (a training run folder: config.yaml, metrics.jsonl, checkpoints/, final/)
eval:     results.jsonl (eval's cache of this one (task, lr, seed))
cka:      cka.json
```

Resume inside a node: preparation and evaluation are no-ops when their output is complete;
pretraining resumes from the run's last checkpoint (checkpoints every fifth of a run whose length
the study sets, as at the CPU scales; else at the recipe's cadence, `resolve.py`), so a study killed
mid-training loses at most a fifth of one run.

What a study reads and how its eval nodes key their tasks, asked of the spec before any node runs (the
`Backend`'s other fields: tasks, assets, decontamination sets, corpus locations), is `needs.py`; this
module only runs nodes.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.jsonlines import read_records
from encoderlab.study.branch import seed_branch
from encoderlab.study.graph import Backend, Node, NodeKind
from encoderlab.study.localmodels import check_loaded, model_files, recheck, recheck_sources
from encoderlab.study.localtexts import read_keyed_texts, texts_identity
from encoderlab.study.needs import (
    corpus_sources,
    dataset_decontamination,
    file_tasks,
    keyed_sets,
    model_identity,
    read_text_sets,
    required_assets,
    sets_digest,
    suite_families,
    task_signature,
    training_groups,
)
from encoderlab.study.nodeconfig import CkaNode, EvalNode, PrepareNode, PretrainNode
from encoderlab.study.runner import NodeContext
from encoderlab.study.spec import CkaSpec, StudySpec
from encoderlab.study.specproblems import STUDY_PLACED
from encoderlab.words import noun

# --------------------------------------------------------------------------- prepare


def field_in_entry(exc, corpus, folder: str | None = None) -> UserError:
    """A `MissingTextField` (`exc`) in a study file's terms: its fix names the text field in the corpus
    entry that reads the file (as `#text_field=` among the entry's options), not on a `--source`, a flag
    a study has none of; nor does it offer `--on-error skip`. An entry under the study file's `folder` is
    shown relative to it, as the file writes it (the absolute path read made a study file tied to this
    machine for anyone who pasted the fix in)."""
    from encoderlab.data.sources import CORPORA, describe, parse_source

    entry = exc.path
    for c, source in zip(corpus, corpus_sources(corpus)):
        if source.location in CORPORA or source.location.startswith("hf:"):
            continue  # hub data (never listed here: that may need the network)
        try:
            if any(str(p) == exc.path for p in describe(source).get("files", ())):
                entry = c
                break
        except UserError:  # a glob matching nothing, a file gone: not the file's entry
            continue
    location = parse_source(entry).location
    options = entry[len(location) + 1 :]
    if folder is not None and Path(location).is_relative_to(folder):
        location = Path(location).relative_to(folder).as_posix()
    kept = [o for o in options.split(",") if o and o.partition("=")[0].strip() != "text_field"]
    named = f"{location}#{','.join([*kept, f'text_field={exc.guess}'])}"
    return UserError(
        f"{exc.problem}; name the text field in the study file's corpus entry, e.g. corpus: ['{named}'] "
        "(or fix the record)"
    )


def empty_in_entry(exc, corpus) -> UserError:
    """An `EmptySource` (`exc`) in a study file's terms: its fix names the corpus entries that read the
    empty source (or the whole corpus), not `--source`, a flag a study has none of."""
    entries = [c for c, s in zip(corpus, corpus_sources(corpus)) if s.location in exc.locations]
    if len(entries) == 1 and len(corpus) > 1:  # one source of several
        return UserError(
            f"source '{exc.locations[0]}' has no non-empty document; remove its entry '{entries[0]}' "
            "from the dataset's corpus in the study file"
        )
    entries = entries or list(corpus)
    listed = ", ".join(f"'{c}'" for c in entries)
    which = "entry" if len(entries) == 1 else "entries"
    return UserError(f"{exc.problem}; check the study file's corpus {which}, corpus: [{listed}]")


def run_prepare(ctx: NodeContext) -> dict:
    """Train the tokenizer (if asked) and tokenize the corpus into ctx.out_dir/data."""
    from encoderlab.data.filereaders import MissingTextField
    from encoderlab.data.mixing import EmptySource

    node = PrepareNode.of(ctx.node)
    if node.prepared is not None:
        return _read_prepared(ctx, node.prepared)
    try:  # a hub or named corpus's record without the text field (`checks.check_sources` reads local
        # corpora whole, and not those)
        return _prepare(ctx, node)
    except MissingTextField as exc:
        raise field_in_entry(exc, node.dataset.corpus) from None
    except EmptySource as exc:  # a hub source, or every document removed by decontamination
        raise empty_in_entry(exc, node.dataset.corpus) from None


def _prepare(ctx: NodeContext, node: PrepareNode) -> dict:
    from encoderlab.data.holdout import no_validation_note
    from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
    from encoderlab.data.tokenizer import train_tokenizer
    from encoderlab.study.checks import refuse_stale_data

    text_sets = _text_sets(ctx, node)  # read, and checked, before the tokenizer is trained
    # data or a tokenizer of an attempt read from files changed since (checked before the study, again
    # in its turn): a tokenizer trained before an interruption is reused only on the text it was trained on
    refuse_stale_data(ctx.spec, ctx.node.name.split("/", 1)[1], ctx.out_dir)
    cfg = node.dataset
    sources = corpus_sources(cfg.corpus)
    tokenizer = cfg.tokenizer
    if tokenizer == "train":
        folder = ctx.out_dir / "tokenizer"
        if not (folder.is_dir() and any(folder.iterdir())):  # written atomically by train_tokenizer
            train_tokenizer(  # `refuse`: a bad line's fix must not offer --on-error, a flag `study run` lacks
                sources,
                cfg.vocab_size,
                folder,
                max_docs=cfg.max_docs,
                seed=cfg.seed,
                stop=cfg.stop,  # the mixture the data is prepared from, below
                on_error="refuse",
                progress=False,
            )
        tokenizer = str(folder)
    elif ctx.node.deps:  # the tokenizer another dataset of the study trained (DataSpec.tokenizer)
        tokenizer = str(ctx.inputs[ctx.node.deps[0]].path / "tokenizer")
    out = prepare(
        PrepareConfig(
            sources=sources,
            tokenizer=tokenizer,
            seed=cfg.seed,
            max_docs=cfg.max_docs,
            stop=cfg.stop,
            decontaminate=node.against,  # () is none
            text_sets=text_sets,  # the study's own task files' test splits
            on_error="refuse",
        ),
        ctx.out_dir / "data",
        progress=False,
    )
    meta = read_meta(out)
    # what `data prepare` says of it (a run on it reports no validation loss), in the study's terms
    if (note := no_validation_note(meta, f"study {ctx.spec.name}, dataset {cfg.name}")) is not None:
        print(note, file=sys.stderr)
    return {"data": "data", **_recorded(out, meta)}


def _text_sets(ctx: NodeContext, node: PrepareNode) -> tuple:
    """The test splits of the study's own task files that the node cleans its corpus against: read where
    the study names them (its key holds their texts' digest, not their paths: `needs.keyed_sets`) and
    checked to be the texts the graph keyed the node by, as a `--prepared` folder is (`_read_prepared`)."""
    if node.test_texts is None:
        return ()
    from encoderlab.eval.tasks.testtexts import TASK_TEST

    text_sets = read_text_sets(dataset_decontamination(ctx.spec, node.dataset))[1]
    if sets_digest(text_sets) != node.test_texts:
        keyed = ctx.node.aside.get("test_texts", {})  # each file's, when the graph read them (`Node.aside`)
        changed = [s for s in text_sets if keyed.get(s.name) != s.version] or text_sets
        files = [s.name.removeprefix(TASK_TEST) for s in changed]
        raise UserError(
            f"dataset {node.dataset.name}: the test {noun(len(files), 'split')} of {noun(len(files), 'task file')} "
            f"{', '.join(files)} changed while the study ran (its prepare node was keyed by the texts it had); "
            "run the study again"
        )
    return text_sets


def _read_prepared(ctx: NodeContext, digest: str) -> dict:
    """A dataset prepared outside the study (`DataSpec.prepared`): checked against the content digest
    the graph recorded (`digest`), then read where it is."""
    from encoderlab.study.prepared import check_tokenizer, identity, prepared_meta

    d = ctx.spec.dataset(ctx.node.name.split("/", 1)[1])
    folder = Path(d.prepared).resolve()
    meta = prepared_meta(folder, d.name)
    if identity(meta) != digest:
        raise UserError(
            f"dataset {d.name}: {folder} changed while the study ran (another meta.json); run the study again"
        )
    check_tokenizer(meta, d.tokenizer, d.name, folder)
    return {"data": str(folder), **_recorded(folder, meta)}


def _recorded(folder: Path, meta: dict) -> dict:
    """What a prepare node records of its data: its unique tokens per split (`plan.finished_meta` counts
    them), and the entropy of its training tokens' frequencies (`data.packed.unigram_entropy`, for the
    plateau caveat: `outputs._read_unigram`), read once a `--prepared` folder is gone (`study/absent.py`)."""
    from encoderlab.data.packed import unigram_entropy

    counts = {k: meta[k] for k in ("unique_tokens",) if k in meta}  # meta.json has no "counts" (was asked)
    return {"meta": counts, "unigram": unigram_entropy(folder)}


def prepared_folder(spec: StudySpec, prepare) -> Path:
    """The prepared data a finished prepare node (a `NodeOutput`) stands for: the folder the spec names
    for a dataset prepared outside the study (where it is now: the key ignores where it was), else
    the node's own."""
    d = spec.dataset(prepare.node.name.split("/", 1)[1])
    return Path(d.prepared) if d.prepared is not None else prepare.path / prepare.result["data"]


# --------------------------------------------------------------------------- pretrain


def run_config(node: Node):
    """The RunConfig a pretraining node trains, as resolved at graph build (paths not filled in)."""
    return PretrainNode.of(node).run


_LOCATIONS = tuple(STUDY_PLACED)
"""RunConfig fields that hold paths inside the study folder: they change when the folder is moved."""


def _moved_only(out: Path, run) -> bool:
    """Whether the unfinished run in `out` differs from `run` only in where the study folder lies.

    A copied or moved study resumes its unfinished runs then (the node key fixes everything else);
    any other difference is refused with the fix a study can use (`study run` has no --force). A moved
    start folder is such a place too (`model.init` is in `STUDY_PLACED`): the key holds its files, not its
    path (`PretrainNode.init_files`), so the same key is the same start model wherever it lies, and the
    trainer's own check of a moved `model.init` (`runfolder._same_init`, which needs a checkpoint that
    records it) is not what decides.
    """
    from encoderlab.config import load_yaml, to_dict
    from encoderlab.train.config import RunConfig
    from encoderlab.train.runfolder import config_diff

    diff = config_diff(to_dict(load_yaml(RunConfig, out / "config.yaml")), to_dict(run))
    changed = [d for d in diff if d.split(":")[0] not in _LOCATIONS]
    if changed:
        raise UserError(
            f"{out} holds an unfinished run with another config ({'; '.join(changed[:3])}); delete "
            f"{out.parent} to retrain this node, then rerun the study"
        )
    return bool(diff)


def run_pretrain(ctx: NodeContext) -> dict:
    """Train (or resume) the run in ctx.out_dir/run."""
    from encoderlab.train import pretrain

    node = PretrainNode.of(ctx.node)
    run, branch = node.run, node.branch
    recheck(ctx, run.model.init or "", node.init_files, start=True)  # the start still holds the files keyed
    deps = [ctx.inputs[d] for d in ctx.node.deps]
    data = next(d for d in deps if d.node.kind == "prepare")
    # the run it continues; a branch's base is a dependency too, but the branch resumes its checkpoint
    init = next(
        (d for d in deps if d.node.kind == "pretrain" and (branch is None or d.node.name != branch.node)),
        None,
    )
    model = run.model
    if init is not None:
        model = dataclasses.replace(model, init=str(init.path / "run" / "final"))
    if ctx.spec.max_passes is not None:  # now the tokens are counted, not estimated
        from encoderlab.data.prepare import read_meta
        from encoderlab.study.plan import check_run

        model, dataset = ctx.node.name.split("/", 1)[1], data.node.name.split("/", 1)[1]
        check_run(ctx.spec, model, dataset, run, read_meta(prepared_folder(ctx.spec, data)))
    out = ctx.out_dir / "run"
    run = dataclasses.replace(
        run,
        model=model,
        data=dataclasses.replace(run.data, path=str(prepared_folder(ctx.spec, data))),
        out=str(out),
        progress=False,
    )
    if branch is not None:  # start where the base's training stops being this run's (study/branch.py)
        seed_branch(out, ctx.inputs[branch.node].path / "run", branch.step, run)
    resume = (out / "config.yaml").exists()
    after_load = check_loaded(ctx, node.run.model.init or "", node.init_files)  # replaced since the recheck
    pretrain(run, resume=resume, force=resume and _moved_only(out, run), before_start=after_load)
    records = read_records(out / "metrics.jsonl")
    shared = branch.step if branch else 0
    own = [r for r in records if r.get("step", 0) > shared]  # the base's steps are counted in the base
    before = _tokens_at(records, shared)
    tokens = max([before, *(r.get("tokens", 0) for r in own)]) - before
    compute = {"tokens": tokens, "flops": _flops(out / "final", own, tokens), "flops_method": _FLOPS_METHOD}
    if branch is not None:
        compute |= {"branched_from": branch.node, "shared_steps": shared, "shared_tokens": before}
    return {"steps": run.steps, "final": "run/final", "metrics": "run/metrics.jsonl", "compute": compute}


def _tokens_at(records: list[dict], step: int) -> int:
    """Tokens seen by the end of `step` (0 before the first)."""
    return max((r.get("tokens", 0) for r in records if r.get("step", 0) <= step), default=0)


_FLOPS_METHOD = "sum of per-step FLOPs logged by training, else 6 x parameters x tokens"


def _flops(final: Path, records: list[dict], tokens: int) -> float:
    logged = [r["flops"] for r in records if isinstance(r.get("flops"), (int, float))]
    if logged:
        return float(sum(logged))
    from math import prod

    from safetensors import safe_open

    # Counted from the weight file, not the config: a continued HF model (an adapter) has no
    # ModelConfig, and a tied LM head is stored once, as ModelConfig.num_params counts it.
    with safe_open(str(final / "model.safetensors"), framework="pt") as weights:
        params = sum(prod(weights.get_slice(k).get_shape()) for k in weights.keys())  # noqa: SIM118 (safe_open is not iterable)
    return 6.0 * params * tokens


# --------------------------------------------------------------------------- eval

_LOADED: dict[tuple[str, str | None], object] = {}
"""The last model loaded for evaluation, by (path, `EvalNode.source_files`): consecutive eval nodes of one
model skip reloading it. By path alone, a study run again in the same process after the model folder it
evaluates as is was replaced scored the model loaded before under the new key. A local folder is checked
before it is served and after it is loaded (`_eval_model`), so what is kept is of the files the key names."""


def _eval_model(ctx: NodeContext, source: str, files: str | None):
    from encoderlab.eval import load_eval_model

    recheck(ctx, source, files)  # replaced since the graph was built: refused, never served from memory
    if (source, files) not in _LOADED:
        _LOADED.clear()
        model = load_eval_model(source)
        recheck(ctx, source, files)  # not replaced while it loaded (stats only, when unchanged)
        _LOADED[source, files] = model
    return _LOADED[source, files]


def model_source(ctx: NodeContext) -> str:
    """The model an eval or CKA node reads: a run's final model or checkpoint, or a named source."""
    cfg = EvalNode.of(ctx.node)
    if not ctx.node.deps:
        assert cfg.source is not None, f"{ctx.node.name} reads no model"
        return cfg.source
    run_dir = ctx.inputs[ctx.node.deps[0]].path / "run"
    if cfg.step is None:
        return str(run_dir / "final")
    from encoderlab.train.checkpoint import checkpoint_dir

    path = checkpoint_dir(run_dir, cfg.step) / "model"
    if not path.is_dir():
        raise UserError(
            f"checkpoint {path} is missing; the run did not keep step {cfg.step} (checkpoint.keep_steps)"
        )
    return str(path)


def run_eval(ctx: NodeContext) -> dict:
    """Fine-tune and score one (model, task, lr, seed) with eval's protocol."""
    from encoderlab.config import to_dict
    from encoderlab.eval import eval_node

    cfg = EvalNode.of(ctx.node)
    if cfg.task_files:  # a task of one's own: registered in this process (a worker starts afresh)
        file_tasks(cfg.task_files, only=(cfg.task, *cfg.also))  # the files its key names: its run's tasks'
    if cfg.trained_by is not None:  # scored by the node that fine-tuned the model: take its record
        from encoderlab.eval.protocol import adopt_record

        trainer = ctx.inputs[ctx.node.deps[0]]
        rec = adopt_record(
            trainer.path,
            trainer.result["model"],
            cfg.task,
            cfg.lr,
            cfg.seed,
            ctx.out_dir,
            cfg.max_steps,
            trainer.result.get("pooling") or None,
        )
        return to_dict(rec)
    em = _eval_model(ctx, model_source(ctx), cfg.source_files)
    rec = eval_node(em, cfg.task, cfg.lr, cfg.seed, out=ctx.out_dir, max_steps=cfg.max_steps, also=cfg.also)
    return to_dict(rec)  # the EvalRecord, as the report reads it back


# --------------------------------------------------------------------------- cka


def run_cka(ctx: NodeContext) -> dict:
    """Layer-wise CKA of run a against run b, with b's seed twin as the noise baseline."""
    from encoderlab.analysis.cka import compare
    from encoderlab.analysis.inputs import Encoding, analysis_length, load_model
    from encoderlab.analysis.plots import write_json
    from encoderlab.atomic import json_safe
    from encoderlab.study.checks import cka_pool_problem

    node = CkaNode.of(ctx.node)
    cfg = node.analysis
    texts = read_keyed_texts(ctx, cfg.texts, node.texts_digest)  # a local file: the one its key holds
    if problem := cka_pool_problem(f"cka {cfg.a}-vs-{cfg.b}", cfg, len(texts)):  # was n = the pool, silently
        raise UserError(problem)
    by_model = {  # a model trained by the study, or a start model compared as is (`CkaNode.sources`)
        ctx.inputs[d].node.name.split("/", 1)[1]: ctx.inputs[d].path / "run" / "final" for d in ctx.node.deps
    } | node.sources
    recheck_sources(ctx, node.sources, node.source_files)  # a local folder compared as is: the files keyed
    a, b = (load_model(str(by_model[m])) for m in node.models[:2])
    noise = cfg.noise
    if noise and noise[1] != cfg.b:
        raise UserError(f"the seed-noise pair of a CKA must be (twin of {cfg.b}, {cfg.b}), got {noise}")
    twin = load_model(str(by_model[node.models[2]])) if noise else None
    recheck_sources(ctx, node.sources, node.source_files)  # and held them while loaded
    try:  # the default 512 is `analyze cka`'s: capped at the models' positions (study.checks checked the rest)
        length = analysis_length(
            None if cfg.max_length == CkaSpec.max_length else cfg.max_length,
            [a, b, *([twin] if twin else [])],
            "max_length",
        )
    except UserError as exc:
        raise UserError(f"cka {cfg.a}-vs-{cfg.b}: {exc}") from None
    try:  # a refusal of the models' features ("model A gives hidden states that are not finite") names the CKA
        report = compare(a, b, texts, baseline=twin, n=cfg.n_texts, encoding=Encoding(max_length=length))
    except UserError as exc:
        named = ", ".join(f"{k} {m}" for k, m in zip(("A", "B", "B'"), node.models))
        raise UserError(f"cka {cfg.a}-vs-{cfg.b} ({named}): {exc}") from None
    data = report.to_dict()
    # strict: an infinite ratio is null, as `analyze cka` writes it
    write_json(data, ctx.out_dir / "cka.json")
    layers = data["layers"]
    # the result too: the node's marker and the report's results.json held `Infinity` and `NaN`
    return json_safe(
        {
            "a": cfg.a,
            "b": cfg.b,
            "divergence": [r["divergence"] for r in layers],
            "noise_divergence": [r.get("baseline_divergence") for r in layers] if noise else None,
            "ratio": [r.get("ratio") for r in layers] if noise else None,
            # each layer's interval over sampling seeds, drawn about its ratio in the report's CKA figure
            **{k: [r.get(k) for r in layers] if noise else None for k in ("ratio_ci_low", "ratio_ci_high")},
            "mean_divergence": data["mean_divergence"],
            # `analyze cka`'s rule: none below 3 layers (paper 2's groups), where the node failed after every run
            "low_layers": data["low_layers"] if noise else None,
            "n_texts": report.n_texts,  # with the width: the claim says when CKA is inflated
            "hidden_size": max(
                (getattr(getattr(m, "config", None), "hidden_size", 0) or 0 for m, _ in (a, b))
            ),
        }
    )


# --------------------------------------------------------------------------- backend


def run_report(ctx: NodeContext) -> dict:
    """The report node (`report.report_node`), imported when it runs: the report reads CKA and
    statistics (torch, through `analysis`), which building a graph for `study list` never needs."""
    from encoderlab.study.report import report_node

    return report_node(ctx)


def real_backend() -> Backend:
    """The node kinds that do the real work."""
    from encoderlab.study.checks import check_fetched, check_start

    return Backend(
        kinds={
            "prepare": NodeKind(run=run_prepare),
            "pretrain": NodeKind(run=run_pretrain),
            "eval": NodeKind(run=run_eval),
            "cka": NodeKind(run=run_cka),
            "report": NodeKind(run=run_report),
        },
        suite_tasks=suite_families,
        file_tasks=file_tasks,
        task_signature=task_signature,
        training_groups=training_groups,
        required_assets=required_assets,
        decontamination=dataset_decontamination,
        keyed_sets=keyed_sets,
        model_identity=model_identity,
        model_files=model_files,
        texts_identity=texts_identity,
        check_start=check_start,
        check_fetched=check_fetched,
    )
