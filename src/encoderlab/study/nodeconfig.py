"""The typed config of each kind of study node: what `graph.py` writes and `nodes.py` reads.

A node's config is JSON data (`Node.config`): its key is the hash of that data, and the study folder
records it (`study.json`, each `node.json`). These classes are its typed form on both sides of that
seam, so the graph builds a typed object and a node function, the report and the study reader get
typed fields back (`PretrainNode.of(node).run`, `EvalNode.of(node).lr`) instead of looking keys up
in a dict.

Trade-offs
  * `data()` writes exactly the layout the graph hashed before these classes existed (flat, an absent
    branch or task-file list left out), not `to_dict` of the class: node keys hash it, and a key
    change would rerun every study folder (tests/study/test_node_keys.py holds them).
  * `of(node)` reads with the strict typed loader, so a config of another shape fails naming the
    node rather than deep inside a run.
  * A `prepare` node holds its dataset without the folder a dataset prepared outside the study sits in
    (`DataSpec.prepared`) but with that folder's content digest, so a moved folder keeps its keys.
  * An eval or CKA node of a model evaluated as is from a folder on this machine holds its path (what the
    node loads, the start checks look for and the plan sizes) and the identity of the files its load reads
    (`source_files`); its key holds the identity instead of the path (`key_data`, `Graph.add`), so a model
    replaced in place is evaluated again and a moved one keeps its results. Its marker records the path it
    ran from. A pretraining node continuing such a folder (`PretrainNode.init_files`) is keyed alike: its
    run's `model.init` is the path it trains from, left out of the key for the files' identity. A CKA node's
    texts file on this machine is too (`CkaNode.texts_digest`, `study/localtexts.py`): its path is recorded,
    its content keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from encoderlab.config import from_dict, to_dict
from encoderlab.data.stoprule import DEFAULT_STOP
from encoderlab.study.spec import CkaSpec, DataSpec

if TYPE_CHECKING:
    from encoderlab.study.graph import Node
    from encoderlab.train.config import RunConfig


@dataclass(frozen=True, kw_only=True)
class PrepareNode:
    """A prepare node: one dataset of the study, tokenized here or read where it was prepared."""

    dataset: DataSpec
    """The dataset as the study declares it (its `prepared` path is not part of the node)."""
    seq_len: int | None
    """The study's sequence length (None: the recipes' own)."""
    prepared: str | None = None
    """For a dataset prepared outside the study, the digest of what its folder holds
    (`study/prepared.py:identity`); None: the node prepares it."""
    against: tuple[str, ...] = ()
    """The evaluation sets whose texts are removed from the corpus (`needs.decontamination_sets`),
    resolved from the study, so the key says what was removed; absent from the key when none. The study's
    own task files' test splits are not among them (their paths would tie the key to where the files are):
    `test_texts` stands for them."""
    test_texts: str | None = None
    """The digest of the test texts of the study's own task files (`needs.keyed_sets`), which the node also
    cleans the corpus against, read at run time from the study's task files (`needs.dataset_decontamination`)
    and checked against it; None (absent from the key): none."""

    def data(self) -> dict[str, Any]:
        """The node's config as JSON data (the layout its key hashes)."""
        out = {**to_dict(self.dataset), "seq_len": self.seq_len}
        del out["name"], out["prepared"]  # the name is the node's; a folder's path would tie keys to it
        if out["stop"] == DEFAULT_STOP:  # the keys of studies from before the field (`DataSpec.stop`)
            del out["stop"]
        out |= {"against": list(self.against)} if self.against else {}
        out |= {"test_texts": self.test_texts} if self.test_texts is not None else {}
        return out | ({"prepared": self.prepared} if self.prepared is not None else {})

    @classmethod
    def of(cls, node: Node) -> PrepareNode:
        """The typed config of a prepare node (strict: another shape names the node)."""
        cfg = dict(node.config)
        prepared, seq_len = cfg.pop("prepared", None), cfg.pop("seq_len")
        against, test_texts = tuple(cfg.pop("against", ())), cfg.pop("test_texts", None)
        dataset = from_dict(DataSpec, {**cfg, "name": node.name.split("/", 1)[1]}, where=node.name)
        return cls(
            dataset=dataset, seq_len=seq_len, prepared=prepared, against=against, test_texts=test_texts
        )


@dataclass(frozen=True, kw_only=True)
class BranchFrom:
    """The checkpoint of another pretraining node that a branched run starts from (`study/branch.py`)."""

    node: str
    """The base's pretraining node name (`pretrain/MODEL`)."""
    step: int
    """The base's step whose checkpoint the branch resumes."""


@dataclass(frozen=True, kw_only=True)
class PretrainNode:
    """A pretraining node: the run it trains, resolved once at graph build (`resolve.resolve_run`)."""

    run: RunConfig
    """The complete RunConfig, paths inside the study folder filled in by the node."""
    tokens: int
    """The run's token budget (steps x global batch x sequence length)."""
    steps: int
    """The run's optimizer steps."""
    branch: BranchFrom | None = None
    """Where the run starts from another run's checkpoint instead of step 0 (None: it does not)."""
    init_files: str | None = None
    """For a `run.model.init` that is a folder on this machine, the identity of the files the trainer's load
    reads (`needs.model_identity` with `start`: a finished run folder's last checkpoint's `model/`, where
    `EvalNode.source_files` is of its `final/`), which the key holds in place of the path; None: an
    asset, a hub id, another run of the study, or none. Absent from the data when None: other nodes keep
    their keys."""

    def data(self) -> dict[str, Any]:
        """The node's config as JSON data (as recorded)."""
        out: dict[str, Any] = {"run": to_dict(self.run), "tokens": self.tokens, "steps": self.steps}
        if self.branch is not None:
            out["branch"] = {"from": self.branch.node, "step": self.branch.step}
        return out | ({"init_files": self.init_files} if self.init_files is not None else {})

    def key_data(self) -> dict[str, Any]:
        """The layout the node's key hashes: `data()`, a local start folder's path left out (`init_files`)."""
        out = self.data()
        if self.init_files is not None:
            model = {k: v for k, v in out["run"]["model"].items() if k != "init"}
            out["run"] = {**out["run"], "model": model}
        return out

    @classmethod
    def of(cls, node: Node) -> PretrainNode:
        """The typed config of a pretrain node (strict: another shape names the node)."""
        from encoderlab.train.config import RunConfig

        cfg = node.config
        branch = cfg.get("branch")
        return cls(
            run=from_dict(RunConfig, cfg["run"], where=node.name),
            tokens=cfg["tokens"],
            steps=cfg["steps"],
            branch=None if branch is None else BranchFrom(node=branch["from"], step=branch["step"]),
            init_files=cfg.get("init_files"),
        )


@dataclass(frozen=True, kw_only=True)
class EvalNode:
    """An eval node: one fine-tuning run of the study's protocol, on one model or checkpoint."""

    model: str
    """The model id (`graph.run_id`)."""
    source: str | None
    """A start model evaluated as is (an asset, folder or hub id); None: the node's pretraining dependency."""
    step: int | None
    """The checkpoint's step; None: the run's final model."""
    suite: str | None
    """The evaluation suite the task belongs to (None: a study of task files only)."""
    task: str
    """The task."""
    task_signature: str
    """The hash of the task's definition: a changed task gets new nodes."""
    family: str
    """The task's family (sc, tc, qa, ir)."""
    lr: float
    """Fine-tuning learning rate."""
    seed: int
    """Fine-tuning seed."""
    max_steps: int | None
    """The study's cap on fine-tuning steps (None: the task's own schedule)."""
    task_files: tuple[str, ...] = ()
    """Task files the task comes from (a task of one's own); empty for a suite's task."""
    also: tuple[str, ...] = ()
    """Tasks that `trains_as` this one (`eval.spec.training_groups`): this node's fine-tuned model
    scores them too, and their nodes take those records."""
    trained_by: str | None = None
    """The task whose node fine-tuned the model this node scores (its one dependency); None: its own run."""
    source_files: str | None = None
    """For a `source` that is a folder on this machine, the identity of the files its load reads
    (`needs.model_identity`), which the key holds in place of the path; None: an asset or a hub id, or none."""

    def data(self) -> dict[str, Any]:
        """The node's config as JSON data (as recorded); fields at their defaults are left out, so nodes that
        existed before them keep their keys."""
        out = to_dict(self)
        for name, default in (("task_files", ()), ("also", ()), ("trained_by", None), ("source_files", None)):
            if getattr(self, name) == default:
                del out[name]
        return out

    def key_data(self) -> dict[str, Any]:
        """The layout the node's key hashes: `data()`, a local folder's path left out (`source_files`)."""
        out = self.data()
        if self.source_files is not None:
            del out["source"]
        return out

    @classmethod
    def of(cls, node: Node) -> EvalNode:
        """The typed config of an eval node (strict: another shape names the node)."""
        return from_dict(cls, node.config, where=node.name)


@dataclass(frozen=True, kw_only=True)
class CkaNode:
    """A CKA node: the study's analysis and the model ids it compares."""

    analysis: CkaSpec
    """The analysis as the study declares it."""
    models: tuple[str, ...]
    """Model ids of a and b, then of the seed-noise twin when there is one."""
    sources: dict[str, str] = field(default_factory=dict)
    """Model id -> the start model (an asset, folder or hub id) of a run without a recipe, compared as is
    (as its eval nodes' `EvalNode.source`); a model trained by the study is a pretraining dependency.
    Absent from the key when empty, so CKAs of trained runs keep their keys."""
    source_files: dict[str, str] = field(default_factory=dict)
    """Model id -> the identity of the files its load reads, for each of `sources` that is a folder on this
    machine (`EvalNode.source_files`); the key holds it in place of that path."""
    texts_digest: str | None = None
    """For `analysis.texts` that is a file on this machine, the sha256 of its bytes (`localtexts.texts_identity`),
    which the key holds in place of its path; None: an asset name. Absent from the data when None: a CKA of an
    asset's texts keeps its key."""

    def data(self) -> dict[str, Any]:
        """The node's config as JSON data (as recorded)."""
        out = {**to_dict(self.analysis), "models": list(self.models)}
        out |= {"sources": dict(self.sources)} if self.sources else {}
        out |= {"texts_digest": self.texts_digest} if self.texts_digest is not None else {}
        return out | ({"source_files": dict(self.source_files)} if self.source_files else {})

    def key_data(self) -> dict[str, Any]:
        """The layout the node's key hashes: `data()`, the paths of local folders (`source_files`) and of a local
        texts file (`texts_digest`) left out."""
        out = self.data()
        if self.texts_digest is not None:
            del out["texts"]
        if self.source_files:
            paths = {m: s for m, s in self.sources.items() if m not in self.source_files}
            out.pop("sources")
            out |= {"sources": paths} if paths else {}
        return out

    @classmethod
    def of(cls, node: Node) -> CkaNode:
        """The typed config of a CKA node (strict: another shape names the node)."""
        own = ("models", "sources", "source_files", "texts_digest")
        analysis = {k: v for k, v in node.config.items() if k not in own}
        return cls(
            analysis=from_dict(CkaSpec, analysis, where=node.name),
            models=tuple(node.config["models"]),
            sources=dict(node.config.get("sources", {})),
            source_files=dict(node.config.get("source_files", {})),
            texts_digest=node.config.get("texts_digest"),
        )
