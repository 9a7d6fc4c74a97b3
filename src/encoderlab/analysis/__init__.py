"""What changed inside a model: CKA against seed noise, layer transplants, per-layer probes, and
paper 1's curves from evaluation results (see docs/analysis.md).

Modules: `features` (per-layer pooled and word features), `cka` (the computation), `collapsed` (layers
constant in exact arithmetic, found by a float64 recheck), `cka_report` (what a comparison reports, and
paper 2's low-layer claim; no torch, so the study report reads it), `transplant`,
`probe`, `curves`, `plots` (one function per figure type, PNG + CSV + JSON), `inputs` (models and records
by name), `commandargs` (what every `encoderlab analyze` command shares before it loads a model), `commands`
(`encoderlab analyze cka|probe|curves`) and `transplant_command` (`encoderlab analyze transplant`).
Nothing is imported here so the CLI stays light.
"""
