"""What changed inside a model: CKA against seed noise, layer transplants, per-layer probes, and
paper 1's curves from evaluation results (see docs/analysis.md).

Modules: `features` (per-layer pooled and word features), `cka`, `transplant`, `probe`, `curves`,
`plots` (one function per figure type, PNG + CSV + JSON), `inputs` (models and records by name),
`commands` (`encoderlab analyze ...`). Nothing is imported here so the CLI stays light.
"""
