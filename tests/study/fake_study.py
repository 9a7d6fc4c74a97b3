"""A study backend with fake, fast, deterministic nodes (no model is trained).

Used by the study tests in-process and, for the kill tests, in other processes: as a script,
`python fake_study.py OUT [JOBS]` runs the small study into OUT, and `run_small` does the same in a
child of the kill harness's zygote. Scores are chosen so that the claims have known outcomes: MLM
beats CLM on SC by a wide margin (significant), CLM beats MLM early.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.study.graph import Backend, NodeKind
from encoderlab.study.spec import CkaSpec, ClaimSpec, DataSpec, EvalSpec, RunSpec, StudySpec

FAIL_ON: dict[str, str | None] = {
    "node": os.environ.get("FAKE_STUDY_FAIL_ON"),
    "as": os.environ.get("FAKE_STUDY_FAIL_AS", "disk"),
}
"""Fault injection: the first node whose name contains FAIL_ON["node"] raises OSError(ENOSPC), or with
FAIL_ON["as"] == "user" a UserError that names a file alone, as a truncated model's does, or with "quota",
"size" or "readonly" the OSError of a spent disk quota, a file past the size limit or a file system gone
read-only (the variables reach worker processes, which import this module afresh)."""
_WRITE_FAILURES = {
    "disk": errno.ENOSPC,
    "quota": errno.EDQUOT,
    "size": errno.EFBIG,
    "readonly": errno.EROFS,
}
SLEEP = float(os.environ.get("FAKE_STUDY_SLEEP", "0"))

TASKS = {"sst": "sc", "mnli": "sc", "ner": "tc", "squad": "qa"}
BASE = {"pfs-mlm": 70.0, "pfs-clm": 60.0, "pfs-clm-mlm": 72.0}
DEGENERATE: set[tuple[str, str]] = set()
"""(model id, task) whose fine-tuned runs predict one class everywhere (empty: none)."""
PRETRAIN_EFFECT: dict[tuple[str, int], float] = {}
"""(run name, pretraining seed) -> a shift of every score of that checkpoint: pretraining noise, which
a test sets to study claims over pretraining seeds (empty: none)."""
CKA_SHAPE: dict[str, int] = {}
"""What the fake CKA node says it compared, {"n_texts": N, "hidden_size": W} (empty: unknown, as an old node)."""
SCORED_AS: dict[str, str] = {}
"""run name -> the run whose scores it gets, to the last digit: a twin, for a claim between two runs with
identical scores (a claim may not compare a run with itself) (empty: none)."""
TWIN = RunSpec(name="twin", label="MLM-40 twin", recipe="pfs-mlm", params={"ratio": 0.41})
"""A run a test may add to `small_spec`'s and score as mlm40 through `SCORED_AS`."""


WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "dogs",
    "ran",
    "over",
    "green",
    "hills",
    "and",
    "birds",
    "sang",
    "in",
    "tall",
    "old",
    "trees",
]
"""The words of `tiny_corpus`."""


def tiny_corpus(path: Path, docs: int) -> Path:
    """A JSONL corpus of `docs` short documents over `WORDS` (12-20 words each), for real prepare nodes."""
    lines = []
    for i in range(docs):
        text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(12 + i % 9))
        lines.append(json.dumps({"id": str(i), "text": text}) + "\n")
    path.write_text("".join(lines))
    return path


def _noise(*parts) -> float:
    """A deterministic number in [-1, 1) from its arguments."""
    h = hashlib.sha256(json.dumps(parts).encode()).digest()
    return int.from_bytes(h[:4], "little") / 2**31 - 1.0


def _write(path: Path, data) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    time.sleep(SLEEP)  # a window for the kill test to land between writing and renaming
    os.replace(tmp, path)


def _maybe_fail(ctx) -> None:
    target = FAIL_ON["node"]
    if target and target in ctx.node.name:
        FAIL_ON["node"] = None
        (ctx.out_dir / "partial.bin").write_bytes(b"half")
        if FAIL_ON["as"] == "user":
            raise UserError(f"{ctx.out_dir / 'partial.bin'} is truncated; delete it and run again")
        code = _WRITE_FAILURES[FAIL_ON["as"]]
        raise OSError(code, os.strerror(code), str(ctx.out_dir / "partial.bin"))


def prepare(ctx) -> dict:
    _maybe_fail(ctx)
    docs = [f"doc {i} of {'+'.join(ctx.node.config['corpus'])}" for i in range(20)]
    _write(ctx.out_dir / "data.json", docs)
    return {"docs": len(docs)}


def kind_of(run: dict) -> str:
    """The fake's stand-in for what a run trains, read from its resolved phases: pfs-mlm, -clm or -clm-mlm."""
    objectives = [p["objective"]["type"] for p in run["phases"]]
    return "pfs-" + "-".join(dict.fromkeys(objectives))


def pretrain(ctx) -> dict:
    _maybe_fail(ctx)
    cfg = ctx.node.config
    run, kind = cfg["run"], kind_of(cfg["run"])
    data = json.loads((ctx.inputs[ctx.node.deps[0]].path / "data.json").read_text())
    for step in [*run["checkpoint"]["keep_steps"], cfg["steps"]]:
        (ctx.out_dir / f"step_{step}").mkdir(exist_ok=True)
        _write(
            ctx.out_dir / f"step_{step}" / "model.json",
            {"recipe": kind, "step": step, "seed": run["seed"], "docs": len(data)},
        )
    metrics = [{"step": s, "loss": 10.0 / (1 + s) + BASE[kind] / 100} for s in range(0, cfg["steps"], 10)]
    (ctx.out_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    return {
        "steps": cfg["steps"],
        "metrics": "metrics.jsonl",
        "compute": {"tokens": cfg["tokens"], "flops": 6.0 * 1e6 * cfg["tokens"]},
    }


def evaluate(ctx) -> dict:
    _maybe_fail(ctx)
    c = ctx.node.config
    model = json.loads(
        (ctx.inputs[ctx.node.deps[0]].path / f"step_{c['step'] or _final(ctx)}" / "model.json").read_text()
    )
    base = BASE[model["recipe"]]
    if c["step"] is not None:  # early checkpoints: CLM ahead
        base = {"pfs-clm": 50.0}.get(model["recipe"], 40.0)
    if model["recipe"] == "pfs-clm" and c["family"] != "sc":
        base += 8.0  # CLM only loses on SC in this fake world
    lr_effect = -abs(c["lr"] - 1e-4) * (2e4 if model["recipe"] == "pfs-mlm" else 2e3)
    run, _, seed = c["model"].partition("/s")
    model_id = SCORED_AS.get(run, run) + c["model"][len(run) :]
    base += PRETRAIN_EFFECT.get((run, int(seed or 0)), 0.0)
    test = base + lr_effect + 0.5 * _noise(model_id, c["task"], c["lr"], c["seed"])
    val = test + 0.3 * _noise("val", model_id, c["task"], c["lr"], c["seed"])
    _write(ctx.out_dir / "result.json", {"val": val, "test": test})
    return record(c, val, test)


def record(cfg: dict, val: float, test: float) -> dict:
    """What a real eval node returns (an EvalRecord as data) for scores `val` and `test`."""
    from encoderlab.config import to_dict
    from encoderlab.eval.summary import EvalRecord

    rec = EvalRecord(
        model=f"fp-{cfg['model']}",
        task=cfg["task"],
        family=cfg["family"],
        task_signature=cfg["task_signature"],
        metric="accuracy",
        lr=cfg["lr"],
        seed=cfg["seed"],
        val={"accuracy": val},
        test={"test": {"accuracy": test}},
        val_score=val,
        test_score=test,
        degenerate={"test": "predicts class 'neg' for all 40 examples"}
        if (cfg["model"], cfg["task"]) in DEGENERATE
        else {},
    )
    return to_dict(rec)


def _final(ctx) -> int:
    return ctx.inputs[ctx.node.deps[0]].result["steps"]


def cka(ctx) -> dict:
    _maybe_fail(ctx)
    div = [0.3, 0.25, 0.1, 0.05, 0.05, 0.04]
    noise = [0.01, 0.01, 0.02, 0.05, 0.05, 0.05]
    ratio = [d / n for d, n in zip(div, noise)]
    res = {
        "a": ctx.node.config["a"],
        "b": ctx.node.config["b"],
        "divergence": div,
        "noise_divergence": noise,
        "ratio": ratio,
        # each layer's 95% interval over sampling seeds, symmetric about the mean as a t-interval is (made up)
        "ratio_ci_low": [0.8 * r for r in ratio],
        "ratio_ci_high": [1.2 * r for r in ratio],
        "low_layers": _low_layers(),
        **CKA_SHAPE,
    }
    _write(ctx.out_dir / "cka.json", res)
    return res


def _low_layers() -> dict:
    """What the real node stores for the ratios above: low layers 0-1 of 6 (per-seed values made up)."""
    from encoderlab.analysis.cka_report import LowLayerSummary

    return LowLayerSummary(
        low_layers=(0, 1),
        other_layers=(2, 3, 4, 5),
        low_ratio=27.5,
        low_ci=(20.0, 35.0),
        other_ratio=2.2,
        other_ci=(1.5, 2.9),
        difference=25.3,
        difference_ci=(18.0, 32.6),
        n_seeds=3,
        distinct_draws=3,
        above_noise=True,
        above_others=True,
    ).to_dict()


def report(ctx) -> dict:
    from encoderlab.study.report import report_node  # imported late: it pulls in torch via eval

    return report_node(ctx, figures=False)


def backend() -> Backend:
    return Backend(
        kinds={
            "prepare": NodeKind(run=prepare),
            "pretrain": NodeKind(run=pretrain),
            "eval": NodeKind(run=evaluate),
            "cka": NodeKind(run=cka),
            "report": NodeKind(run=report),
        },
        suite_tasks=lambda suite: dict(TASKS),
        task_signature=lambda task, max_steps, source: f"fake-{task}-{max_steps}",
    )


def small_spec(**overrides) -> StudySpec:
    runs = (
        RunSpec(name="mlm40", label="MLM-40", recipe="pfs-mlm", eval_steps=(20,)),
        RunSpec(name="mlm20", label="MLM-20", recipe="pfs-mlm", params={"ratio": 0.2}),
        RunSpec(name="clm", label="CLM", recipe="pfs-clm", eval_steps=(20,)),
        RunSpec(name="clm25-mlm40", label="CLM 25% -> MLM-40", recipe="pfs-clm-mlm"),
        RunSpec(name="mlm40-s2", label="MLM-40 seed 2", recipe="pfs-mlm", seed=1, group="noise"),
    )
    fields = dict(
        name="fake-pfs",
        scale="test",
        description="A fake study.",
        size="tiny",
        seq_len=64,
        micro_batch=4,
        grad_accum=1,
        steps=100,
        data=(DataSpec(name="main", corpus=("fake",)),),
        runs=runs,
        eval=EvalSpec(suite="fake", tasks=(), lrs=(1e-4, 5e-4), seeds=(0, 1, 2), checkpoint_lrs=(1e-4,)),
        baseline="mlm40",
        cka=(CkaSpec(a="clm", b="mlm40", noise=("mlm40-s2", "mlm40"), texts="fake", n_texts=8),),
        claims=(
            ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc"),
            ClaimSpec(id="mlm-qa", text="MLM beats CLM on QA", kind="beats", a="mlm40", b="clm", family="qa"),
            ClaimSpec(id="early", text="CLM learns faster early", kind="faster_early", a="clm", b="mlm40"),
            ClaimSpec(
                id="stable",
                text="CLM is more stable across LRs",
                kind="more_stable",
                a="clm",
                b="mlm40",
                lr_range=(1e-4, 5e-4),
            ),
            ClaimSpec(
                id="cka", text="CKA divergence is in low layers", kind="cka_low_layers", a="clm", b="mlm40"
            ),
        ),
    )
    return StudySpec(**{**fields, **overrides})


def pair_spec(runs: tuple[RunSpec, ...] | None = None, **overrides) -> StudySpec:
    """`small_spec` cut to the two runs its claims compare (mlm40 and clm, both with a checkpoint at step 20)
    and no CKA: about a third of its nodes, for a test of one claim or one note about those runs. The fake
    scores a checkpoint by its own run name and seeds, so the two runs' numbers are those of the whole study;
    `runs`, if given, is filtered the same way."""
    kept = tuple(r for r in runs or small_spec().runs if r.name in ("mlm40", "clm"))
    return small_spec(**{"runs": kept, "cka": (), **overrides})


NOISY_EFFECTS = {("clm", 0): -3.0, ("clm", 1): 4.0, ("clm", 2): 1.0, ("mlm40", 1): -2.5, ("mlm40", 2): 1.5}
"""Pretraining noise of the three-seed study the claims tests recompute by hand (`run_noisy_seeds`)."""


def run_noisy_seeds(out: Path) -> Path:
    """`small_spec` at pretraining seeds 0, 1, 2 with `NOISY_EFFECTS`, run into `out`."""
    from encoderlab.study.runner import run_study

    global PRETRAIN_EFFECT
    kept, PRETRAIN_EFFECT = PRETRAIN_EFFECT, NOISY_EFFECTS
    try:
        run_study(small_spec(seeds=(0, 1, 2)), out, backend(), progress=False)
    finally:
        PRETRAIN_EFFECT = kept
    return out


def run_small(out: str, jobs: int = 1, sleep: float = SLEEP) -> None:
    """Run `small_spec()` into `out` with `jobs` processes, each node write taking `sleep` seconds more
    (what the script does; the kill test calls it in children forked by tests/reliability/killharness.py)."""
    global SLEEP
    from encoderlab.study.runner import run_study

    SLEEP = sleep
    print(run_study(small_spec(), Path(out), backend(), progress=False, jobs=jobs))


if __name__ == "__main__":
    run_small(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)


def run_cka_node(tmp_path: Path, monkeypatch, analysis: CkaSpec, models: dict, texts: list[str]) -> dict:
    """The real CKA node (`run_cka`) on `models` (name -> model, each a pretraining node's final model,
    the tiny analysis tokenizer's) and `texts`, writing under `tmp_path`."""
    from tests.analysis.analysis_helpers import make_tokenizer

    from encoderlab.analysis import inputs
    from encoderlab.study.graph import Node
    from encoderlab.study.nodeconfig import CkaNode
    from encoderlab.study.nodes import run_cka
    from encoderlab.study.runner import NodeContext, NodeOutput

    tok = make_tokenizer()
    monkeypatch.setattr(inputs, "load_model", lambda path: (models[path.split("/")[-3]], tok))
    monkeypatch.setattr(inputs, "read_texts", lambda _: texts)
    deps = [Node("pretrain", f"pretrain/{m}", {}) for m in models]
    cfg = CkaNode(analysis=analysis, models=tuple(models))
    ctx = NodeContext(
        node=Node("cka", "cka/a-vs-b", cfg.data(), tuple(n.name for n in deps)),
        out_dir=tmp_path,
        inputs={n.name: NodeOutput(path=tmp_path / n.name.split("/")[1], result={}, node=n) for n in deps},
        study_dir=tmp_path,
        spec=None,
    )
    return run_cka(ctx)
