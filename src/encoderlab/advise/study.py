"""A ladder study: model sizes x token budgets x objective schedules x pretraining seeds.

`ladder_study(LadderDesign(...))` returns a `StudySpec` that the study runner executes like any
other (cached nodes, resume, `--jobs`), and whose folder `encoderlab advise` reads:

```python
from encoderlab.advise.study import LadderDesign, ladder_study
from encoderlab.study import real_backend, run_study
run_study(ladder_study(LadderDesign(sizes=("small", "210m"), ...)), "runs/ladder", real_backend())
```

Every run is paper 1's `pfs-clm-mlm` recipe (CLM for a share of the steps, then MLM at a mask
ratio, one WSD schedule across both, the optimizer state kept at the switch), trained from scratch
at one size for one budget. Runs of one (size, budget) form one comparison group, so the study
checks that every schedule there reads the same documents for the same number of tokens. The
yardstick is `val/mlm15`, the held-out MLM loss at a fixed 15% mask that training logs for every
objective; fine-tuning every run (`finetune=True`) adds `finetune:TASK` metrics at the cost of the
evaluation grid.

**Not implemented yet, and why** (both need training to start a run from another run's
*checkpoint* with its optimizer state and its position in the data, which a study's `init` does not
do: it starts from a run's final weights, with a fresh optimizer, reading the data from the start):
* decays branched from the stable phase, which would give several budgets per run: one long run
  per (schedule, size) at a constant LR, and from its checkpoints at each budget a short decay
  (one run of T steps plus decays costs about 1.1 T instead of 1.75 T for budgets T/4, T/2, T);
* MLM phases branched from a shared CLM trunk, so the CLM steps of the CLM 25/50/75% splits are
  trained once (the trunk of the 75% split contains the others' CLM phases) rather than per split.
Until then every run trains all its steps; `LadderDesign.flops()` says what that costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from encoderlab.advise.ladder import Schedule
from encoderlab.errors import UserError


@dataclass(frozen=True, kw_only=True)
class LadderDesign:
    """The axes of a ladder and how each run is shaped."""

    sizes: tuple[str, ...]
    """Named model sizes (`encoderlab.model.config.SIZES`), smallest first."""
    schedules: tuple[Schedule, ...]
    """CLM-then-MLM schedules (`Schedule.biphasic`): pure MLM, pure CLM and splits."""
    budgets: tuple[float, ...] = (20.0,)
    """Token budgets as tokens per non-embedding parameter (Chinchilla: 20); one run per budget."""
    seeds: tuple[int, ...] = (0, 1)
    """Pretraining seeds; at least two, so the advisor can measure seed noise."""
    corpus: tuple[str, ...] = ("general-en",)
    """Pretraining corpus (asset names or paths)."""
    vocab_size: int = 32768
    """Vocabulary of the tokenizer trained on the corpus."""
    seq_len: int = 1024
    """Packed sequence length."""
    micro_batch: int = 32
    """Rows per micro-batch."""
    grad_accum: int = 1
    """Micro-batches per step."""
    min_steps: int = 20
    """Fewest steps per run (warmup and decay need a few)."""
    run_overrides: dict[str, Any] = field(default_factory=dict)
    """RunConfig fields set on every run (`{"precision": "fp32"}` on CPU)."""
    decontaminate: bool = True
    """Remove evaluation texts from the corpus."""

    def __post_init__(self) -> None:
        if not self.sizes or len(self.schedules) < 2:
            raise UserError("a ladder needs at least one size and two schedules to compare")
        if len(self.seeds) < 2:
            raise UserError(
                "a ladder needs two pretraining seeds or more, so the advisor can measure seed noise"
            )
        for s in self.schedules:
            if [st.objective for st in s.stages] not in (["clm"], ["mlm"], ["clm", "mlm"]):
                raise UserError(
                    f"schedule {s.name}: a ladder trains CLM then MLM at one mask ratio (Schedule.biphasic)"
                )

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.micro_batch * self.grad_accum

    def params(self, size: str) -> int:
        """Non-embedding parameters of a named size."""
        from encoderlab.model.config import ModelConfig

        return ModelConfig.from_size(size, vocab_size=self.vocab_size).num_params(include_embedding=False)

    def steps(self, size: str, budget: float) -> int:
        """Steps of a run: `budget` tokens per parameter, at least `min_steps`."""
        return max(self.min_steps, math.ceil(budget * self.params(size) / self.tokens_per_step))

    def flops(self) -> float:
        """6ND of every run of the ladder (all schedules and seeds), the cost without branching."""
        per_run = [
            6.0 * self.params(n) * self.steps(n, b) * self.tokens_per_step
            for n in self.sizes
            for b in self.budgets
        ]
        return sum(per_run) * len(self.schedules) * len(self.seeds)


def _run_name(schedule: Schedule, size: str, budget: float) -> str:
    share = round(schedule.clm_share * 100)
    ratio = "" if schedule.mask_ratio is None else f"-mlm{round(schedule.mask_ratio * 100)}"
    return f"clm{share}{ratio}-{size}-x{budget:g}"


def ladder_study(design: LadderDesign, name: str = "ladder", finetune: bool = False, eval_spec=None):
    """The StudySpec of a ladder (fine-tuned with `eval_spec`, the pocket suite by default, if `finetune`)."""
    from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec, StudySpec

    runs = []
    for size in design.sizes:
        for budget in design.budgets:
            for schedule in design.schedules:
                runs.append(
                    RunSpec(
                        name=_run_name(schedule, size, budget),
                        label=f"{schedule.name}, {size}, {budget:g} tok/param",
                        recipe="pfs-clm-mlm",
                        params={
                            "clm_fraction": schedule.clm_share,
                            "ratio": schedule.mask_ratio or 0.4,
                            "size": size,
                        },
                        steps=design.steps(size, budget),
                        group=f"{size}-x{budget:g}",
                        evaluate=finetune,
                    )
                )
    data = DataSpec(
        name="main", corpus=design.corpus, vocab_size=design.vocab_size, decontaminate=design.decontaminate
    )
    return StudySpec(
        name=name,
        scale="ladder",
        description=(
            f"A ladder for `encoderlab advise`: {len(design.schedules)} schedules x sizes {', '.join(design.sizes)} x "
            f"budgets {', '.join(f'{b:g}' for b in design.budgets)} tokens per parameter x {len(design.seeds)} pretraining "
            "seeds, every run from scratch on the same documents in the same order."
        ),
        size=None,
        seq_len=design.seq_len,
        micro_batch=design.micro_batch,
        grad_accum=design.grad_accum,
        steps=None,
        data=(data,),
        runs=tuple(runs),
        eval=eval_spec or EvalSpec(),
        baseline=runs[0].name,
        seeds=design.seeds,
        hardware="any",
        run_overrides=dict(design.run_overrides),
    )
