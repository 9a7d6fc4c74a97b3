"""The results figure's x ticks name a family as the results table heads it: a family of one task by that
task ("IR: pubmedqa-retrieval"), where the tick said "IR" beside a table that said which task it was."""

from __future__ import annotations

from types import SimpleNamespace

from encoderlab.eval.summary import ALL
from encoderlab.study.table import ResultsTable


def _table() -> ResultsTable:
    task = {"ir": ["pubmedqa-retrieval"], "sc": ["sst2", "tweets"]}
    per_task = {
        m: {t: SimpleNamespace(family=f) for f, ts in task.items() for t in ts} for m in ("clm", "mlm")
    }
    cell = SimpleNamespace(mean=50.0, ci_low=48.0, ci_high=52.0, n=3)
    families = ["ir", "sc", ALL]
    return ResultsTable(
        models=["clm", "mlm"],
        families=families,
        tasks=["pubmedqa-retrieval", "sst2", "tweets"],
        baseline="clm",
        cells={m: dict.fromkeys(families, cell) for m in ("clm", "mlm")},
        per_task=per_task,
        runs={},
    )


def test_results_ticks_name_a_lone_task_as_the_table_does(monkeypatch, tmp_path):
    from encoderlab.study import figures, report

    seen = {}
    monkeypatch.setattr(
        figures, "save_figure", lambda fig, *a, **k: seen.setdefault("ticks", fig.axes[0].get_xticklabels())
    )
    table = _table()
    figures._fig_results(SimpleNamespace(label=str.upper), table, tmp_path)
    ticks = [t.get_text() for t in seen["ticks"]]
    _, headers = report._result_columns(table)
    assert ticks == ["IR: pubmedqa-retrieval", "SC", "Avg"]
    assert ticks == headers[: len(ticks)]
