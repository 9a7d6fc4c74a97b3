"""Benchmarks: `encoderlab bench train|data|table`.

`train` times our training step (`train.step.TrainStep`) against transformers' on the same
weights and rows (`train.py` measures; `reference.py` is transformers' side); `data` times `prepare`
against `datasets.map` in isolated processes (`data.py` prepares and compares; `measure.py` is
what each measuring process runs); `table` turns saved `bench train` results into a
Markdown table (`table.py`, which imports no torch). They live here, apart from the code they
measure, so a reader finds every performance claim's source in one folder (docs/benchmarks.md
holds the results). Speed is measured here, never asserted in tests.
"""
