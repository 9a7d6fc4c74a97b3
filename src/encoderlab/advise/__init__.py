"""`encoderlab advise`: which objective schedule wins at my compute, predicted from a cheap ladder.

A ladder is runs of several objective schedules (CLM share, mask ratio) at several model sizes and
token budgets, with pretraining seeds, each scored on one yardstick comparable across objectives
(the held-out MLM loss at a fixed 15% mask, or fine-tuning scores). The advisor fits one scaling
curve per schedule, bootstraps it over seeds, and reports at a target compute or (N, D): each
schedule's predicted value with an interval, the probability that each is best, where schedules
cross, and the single-largest-rung ranking beside it; it recommends extrapolation only when a
backtest shows it beats that baseline, and says "insufficient evidence" when the data cannot
decide. See docs/advise.md.

Modules: `ladder` (the typed data model), `readers` (CSV/JSONL), `ladderchecks` (the refusals of a read
ladder: units, rungs apart), `studyread` (study folders), `stepshares` (which runs' shares read off their
steps are one schedule), `fit` (batched log-Huber fits), `fitbatch` (the fit's batch laid out for speed),
`predict` (curves, bootstrap, predictions), `trend` (does each schedule improve with compute), `reach` (how
far past the ladder the target lies), `decide` (the advice), `crossover` (where curves cross), `holdout`
(`--hold-out-largest`), `options` (the checks of the fit and bootstrap options, one for the API and the CLI),
`report` (table, JSON, figure), `commands` (the CLI), `synthetic` (known-answer ladders), `suite` (their
scored draws and measured figures), `calibration` (the calibration figures docs/advise.md quotes, recomputed),
`study` (a ladder study).
Nothing is imported here so the CLI stays light.
"""
