"""A study as a graph of nodes with content-hash keys.

`build_graph(spec, backend)` expands a `StudySpec` into nodes: one `prepare` per dataset, one
`pretrain` per run and pretraining seed, one `eval` per (model, checkpoint, task, LR, seed), one
`cka` per analysis and a final `report` (the eval nodes are `evalnodes.py`'s). A pretraining node
holds the run's complete `RunConfig`, resolved here once (`resolve.resolve_run`) and stored as data
(`nodeconfig.PretrainNode`, as the eval and CKA nodes store theirs); the node reads it back typed, with the strict loader. A node's key is the
SHA-256 of its kind, its resolved config and the keys of the nodes it reads, so:
- a node whose config and inputs did not change is found finished and never recomputed, even
  when the study around it changed (a new run added, another scale in the same folder);
- a change anywhere upstream (a recipe default, a data seed) changes every key below it.

Configs never hold paths: inputs reach a node at run time as folders of its dependencies, so a
study folder can be moved without invalidating anything.

The graph is also where the controlled variables are enforced, before anything runs: runs in one
comparison group must read the same documents (same corpus, document cap and data seed; the same
prepared data when they share a tokenizer) and have the same token budget, and every model is
evaluated with the study's one protocol. A violation is a `UserError` naming the runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from encoderlab.errors import UserError
from encoderlab.study.branch import Branch, PlannedRun, plan_branches, with_branches
from encoderlab.study.evalnodes import add_evals
from encoderlab.study.nodeconfig import BranchFrom, CkaNode, PrepareNode, PretrainNode
from encoderlab.study.prepared import check_corpus, identity, prepared_meta
from encoderlab.study.resolve import INIT_PLACEHOLDER, resolve_run, tokens
from encoderlab.study.rungs import check_ladder_study
from encoderlab.study.spec import DataSpec, RunSpec, StudySpec

if TYPE_CHECKING:
    from encoderlab.train.config import RunConfig


@dataclass(frozen=True)
class KeyedSets:
    """A prepare node's decontamination sets as its key holds them, and each task file's texts beside it: one
    reading of the study's task files' test splits (`Backend.keyed_sets`). The key's digest and each file's
    were two readings, each extracting and hashing every test text again (`keyed_sets`, then `set_versions`)."""

    named: tuple[str, ...]
    """The named sets (the data layer reads them), in the key as they are."""
    digest: str | None = None
    """The digest of the texts of the study's own task files' test splits together (`needs.sets_digest`), which
    the key holds for them instead of their paths; None: none among the sets."""
    versions: dict[str, str] = field(default_factory=dict)
    """{set name: the digest of its own texts} of those task files, handed to the node aside from its key
    (`Node.aside`), so a refusal names the files that changed; {}: not known (a study resumed with its files
    gone)."""


@dataclass(frozen=True)
class Node:
    """One unit of work whose finished output is cached under its key."""

    kind: str
    """prepare | pretrain | eval | cka | report (or any kind the backend defines)."""
    name: str
    """Readable id, unique in the study (e.g. 'eval/clm@150/tweets/lr0.0005/s1')."""
    config: dict[str, Any]
    """Resolved configuration (JSON data, no paths)."""
    deps: tuple[str, ...] = ()
    """Names of the nodes whose outputs this one reads."""
    key: str = ""
    """Content hash of (kind, config, dependency keys); set by `Graph.add`."""
    aside: dict[str, Any] = field(default_factory=dict, compare=False)
    """What the node may read beside its config that its key does not hold, nor graph.json: a prepare node's
    test texts per task file (`KeyedSets.versions`), and the file digests of a local model folder a node loads
    (`source_files`: `Backend.model_files`), so a refusal names the files that changed. Kept out of
    the key: a key holding each file's path re-keyed the data of a moved task file."""


@dataclass(frozen=True)
class NodeKind:
    """How to run a kind of node."""

    run: Callable[..., dict]
    """`run(ctx: NodeContext) -> dict`: writes into ctx.out_dir; returns a JSON result. A result key
    'compute' (tokens, flops) is recorded in compute.jsonl. ctx.out_dir may hold the partial output
    of an attempt that crashed: the function must overwrite or resume it."""


@dataclass
class Backend:
    """Everything the graph needs from the rest of encoderlab (real or, in tests, fake)."""

    kinds: dict[str, NodeKind]
    """Node kinds by name."""
    suite_tasks: Callable[[str], dict[str, str]]
    """suite -> {task: family} for every task of the suite."""
    file_tasks: Callable[[tuple[str, ...]], dict[str, str]] = lambda files: {}
    """Task files or folders -> {task: family} of their tasks (registered, so the other calls know them)."""
    task_signature: Callable[[str, int | None, str | None], str] = lambda task, max_steps, source: ""
    """(task, fine-tuning step cap, the outside model evaluated as is or None) -> the hash of the task's
    definition as an eval node runs it: a task whose definition changes gets new eval nodes instead of
    its old results."""
    required_assets: Callable[[StudySpec], list[str]] = lambda spec: []
    """Assets the study reads (checked, and fetched if allowed, before anything runs)."""
    decontamination: Callable[[StudySpec, DataSpec], tuple[str, ...]] = lambda spec, d: ()
    """The evaluation sets a dataset of the study is cleaned against (in its prepare key)."""
    keyed_sets: Callable[[tuple[str, ...]], KeyedSets] = lambda against: KeyedSets(against)
    """Those sets as the prepare key holds them: the named sets, the digest of the texts of those read by
    evaluation (a study's own task files' test splits: their content keys the node, not their path) and each
    file's own digest, read once (`needs.keyed_sets`)."""
    model_identity: Callable[[str, bool], str | None] = lambda source, start: None
    """(a start model evaluated as is or continued, whether continued) -> the identity of the files its load
    reads when it is a folder on this machine (`needs.model_identity`: a finished run folder's `final/` as is,
    its last checkpoint's `model/` continued, as the trainer loads it), which keys its eval and CKA nodes, or the
    pretraining node continuing it, instead of its path; None: keyed by the name."""
    model_files: Callable[[str, str, bool], dict[str, str]] = lambda source, identity, start: {}
    """(that start model, its identity just read, whether continued) -> {file: sha256} of the files the identity
    digests (`localmodels.model_files`; {}: not known), handed to the nodes reading it beside their key
    (`Node.aside`), so a node refusing the folder changed since names the files that changed
    (`localmodels.check_model`)."""
    texts_identity: Callable[[str], str | None] = lambda texts: None
    """A CKA's `texts` -> the sha256 of the file when it is one on this machine (`localtexts.texts_identity`),
    which keys its node instead of the path; None: keyed by the name (an asset)."""
    training_groups: Callable[[tuple[str, ...]], list[tuple[str, ...]]] = lambda tasks: [(t,) for t in tasks]
    """Tasks -> the same tasks grouped by the fine-tuning run they share (`Task.trains_as`), the trainer
    first: one eval node trains, the others take its records."""
    check_start: Callable[[StudySpec, Path, Graph], None] = lambda spec, study_dir, graph: None
    """(spec, study folder, graph) -> refuse what a node would refuse of its inputs (`study/checks.py`:
    sources, start models, rows against memory and data), before the study fetches its assets or writes
    anything (what an asset not fetched yet holds is not read: `check_fetched` checks it)."""
    check_fetched: Callable[[StudySpec, Path, Graph, frozenset[str]], None] = (
        lambda spec, study_dir, graph, fetched: None
    )
    """(spec, study folder, graph, the assets just fetched) -> the checks of `check_start` that read what
    those assets hold, which it left (`checks.check_fetched`): each check runs once."""


@dataclass
class Graph:
    """Nodes in insertion order, which is a topological order (a node is added after its deps)."""

    nodes: dict[str, Node] = field(default_factory=dict)
    keyed: bool = True
    """False: the nodes get no key (an empty `key`), for a graph that is only counted (the cost column of
    `study list`, `catalog.estimate_minutes`): hashing a paper study's thousands of eval nodes was a
    fifth of the listing, and nothing there reads a key."""

    def add(
        self,
        kind: str,
        name: str,
        config: dict,
        deps: tuple[str, ...] = (),
        aside: dict | None = None,
        key_config: dict | None = None,
    ) -> Node:
        """Add a node keyed by `key_config` (`config` when None): an eval, CKA or pretraining node's config
        less the path of a local model folder, whose files' identity it holds (`EvalNode.key_data`,
        `PretrainNode.key_data`)."""
        missing = [d for d in deps if d not in self.nodes]
        assert not missing, f"node {name} added before its dependencies {missing}"
        key = ""
        if self.keyed:
            keyed = config if key_config is None else key_config
            payload = {"kind": kind, "config": keyed, "deps": sorted(self.nodes[d].key for d in deps)}
            key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        node = Node(kind=kind, name=name, config=config, deps=deps, key=key, aside=aside or {})
        self.nodes[name] = node
        return node

    def __iter__(self):
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)


def run_id(run: RunSpec, seed: int, spec: StudySpec) -> str:
    """The model's id in node names and tables: the run name, plus `/sN` when the run is trained at
    several pretraining seeds."""
    return run.name if len(spec.seeds_of(run)) == 1 else f"{run.name}/s{seed}"


def pretrain_config(
    run: RunConfig, branch: BranchFrom | None = None, files: str | None = None
) -> PretrainNode:
    """A pretraining node's config: the resolved RunConfig, its budget for readers, and the identity of the
    files of a local start folder (`_source_files`)."""
    return PretrainNode(run=run, tokens=tokens(run), steps=run.steps, branch=branch, init_files=files)


def _check_groups(spec: StudySpec, resolved: dict[str, RunConfig]) -> None:
    """Refuse a comparison group whose runs differ in data or token budget."""
    data = {d.name: d for d in spec.data}
    groups: dict[str, list[RunSpec]] = {}
    for run in spec.runs:
        if run.recipe is not None:
            groups.setdefault(run.group, []).append(run)
    for group, runs in groups.items():
        first = runs[0]
        ref = data[first.data]
        for run in runs[1:]:
            d = data[run.data]
            if (d.corpus, d.max_docs, d.seed) != (ref.corpus, ref.max_docs, ref.seed) or (
                d.tokenizer == ref.tokenizer and d.name != ref.name
            ):
                raise UserError(
                    f"runs {first.name} and {run.name} are compared (group '{group}') but read different data "
                    f"({ref.name} vs {d.name}); give them the same dataset or put them in different groups"
                )
        budgets = {r.name: tokens(resolved[r.name]) for r in runs}
        if len(set(budgets.values())) > 1:
            listing = ", ".join(f"{n}: {t:,}" for n, t in budgets.items())
            raise UserError(
                f"runs in group '{group}' have different token budgets ({listing}); compared runs need the same "
                "budget: align their steps, batch or sequence length, or give the runs of each budget a `group:` of their own "
                "(a ladder's rungs)"
            )


@dataclass(frozen=True)
class Pretraining:
    """A model of the study at one pretraining seed: its run and, if trained, its resolved RunConfig."""

    model: str
    """Model id (`run_id`)."""
    run: RunSpec
    seed: int
    config: RunConfig | None
    """None: a model evaluated as is."""
    base: str | None = None
    """Model id of the study run it continues."""
    branch: Branch | None = None
    """The checkpoint of another model of the study it starts from (`study/branch.py`; `Branch.base` is
    that model's id)."""


def pretraining(spec: StudySpec) -> list[Pretraining]:
    """Every model of the study in training order, each trained run resolved once (a continued run after
    its base, with the base's config), and the controlled variables of each group checked."""
    names = {r.name for r in spec.runs}
    out: list[Pretraining] = []
    by_id: dict[str, RunConfig] = {}
    for seed in sorted({s for run in spec.runs for s in spec.seeds_of(run)}):
        for run in _init_order(spec):
            if seed not in spec.seeds_of(run):
                continue
            rid = run_id(run, seed, spec)
            if run.recipe is None:
                out.append(Pretraining(rid, run, seed, None))
                continue
            base = run_id(spec.run(run.init), spec.init_seed(run, seed), spec) if run.init in names else None
            by_id[rid] = resolve_run(spec, run, seed, by_id[base] if base else None)
            out.append(Pretraining(rid, run, seed, by_id[rid], base))
    first: dict[str, RunConfig] = {}
    for p in out:
        if p.config is not None:
            first.setdefault(p.run.name, p.config)
    _check_groups(spec, first)
    check_ladder_study(spec, first)
    _check_eval_steps(spec, first)
    return _branched(spec, out)


def _check_eval_steps(spec: StudySpec, resolved: dict[str, RunConfig]) -> None:
    """Refuse an intermediate checkpoint a run never writes: its evaluation nodes failed after the
    pretraining ("checkpoint ... is missing"), hours into the study."""
    for run in spec.runs:
        total = resolved[run.name].steps if run.name in resolved else 0
        bad = [s for s in run.eval_steps if not 0 < s < total]
        if bad:
            raise UserError(
                f"run {run.name}: eval_steps {bad} are not steps of its {total:,}-step run; give intermediate "
                f"steps between 1 and {total - 1:,}, or drop them"
            )


def _branched(spec: StudySpec, models: list[Pretraining]) -> list[Pretraining]:
    """The models with the branches they start from, and bases keeping those checkpoints."""
    trained = [PlannedRun(p.model, p.config, (p.run.data, p.base)) for p in models if p.config is not None]
    branches = plan_branches(trained) if spec.branch else {}
    configs = {r.name: r.config for r in with_branches(trained, branches)}
    return [
        dataclasses.replace(p, config=configs[p.model], branch=branches.get(p.model)) if p.config else p
        for p in models
    ]


def prepare_graph(
    spec: StudySpec, backend: Backend, recorded: Mapping[str, str] | None = None, keyed: bool = True
) -> Graph:
    """The study's prepare nodes (one per dataset, a tokenizer's trainer first): the start of
    `build_graph`, and all `study plan --out DIR` needs to find the prepared data of this study's datasets.
    `recorded`: dataset -> the content digest of its `--prepared` folder, not there any more, as the study
    folder recorded it (`absent.recorded_digests`); every other folder is read. `keyed`: `Graph.keyed`."""
    graph = Graph(keyed=keyed)
    recorded = recorded or {}
    sets: dict[tuple[str, ...], KeyedSets] = {}  # `against` -> as the key holds it

    def reused(d) -> bool:  # reads the tokenizer another dataset trains (spec.DataSpec.tokenizer)
        return d.tokenizer != d.name and d.tokenizer in {x.name for x in spec.data}

    for d in sorted(spec.data, key=reused):  # a tokenizer's trainer first
        digest = None
        if d.name in recorded:  # gone: as recorded (`study/absent.py`)
            digest = recorded[d.name]
        elif d.prepared is not None:  # the folder's content, not its path: a moved folder keeps its keys
            meta = prepared_meta(d.prepared, d.name)
            check_corpus(meta, d.corpus, d.name, d.prepared)
            digest = identity(meta)
        against, tested, versions = backend.decontamination(spec, d), None, {}
        if keyed and against:  # one reading of the task files for every dataset cleaned alike
            if against not in sets:
                sets[against] = backend.keyed_sets(against)
            against, tested, versions = sets[against].named, sets[against].digest, sets[against].versions
        node = PrepareNode(
            dataset=d, seq_len=spec.seq_len, prepared=digest, against=against, test_texts=tested
        )
        cfg = node.data()
        deps = (f"prepare/{d.tokenizer}",) if reused(d) else ()
        graph.add("prepare", f"prepare/{d.name}", cfg, deps, {"test_texts": versions} if versions else None)
    return graph


def build_graph(
    spec: StudySpec,
    backend: Backend,
    trained: list[Pretraining] | None = None,
    recorded: Mapping[str, str] | None = None,
    keyed: bool = True,
) -> Graph:
    """Expand `spec` into nodes, resolving configs and enforcing the controlled variables; `trained`:
    the study's `pretraining(spec)` when the caller has it already (resolved once for graph and plan);
    `recorded`: as `prepare_graph`'s; `keyed=False`: nodes without keys, for counting (`Graph.keyed`)."""
    if not spec.eval.task_files:  # none to load (and `study list` imports no evaluation for a built-in study)
        return _build_graph(spec, backend, trained, recorded, keyed)
    from encoderlab.eval.tasks.custom import read_once

    with read_once():  # each task file loaded once, for the prepare keys' test texts and the eval keys' tasks
        return _build_graph(spec, backend, trained, recorded, keyed)


def _build_graph(
    spec: StudySpec,
    backend: Backend,
    trained: list[Pretraining] | None,
    recorded: Mapping[str, str] | None,
    keyed: bool,
) -> Graph:
    graph = prepare_graph(spec, backend, recorded, keyed)
    models: dict[str, tuple[RunSpec, str | None, str | None]] = {}  # id -> (run, pretrain node, source)
    trained = pretraining(spec) if trained is None else trained
    # evaluated as is, and continued: a run folder is read as each load reads it (its `final/`, its checkpoint)
    as_is = [p.run.init for p in trained if p.config is None]
    files, parts = _source_files(spec, backend, as_is, keyed, start=False)
    continued = [p.config.model.init for p in trained if p.config]
    inits, init_parts = _source_files(spec, backend, continued, keyed)
    for p in trained:
        if p.config is None:
            models[p.model] = (p.run, None, p.run.init)
            continue
        deps = [f"prepare/{p.run.data}", *([f"pretrain/{p.base}"] if p.base else [])]
        branch = None
        if p.branch is not None:  # the node starts from its base's checkpoint (study/branch.py)
            branch = BranchFrom(node=f"pretrain/{p.branch.base}", step=p.branch.step)
            deps.append(branch.node)
        init = p.config.model.init or ""
        node = pretrain_config(p.config, branch, inits.get(init))
        aside = {"source_files": init_parts[init]} if init in init_parts else None
        graph.add("pretrain", f"pretrain/{p.model}", node.data(), tuple(deps), aside, node.key_data())
        models[p.model] = (p.run, f"pretrain/{p.model}", None)

    evals = add_evals(graph, spec, backend, models, files, parts)

    analyses, local_texts = [], set()
    for c in spec.cka:
        pair_ids = [run_id(r, spec.seeds_of(r)[0], spec) for r in map(spec.run, (c.a, c.b, *(c.noise or ())))]
        deps = tuple(dict.fromkeys(models[m][1] for m in pair_ids if models[m][1]))
        sources = {m: models[m][2] for m in pair_ids if not models[m][1] and models[m][2]}  # compared as is
        local = {m: files[s] for m, s in sources.items() if files.get(s)}
        texts = backend.texts_identity(c.texts) if keyed else None  # a local file: its content, not its path
        local_texts |= {c.texts} if texts is not None else set()
        cka = CkaNode(
            analysis=c, models=tuple(pair_ids), sources=sources, source_files=local, texts_digest=texts
        )
        aside = {"source_files": {m: parts[s] for m, s in sources.items() if s in parts}}
        analyses.append(graph.add("cka", f"cka/{c.a}-vs-{c.b}", cka.data(), deps, aside, cka.key_data()).name)

    pretrains = [n.name for n in graph if n.kind == "pretrain"]
    graph.add(
        "report", "report", report_config(spec, frozenset(local_texts)), (*pretrains, *evals, *analyses)
    )
    return graph


def _source_files(
    spec: StudySpec, backend: Backend, starts: list[str | None], keyed: bool, start: bool = True
) -> tuple[dict[str, str | None], dict[str, dict[str, str]]]:
    """{start model evaluated as is (`start` False) or continued: the identity of its files
    (`Backend.model_identity`)}, each read once, and {such a model: the digests of those files}, which a node
    refusing a change names (`Backend.model_files`); another run of the study (`resolve.INIT_PLACEHOLDER`) is
    none; `keyed` False (nodes without keys): none read."""
    sources = dict.fromkeys(s for s in starts if keyed and s and s != INIT_PLACEHOLDER)
    try:
        files = {source: backend.model_identity(source, start) for source in sources}
    except UserError as exc:
        raise UserError(f"study {spec.name}: {exc}") from None
    return files, {s: backend.model_files(s, i, start) for s, i in files.items() if i}


def report_config(spec: StudySpec, local_texts: frozenset[str] = frozenset()) -> dict:
    """The report node's config: the study, its scale and a digest of its spec, whose claims, baseline,
    labels and description only the report reads (a study file whose claims change writes its report
    again). A folder given with `--prepared` counts by content, in its prepare node's key, not by path; so
    does a CKA's texts file on this machine (`local_texts`: the `texts` its CKA node keys by the file's
    digest), its path left out here too: a moved texts file or study folder kept the CKA and re-keyed the
    report. An asset's name stays, so a built-in study's report keeps its key. A local corpus, task file or
    start model folder stays by path: the report names each (the data row, the runs' start, the tasks), so
    a move must write it again; their content reaches this key through the input nodes' keys (a start
    model's and a task's by content, a corpus's prepare node by path, its content checked by freshness).
    The spec is digested as resolved (`_as_resolved`): a field written out at the value its omission gives
    keeps the report's key, as it keeps every other node's."""
    from encoderlab.config import to_dict
    from encoderlab.data.stoprule import DEFAULT_STOP

    data = _as_resolved(to_dict(spec), spec)
    for d in data["data"]:
        d.pop("prepared", None)
        if d.get("stop") == DEFAULT_STOP:  # as the prepare node's key: a study without it keeps its key
            del d["stop"]
    for c in data["cka"]:  # the report reads the CKA's result, keyed by the file's content
        if c["texts"] in local_texts:
            del c["texts"]
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return {"study": spec.name, "scale": spec.scale, "spec": digest}


_TRAINING = ("size", "seq_len", "micro_batch", "grad_accum", "steps", "run_overrides")
"""The study's fields that only shape its trained runs' RunConfigs (and the prepare nodes they read)."""
_RUN_TRAINING = ("params", "overrides", "steps", "seed", "seeds", "eval_steps")
"""A trained run's fields that only shape its RunConfig at each pretraining seed and the checkpoints kept."""


def _as_resolved(data: dict, spec: StudySpec) -> dict:
    """`data`, the spec's `to_dict`, as the study resolves it, so a field written out at its default is the
    study with it omitted (a run's `label: NAME`, `seeds` as the study's, `params` at the value the scale
    gives, an override the study's `run_overrides` sets already): every pretraining node's key holds its
    RunConfig as resolved and the report depends on each, so the training fields are left out here, not
    compared as written; a field whose omission means another's value (a run's label, tasks, the checkpoints'
    LRs) holds that value. The trade-off: the report, reused, shows such settings as the file it was written
    from wrote them (`report._settings`: `ratio=0.4` or `–`, the same run). A study training nothing keeps
    its study fields as written: no node holds them."""
    trains = any(r.recipe is not None for r in spec.runs)
    for name in _TRAINING if trains else ():
        del data[name]
    for written, run in zip(data["runs"], spec.runs, strict=True):
        written |= {"label": run.display, "tasks": list(run.tasks or spec.eval.tasks)}
        for name in _RUN_TRAINING if run.recipe is not None else ():  # a run evaluated as is has none
            del written[name]
    data["eval"]["checkpoint_lrs"] = list(spec.eval.checkpoint_lrs or spec.eval.lrs)
    return data


def _init_order(spec: StudySpec) -> list[RunSpec]:
    """Runs ordered so that a run comes after the run it starts from; a cycle is a UserError."""
    names = {r.name for r in spec.runs}
    done: list[RunSpec] = []
    pending = list(spec.runs)
    while pending:
        ready = [r for r in pending if r.init not in names or r.init in {d.name for d in done}]
        if not ready:
            own = next((r for r in pending if r.init == r.name), None)
            if own is not None:
                raise UserError(
                    f"run {own.name} starts from itself (init: {own.name}); start it from another run of the "
                    "study, an asset, a model folder or a hub id"
                )
            raise UserError(
                f"runs {', '.join(r.name for r in pending)} start from each other in a cycle; break it"
            )
        done += ready
        pending = [r for r in pending if r not in ready]
    return done
