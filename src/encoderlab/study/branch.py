"""Runs that train alike for their first steps are trained once: a run branches from another run's
checkpoint at the last step their training is identical.

Paper 1's grid is full of shared prefixes. Under warmup-stable-decay, a 12k-step budget with the long
run's 2k warmup and 2k decay is the 42k run up to step 10k, then a decay; CLM 25% -> MLM-40 is the CLM
run up to its switch; CPT for +12k is CPT for +22k up to its decay. A study resolves every run to a
complete `RunConfig`, so whether two runs do identical work for their first s steps is decided by
comparing the configs (`shared_steps`), not by a naming convention: the same model, data stream and
order, batch layout, optimizer, seeds and numerics, and at every step before s the same objective, the
same frozen layers, the same learning rate and no optimizer reset in only one of them. Then the run at
step s is, bit for bit on CPU, the other run's checkpoint at step s: masks are drawn per (seed, step,
slot) and batches are a pure function of the step, so the branch resumes that checkpoint (weights,
AdamW moments, step counter, RNG) with its own config and computes what an independent run computes.

Why branch rather than train each budget independently: the compute. Paper 1's 12k and 22k budgets
and its biphasic splits repeat most of their steps; at the gpu scales branching saves about a third of
`paper1-pfs`'s pretraining. The cost in science is none under this rule, because a branch is taken only
where the LR history (and everything else) is identical: a shorter budget that decayed over a share of
its own length, or warmed up over one, would differ from the first step and is trained on its own. So
the choice that makes branching exact is the schedule's, and `paper1.py` makes it: every budget keeps
the 2k-step warmup and 2k-step decay (our reading of paper 1's 12k and 22k budgets); paper 1
released separate checkpoints per budget (`610m-clm-3k-mlm40-12k`) without saying whether they were
branched, and with this schedule both give the same model. What branching does change: a branch waits
for its base run to finish, and the base keeps the checkpoint the branch starts from (disk).

`plan_branches` picks, for each run in graph order, the earlier run (same pretraining seed, same
inputs) it shares the most steps with, when that is at least `MIN_SHARE` of its own steps (a short
shared warmup is not worth a checkpoint and a wait), and branches before the run's last step even where
it shares every step: the last step is trained again, one step of compute, so that what a run does at its
last step (its final validation) happens. A base that is itself a branch is never asked for
a step before its own branch point: its base shares at least as many steps and is chosen instead.
`seed_branch` lays the checkpoint into the branch's run folder (hard links where the filesystem allows,
the config rewritten to the branch's own), with the base's metrics up to that step, so the branch's
folder reads as a run of its own that was interrupted there; the trainer resumes it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab import jsonlines
from encoderlab.atomic import json_text
from encoderlab.config import to_dict
from encoderlab.jsonlines import lines_until_step

if TYPE_CHECKING:  # the graph imports this module; torch and numpy wait until a run is compared
    import numpy as np

    from encoderlab.train.config import RunConfig
    from encoderlab.train.schedule import Schedule

MIN_SHARE = 0.2
"""A run branches only when the shared prefix is at least this share of its own steps."""
_NOT_TRAINING = ("phases", "checkpoint", "out", "progress", "sinks", "peak_tflops", "total_steps")
"""RunConfig fields that do not change what a step computes."""


@dataclass(frozen=True)
class Branch:
    """Where a run starts: another run's checkpoint."""

    base: str
    """The base's node name."""
    step: int
    """The step of the base's checkpoint (the steps both compute identically)."""


@dataclass(frozen=True)
class Steps:
    """What each step of a run computes, as arrays over its steps (compared between runs)."""

    setup: str
    """Everything but the phases and the bookkeeping, serialised."""
    lr: np.ndarray
    """The LR factor of each step."""
    phase: np.ndarray
    """The index of each step's phase."""
    kinds: tuple[str, ...]
    """Per phase: its objective and frozen layers, serialised."""
    reset: np.ndarray
    """Whether the optimizer is reset at each step (a phase start that drops the moments)."""

    @classmethod
    def of(cls, cfg: RunConfig) -> Steps:
        import numpy as np

        plan = cfg.plan()
        lr = np.concatenate([_factors(p.phase.schedule, p.steps) for p in plan])
        phase = np.repeat(np.array([p.index for p in plan]), [p.steps for p in plan])
        reset = np.zeros(
            len(lr), dtype=bool
        )  # phases are contiguous from step 0: a phase's first is its start
        reset[[p.start for p in plan if p.phase.reset_optimizer and p.start > 0 and p.steps]] = True
        kinds = tuple(
            json.dumps(to_dict(p.phase.objective), sort_keys=True) + "|" + p.phase.freeze for p in plan
        )
        data = {k: v for k, v in to_dict(cfg).items() if k not in _NOT_TRAINING}
        return cls(json.dumps(data, sort_keys=True), lr, phase, kinds, reset)


@functools.lru_cache(maxsize=256)
def _factors(schedule: Schedule, steps: int) -> np.ndarray:
    """The LR factor of each step of a `steps`-step phase, read-only (a study's runs share a few)."""
    import numpy as np

    out = np.array([schedule.factor(s, steps) for s in range(steps)], dtype=float)
    out.flags.writeable = False
    return out


def shared_steps(a: RunConfig | Steps, b: RunConfig | Steps) -> int:
    """How many leading optimizer steps `a` and `b` compute identically (0 if their setup differs)."""
    import numpy as np

    a, b = (x if isinstance(x, Steps) else Steps.of(x) for x in (a, b))
    if a.setup != b.setup:
        return 0
    n = min(len(a.lr), len(b.lr))
    same_kind = np.array([[x == y for y in b.kinds] for x in a.kinds], dtype=bool)  # phase x phase
    differ = (a.lr[:n] != b.lr[:n]) | ~same_kind[a.phase[:n], b.phase[:n]] | (a.reset[:n] != b.reset[:n])
    hits = np.flatnonzero(differ)
    return int(hits[0]) if hits.size else n


@dataclass(frozen=True)
class PlannedRun:
    """A pretraining node before it joins the graph."""

    name: str
    """Node name."""
    config: RunConfig
    """Its resolved config."""
    deps: tuple[str, ...]
    """The nodes it reads (prepared data, the run it continues)."""


def plan_branches(runs: list[PlannedRun]) -> dict[str, Branch]:
    """For each run (in graph order) the earlier run with the same inputs it shares the most steps with,
    when that is at least `MIN_SHARE` of its steps; ties go to the earliest run."""
    steps = {r.name: Steps.of(r.config) for r in runs}
    out: dict[str, Branch] = {}
    for i, run in enumerate(runs):
        best: tuple[str, int] | None = None
        for base in runs[:i]:
            if base.deps == run.deps:
                n = shared_steps(steps[run.name], steps[base.name])
                if n and (best is None or n > best[1]):
                    best = (base.name, n)
        if best is None:
            continue
        # at least the last step is the run's own: a branch at it resumed a finished run, which trains no
        # step, so its last-step validation never ran (a 1-step decay runs at the peak: the whole run is
        # the base's prefix) and `advise` found no val/mlm15 in a finished study
        base, step = best[0], min(best[1], run.config.steps - 1)
        if step < MIN_SHARE * run.config.steps or step < 1:
            continue
        while (
            base in out and out[base].step >= step
        ):  # the base only has that checkpoint through its own base
            base = out[base].base
        out[run.name] = Branch(base=base, step=step)
    return out


def with_branches(runs: list[PlannedRun], branches: dict[str, Branch]) -> list[PlannedRun]:
    """The runs with each base keeping the checkpoints its branches start from (and the branches' own
    intermediate checkpoints before their branch point, which the branch folder takes over)."""
    kept: dict[str, set[int]] = {}
    by_name = {r.name: r for r in runs}
    for name, b in branches.items():
        own = by_name[name].config.checkpoint.keep_steps
        kept.setdefault(b.base, set()).update({b.step, *(k for k in own if k <= b.step)})
    return [
        dataclasses.replace(r, config=_keeping(r.config, kept[r.name])) if r.name in kept else r for r in runs
    ]


def _keeping(cfg: RunConfig, steps: set[int]) -> RunConfig:
    keep = tuple(sorted(set(cfg.checkpoint.keep_steps) | steps))
    return dataclasses.replace(cfg, checkpoint=dataclasses.replace(cfg.checkpoint, keep_steps=keep))


def seed_branch(run_dir: Path, base_dir: Path, step: int, cfg: RunConfig) -> None:
    """Make `run_dir` a run of `cfg` stopped at `step`, from the run in `base_dir`: its checkpoint at
    `step` (and those of `cfg`'s kept steps before it) and its metrics up to `step`. A folder that holds a
    checkpoint already (seeded, or trained further) is left as it is."""
    import encoderlab.train.checkpoint as ckpt
    from encoderlab.atomic import atomic_folder, write_text_atomic
    from encoderlab.config import save_yaml
    from encoderlab.outdir import create_output
    from encoderlab.train.runfolder import KIND

    if ckpt.complete_checkpoints(run_dir):
        return
    create_output(run_dir, KIND)
    shared = lines_until_step(base_dir / "metrics.jsonl", step)
    write_text_atomic(run_dir / "metrics.jsonl", "".join(line + "\n" for line in shared))
    for at in sorted({k for k in cfg.checkpoint.keep_steps if k < step}) + [step]:
        source, target = ckpt.checkpoint_dir(base_dir, at), ckpt.checkpoint_dir(run_dir, at)
        with atomic_folder(target, replace=True) as tmp:
            shutil.copytree(source, tmp, dirs_exist_ok=True, copy_function=_link_or_copy)
            state = jsonlines.loads((tmp / "state.json").read_text())
            os.unlink(tmp / "state.json")  # a link would rewrite the base's file too
            (tmp / "state.json").write_text(json_text({**state, "config": to_dict(cfg)}, indent=2))
    save_yaml(cfg, run_dir / "config.yaml")


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link (no bytes copied; checkpoints are never written in place), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
