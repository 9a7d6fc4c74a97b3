"""encoderlab: train encoders with MLM, CLM and any sequence of the two, adapt checkpoints,
evaluate them by fine-tuning, and show what changed inside them.

Package map (one folder per concern):
  model/       the EuroBERT-style encoder and adapters to and from Hugging Face checkpoints
  objectives/  MLM and CLM: a batch in, model inputs + attention mode + targets out
  data/        assets, sources, tokenizers, packed token shards and the deterministic reader
  train/       phases, LR schedules, freezing, checkpoints and the training loop
  eval/        fine-tuning heads, task suites, metrics and the LR x seed protocol
  analysis/    CKA, layer transplants, probes and the papers' curves
  study/       declarative study grids, their execution graph and the report
  bench/       throughput against transformers and datasets
  advise/      which schedule wins at a larger compute, from a ladder of cheaper runs
(docs/architecture.md: every folder and module, and which may import which)
"""

__version__ = "0.1.0"
