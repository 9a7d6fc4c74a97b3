"""A ladder study: model sizes x token budgets x objective schedules x pretraining seeds.

`ladder_study(LadderDesign(...))` returns a `StudySpec` that the study runner executes like any
other (cached nodes, resume, `--jobs`), and whose folder `encoderlab advise` reads:

```python
from encoderlab.advise.study import LadderDesign, ladder_study
from encoderlab.study import real_backend, run_study
run_study(ladder_study(LadderDesign(sizes=("small", "210m"), ...)), "runs/ladder", real_backend())
```

Every run is paper 1's `pfs-clm-mlm` recipe (CLM for a share of the steps, then MLM at a mask
ratio, one WSD schedule across both, the optimizer state kept at the switch), trained at one size for
one budget. Runs of one (size, budget) form one comparison group, so the study checks that every
schedule there reads the same documents for the same number of tokens. The yardstick is `val/mlm15`,
the held-out MLM loss at a fixed 15% mask that training logs for every objective; fine-tuning every
run (`finetune=True`) adds `finetune:TASK` metrics at the cost of the evaluation grid.

**Cheap by construction: the schedules are chosen so that runs share their first steps**, and the
study trains those steps once (`study/branch.py` branches a run from the checkpoint of an earlier
run whose resolved config computes the same first steps, bit for bit):
* every budget of a size warms up over the same steps (`warmup_tokens_per_param` tokens per
  parameter, 1 as in OLMo-core's model ladder, `WSDSChinchillaRunConfigurator`, after Porian et al.
  2024) and decays linearly over the last `decay_fraction` of its own steps (10%, OLMo-core's WSD-S
  default). Up to its decay a budget is the longest budget's run, so each shorter budget is a decay
  branched from the longest run's stable phase: one run per (schedule, size, seed) plus decays;
* a CLM-then-MLM split is the pure-CLM run up to its switch (the same warmup, the same constant LR),
  so every split's MLM phase branches from the shared CLM trunk and no CLM step is retrained per
  split. The runs are listed longest budget first and most CLM first, so trunks precede branches.
The price: every budget of a size shares its warmup length (not a share of its own length), and a
branch waits for its base. `LadderDesign.flops()` counts each run's own steps, as `study plan` does;
`flops(branched=False)` is what training every run from its first step would cost.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from encoderlab.advise.ladder import Schedule
from encoderlab.errors import UserError
from encoderlab.study.rungs import FEWEST_DECAY_STEPS, LADDER_SCALE, RUNG_RTOL, rungs_apart
from encoderlab.words import percent_text


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
    warmup_tokens_per_param: float = 1.0
    """Warmup in tokens per non-embedding parameter, the same steps for every budget of a size (so the
    budgets share their first steps); at least one step."""
    decay_fraction: float = 0.1
    """Each budget's linear decay to the floor, as a share of its own steps. The first decay update runs at the
    peak (the floor comes after the last), so a 1-step decay lowers no LR: at 0.1 a run under 15 steps
    (`min_steps` below the default 20) would never be annealed, and is refused (`fewest_annealed_steps`)."""
    branch: bool = True
    """Train shared first steps once (`StudySpec.branch`); False trains every run from its first step."""
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
        if not self.budgets or not all(math.isfinite(b) and b > 0 for b in self.budgets):
            # inf and nan were tracebacks (OverflowError, ValueError), no budget an IndexError, and 0 or a
            # negative budget "a run shorter than its warmup"
            raise UserError(
                f"budgets must be tokens per parameter, each finite and positive (Chinchilla: 20), got {self.budgets}"
            )
        if not 0.0 < self.decay_fraction < 0.8:  # a branch must share at least a fifth of its steps
            raise UserError(f"decay_fraction must be in (0, 0.8), got {self.decay_fraction}")
        if not (math.isfinite(self.warmup_tokens_per_param) and self.warmup_tokens_per_param >= 0):
            raise UserError(
                f"warmup_tokens_per_param must be a finite number >= 0, got {self.warmup_tokens_per_param}"
            )
        for name in ("vocab_size", "seq_len", "micro_batch", "grad_accum", "min_steps"):
            value = getattr(self, name)  # 0 rows or tokens a step was a ZeroDivisionError traceback
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"{name} must be a whole number >= 1, got {value!r}")
        for size in self.sizes:
            self._check_size(size)
        self._check_rungs_apart()

    def _check_rungs_apart(self) -> None:
        """No two runs within `RUNG_RTOL` in both N and D: advise refuses a folder holding them (one rung written
        apart, `ladderchecks.check_rungs_apart`), so a design of budgets a step count or two apart trained for
        hours and was then refused. The same test, on the (N, D) each (size, budget) would train."""
        rungs = {
            (self.params(size), self.steps(size, b) * self.tokens_per_step): (size, b)
            for size in self.sizes
            for b in self.budgets
        }
        pair = rungs_apart(rungs)
        if pair:
            (s1, b1), (s2, b2) = rungs[pair[0]], rungs[pair[1]]
            raise UserError(
                f"size {s1} at {b1:g} tokens per parameter ({self.steps(s1, b1):,} steps) and size {s2} at {b2:g} "
                f"({self.steps(s2, b2):,} steps) are within {RUNG_RTOL:.0%} of each other in both N and D, so "
                "`encoderlab advise` would refuse the study's folder (one rung written apart); spread the budgets "
                f"more than {RUNG_RTOL:.0%} apart"
            )

    def _check_size(self, size: str) -> None:
        """Every budget of `size` is a distinct run that holds its warmup, its decay and, for a split,
        a CLM phase of at least the warmup and an MLM phase of at least the decay (the recipe's rules)."""
        steps = {b: self.steps(size, b) for b in self.budgets}
        same = [b for b in self.budgets if [steps[x] for x in self.budgets].count(steps[b]) > 1]
        if same:
            raise UserError(
                f"budgets {', '.join(f'{b:g}' for b in same)} tokens per parameter all give size {size} "
                f"{steps[same[0]]} steps (min_steps {self.min_steps}): one run twice; raise the budgets or lower min_steps"
            )
        warmup = self.warmup(size)
        for budget, n in steps.items():
            decay = self.decay(size, budget)
            # its one decay update would run at the peak: not the annealed run the ladder's fit assumes
            if decay < FEWEST_DECAY_STEPS:
                raise UserError(
                    f"size {size} at {budget:g} tokens per parameter trains {n} steps, so its decay "
                    f"(decay_fraction {self.decay_fraction:g}) is 1 step, which runs at the peak: its LR is never "
                    f"lowered; give every run at least {self.fewest_annealed_steps} steps (raise min_steps or the "
                    "budget), or raise decay_fraction"
                )
            for s in self.schedules:
                clm = round(n * s.clm_share)
                short = (
                    "the run" if warmup + decay > n
                    else "its CLM phase" if 0 < clm < warmup
                    else "its MLM phase" if 0 < n - clm < decay
                    else ""
                )  # fmt: skip
                if short:
                    raise UserError(
                        f"schedule {s.name} at size {size}, {budget:g} tokens per parameter ({n} steps): {short} is "
                        f"shorter than the warmup ({warmup} steps) or the decay ({decay}); lower "
                        "warmup_tokens_per_param or decay_fraction, or raise the budget"
                    )

    @property
    def fewest_annealed_steps(self) -> int:
        """Fewest steps whose decay (`decay`) is `FEWEST_DECAY_STEPS` or more, so that it lowers the LR."""
        n = max(1, math.floor((FEWEST_DECAY_STEPS - 0.5) / self.decay_fraction) - 1)
        while round(self.decay_fraction * n) < FEWEST_DECAY_STEPS:
            n += 1
        return n

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

    def warmup(self, size: str) -> int:
        """Warmup steps of every run of `size`: `warmup_tokens_per_param` tokens per parameter."""
        return max(1, round(self.warmup_tokens_per_param * self.params(size) / self.tokens_per_step))

    def decay(self, size: str, budget: float) -> int:
        """Decay steps of the run of `size` at `budget`: `decay_fraction` of its steps."""
        return max(1, round(self.decay_fraction * self.steps(size, budget)))

    def flops(self, branched: bool | None = None) -> float:
        """6ND of the ladder (all schedules and seeds), each run counting only the steps it trains
        itself (a branch: those after its branch point); `branched=False`: every step of every run."""
        from encoderlab.study.graph import pretraining

        if branched is None:
            branched = self.branch
        spec = ladder_study(dataclasses.replace(self, branch=branched))
        params = {r.name: self.params(r.params["size"]) for r in spec.runs}
        return sum(
            6.0
            * params[p.run.name]
            * (p.config.steps - (p.branch.step if p.branch else 0))
            * self.tokens_per_step
            for p in pretraining(spec)
        )


def _run_name(schedule: Schedule, size: str, budget: float) -> str:
    share = percent_text(schedule.clm_share)
    ratio = "" if schedule.mask_ratio is None else f"-mlm{percent_text(schedule.mask_ratio)}"
    return f"clm{share}{ratio}-{size}-x{budget:g}"


def ladder_study(design: LadderDesign, name: str = "ladder", finetune: bool = False, eval_spec=None):
    """The StudySpec of a ladder (fine-tuned with `eval_spec`, the pocket suite by default, if `finetune`)."""
    from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec, StudySpec

    runs = []
    for size in design.sizes:
        # the longest budget and the most CLM first: a run branches only from a run listed before it
        for budget in sorted(design.budgets, reverse=True):
            for schedule in sorted(design.schedules, key=lambda s: -s.clm_share):
                runs.append(
                    RunSpec(
                        name=_run_name(schedule, size, budget),
                        label=f"{schedule.name}, {size}, {budget:g} tok/param",
                        recipe="pfs-clm-mlm",
                        params={
                            "clm_fraction": schedule.clm_share,
                            "ratio": schedule.mask_ratio or 0.4,
                            "size": size,
                            "warmup": design.warmup(size),
                            "decay": design.decay(size, budget),
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
        scale=LADDER_SCALE,
        description=(
            f"A ladder for `encoderlab advise`: {len(design.schedules)} schedules x sizes {', '.join(design.sizes)} x "
            f"budgets {', '.join(f'{b:g}' for b in design.budgets)} tokens per parameter x {len(design.seeds)} pretraining "
            "seeds, every run from scratch on the same documents in the same order; shorter budgets decay from the "
            "longest run's stable phase and CLM-then-MLM splits branch from the pure-CLM run."
        ),
        size=None,
        seq_len=design.seq_len,
        micro_batch=design.micro_batch,
        grad_accum=design.grad_accum,
        steps=None,
        data=(data,),
        runs=tuple(runs),
        eval=eval_spec or EvalSpec(),
        baseline=_run_name(design.schedules[0], design.sizes[0], design.budgets[0]),
        branch=design.branch,
        seeds=design.seeds,
        hardware="any",
        run_overrides=dict(design.run_overrides),
    )
