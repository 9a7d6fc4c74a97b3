"""Held-out loss during pretraining, for both objectives whatever the run trains.

Every `validation.every` steps and at the run's last step, the model is scored on the same
`validation.rows` held-out rows with three losses, so runs of different objectives share a scale:
  * `val/clm`: next-token loss within documents (causal attention);
  * `val/mlm`: MLM loss with the run's own MLM objective (its last MLM phase's ratio, replacement
    and selection); absent for a run without an MLM phase;
  * `val/mlm15`: MLM loss at 15% masking (exact count, mask token), the common yardstick that runs
    of every ratio are compared on (issue 22's advisor reads it).
Each is the token-weighted mean over the rows (the training loss's definition), so a row batch whose
masks select nothing adds nothing; when no row does (`bernoulli` selection at a low ratio over few
rows) the loss is left out rather than logged as 0. MLM losses need a mask token: without one in the
vocabulary, only `val/clm` is computed.

Rows and masks are fixed for a run folder and across runs: the rows are the first ones of the
prepared `val` split in the order a reader seeded with `SEED` visits them (not the run's data
seed), and every mask comes from a generator seeded by (`SEED`, row batch, 0). So two runs on the
same prepared data are scored on identical tokens and identical masks, and a run's curve moves
only because its weights do. Synthetic runs score a held-out synthetic stream: rows drawn from
generators no training row of a feasible run uses (see `SYNTHETIC_SEED`).
Nothing here touches the global RNG or the optimizer, so validation changes no training result.

Under data parallelism every rank scores every row (the same numbers everywhere, and FSDP2's
collectives see the same forwards on every rank); the rows are few, so the repeated work is small.
Trade-off: a prepared folder whose val split is shorter than one row cannot be scored; the run then
says so once on stderr and trains without validation.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import torch

from encoderlab.data.batch import BatchLayout, BatchSource, TokenSpec
from encoderlab.errors import UserError
from encoderlab.launchenv import env_rank
from encoderlab.objectives import CLM, MLM, Objective, batch_loss, objective_generator
from encoderlab.train.config import RunConfig

SEED = 20_240_415
"""Seed of the validation rows' order and of their masks (fixed: not the run's seeds)."""
SYNTHETIC_SEED = 2**31
"""Seed of the held-out synthetic stream. torch's CPU generator keeps the low 32 bits of a seed, so
row r of this stream is generator 2^31 + r; a training stream with data seed d reaches that only
after row 2^31 - 1,000,003 d (mod 2^32): over a billion rows for every d below 1,000."""
VALIDATION = "validation.json"
"""The run folder's file with the latest held-out scores (after the run: the final model's)."""
YARDSTICK = MLM(mask_ratio=0.15)
"""The MLM objective every run is scored with (`val/mlm15`)."""
VALIDATION_KEYS = ("val/clm", "val/mlm", "val/mlm15")
"""Every metrics key `scored_objectives` can log."""


@dataclass(frozen=True)
class Scored:
    """One validation loss: its metrics key and the objective that prepares its rows."""

    key: str
    objective: Objective


def scored_objectives(cfg: RunConfig, spec: TokenSpec) -> list[Scored]:
    """`val/clm`, then with a mask token `val/mlm` (the run's last MLM phase, if any) and `val/mlm15`."""
    out = [Scored("val/clm", CLM())]
    if spec.mask_id is None:
        return out
    own = [p.objective for p in cfg.phases if isinstance(p.objective, MLM)]
    if own:
        out.append(Scored("val/mlm", own[-1]))
    return [*out, Scored("val/mlm15", YARDSTICK)]


def held_out_source(
    cfg: RunConfig, data_spec: TokenSpec | None = None, rows: int = 0, meta: dict | None = None
) -> BatchSource | None:
    """The held-out rows' source (micro-batches of the run's shape, or of `rows` rows), or None when
    there are none.

    `data_spec` is the training stream's vocabulary (default: the synthetic one of `cfg.data`); a
    synthetic held-out stream draws from it, so a run on a custom source is scored on its ids. `meta`:
    the prepared folder's meta.json, where the caller read it already (`TrainStep.data_meta`)."""
    layout = BatchLayout(seq_len=cfg.layout.seq_len, micro_batch_size=rows or cfg.layout.micro_batch_size)
    data = cfg.data
    if data.path == "synthetic":
        from encoderlab.data.synthetic import SyntheticSource, synthetic_spec

        spec = data_spec or synthetic_spec(data.synthetic_vocab)
        return SyntheticSource(layout, spec, seed=SYNTHETIC_SEED, mean_doc_len=data.synthetic_doc_len)
    from encoderlab.data.reader import PackedReader

    try:
        return PackedReader(data.path, layout, seed=SEED, split="val", knob="layout.seq_len", meta=meta)
    except (
        UserError
    ) as exc:  # too short (or no) val split: say so (once, not on every torchrun rank), train on
        if env_rank() == 0:
            print(f"encoderlab: note: no validation loss: {exc}", file=sys.stderr)
        return None


class Validator:
    """Scores a model on the fixed held-out rows (see the module docstring)."""

    def __init__(self, cfg: RunConfig, spec: TokenSpec, data_spec: TokenSpec, meta: dict | None = None):
        """`spec`: the vocabulary trained with (masks); `data_spec`: the training stream's; `meta`: as
        `held_out_source` takes it."""
        self.cfg, self.spec = cfg, spec
        self.source = held_out_source(cfg, data_spec, meta=meta) if cfg.validation.every else None
        self.scored = scored_objectives(cfg, spec)
        rows = min(cfg.validation.rows, getattr(self.source, "rows_per_epoch", cfg.validation.rows))
        if self.source is not None and rows < cfg.layout.micro_batch_size:
            # fewer rows than a micro-batch: one batch of just those, not a micro-batch that wraps
            self.source = held_out_source(cfg, data_spec, rows, meta)
        self.batches = max(1, rows // cfg.layout.micro_batch_size)  # each held-out row at most once

    def due(self, step: int, total: int) -> bool:
        """True when the run scores after `step` completed updates."""
        every = self.cfg.validation.every
        return self.source is not None and (step == total or step % every == 0)

    def evaluate(self, model, device: torch.device) -> dict[str, float]:
        """{key: token-weighted mean loss} over the held-out rows, and `val/rows`, the held-out rows scored;
        in eval mode (no dropout, no draw from the training RNG), the model's mode restored after."""
        training = model.training
        model.eval()
        try:
            return self._scores(model, device)
        finally:
            model.train(training)

    @torch.no_grad()
    def _scores(self, model, device: torch.device) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.scored:
            total, count = torch.zeros((), device=device), torch.zeros((), device=device)
            for i in range(self.batches):
                x = s.objective.prepare(
                    self.source.batch(i, 0, 0), self.spec, objective_generator(SEED, i, 0)
                )
                x = x.to(device)
                with torch.autocast(device.type, torch.bfloat16, enabled=self.cfg.precision == "bf16"):
                    loss, n = batch_loss(model, x)
                total += loss.float()
                count += n
            if count > 0:  # no target on any row: no loss (0 / 0), not a loss of 0
                out[s.key] = float(total / count)
        out["val/rows"] = self.batches * self.source.layout.micro_batch_size
        return out
