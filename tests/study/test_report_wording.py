"""The report's words agree with its numbers: the size of the Holm family, the baseline's rows, the
names in the figures' numbers and the configuration (found by an audit of a demo report against its
node results)."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import pytest
from fake_study import backend, pair_spec, small_spec

from encoderlab.study.data import StudyData
from encoderlab.study.report import _claims_note, _num, write_report
from encoderlab.study.runner import run_study
from encoderlab.study.spec import EvalSpec


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The fake study at two pretraining seeds with one claim that has a p-value (and the CKA claim)."""
    out = tmp_path_factory.mktemp("study")
    spec = small_spec(seeds=(0, 1))
    spec = small_spec(seeds=(0, 1), claims=tuple(c for c in spec.claims if c.id in ("mlm-sc", "cka")))
    # one LR, not two: half the final evaluations; no test here reads an LR choice, and MLM-40 beats CLM on
    # SC by ~10 points at 1e-4 alone, so the claim still has its p-value
    spec = replace(spec, eval=replace(spec.eval, lrs=(1e-4,)))
    run_study(spec, out, backend(), progress=False)
    write_report(out)  # with figures
    return out


def _md(study) -> str:
    return (study / "report" / "report.md").read_text()


def test_a_family_of_one_tested_claim_is_not_called_claims(study):
    claims = {c["id"]: c for c in json.loads((study / "report" / "results.json").read_text())["claims"]}
    assert claims["mlm-sc"]["numbers"]["p_holm"] == claims["mlm-sc"]["numbers"]["diff"]["p_value"]
    assert "Holm-adjusted over the 1 tested claim p = " in claims["mlm-sc"]["sentence"]
    md = _md(study)
    assert "1 tested claims" not in md and "1 claims" not in md
    assert "1 claim of the study enters Holm's correction, a family of one" in md


def test_the_claims_note_with_no_tested_claim_names_no_family():
    note = _claims_note([])
    assert (
        note.startswith("No claim of the study enters Holm's correction, so there") and "0 claims" not in note
    )


def test_a_study_with_no_claims_has_no_claims_note(tmp_path):
    # the note on how claims are tested ("No claim of the study enters Holm's correction ...") was written anyway
    run_study(pair_spec(claims=()), tmp_path, backend(), progress=False)
    write_report(tmp_path, figures=False)
    md = (tmp_path / "report" / "report.md").read_text()
    assert (
        "## Claims of the study at this scale" in md
        and "Holm" not in md
        and "pretraining seeds (each" not in md
    )


def test_the_claims_note_counts_the_family_and_the_one_seed_claims_apart():
    """Claims at one pretraining seed show a checkpoint-level p but are outside Holm's family: the note said
    "The study's N claims with a p-value are one family", N counting only the family, while the others'
    p-values were on the page too."""
    from types import SimpleNamespace

    def claims(family: int, one_seed: int) -> list:
        tested = [SimpleNamespace(numbers={"p_holm": 0.01}) for _ in range(family)]
        return tested + [
            SimpleNamespace(numbers={"p_holm": None, "checkpoint_p": 0.02}) for _ in range(one_seed)
        ]

    assert _claims_note(claims(4, 1)).startswith(
        "4 claims of the study enter Holm's correction as one family of tests: each p is shown with its "
        "Holm-adjusted value (Holm 1979), and a claim is significant when the adjusted p < 0.05; 1 claim at one "
        "pretraining seed gives a direction only, its checkpoint-level p outside the family; intervals are"
    )
    assert _claims_note(claims(0, 2)).startswith(
        "No claim of the study enters Holm's correction, so there is no family of tests to correct; 2 claims at "
        "one pretraining seed give a direction only, their checkpoint-level p outside the family; intervals"
    )
    assert "1 claim of the study enters Holm's correction, a family of one" in _claims_note(claims(1, 0))
    assert "pretraining seed give" not in _claims_note(claims(3, 0))


def test_every_checkpoint_of_the_baseline_is_marked_as_the_baseline(study):
    section = _md(study).split("## Results\n")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| MLM-40/")]
    assert [r.split(" | ")[0] for r in rows] == ["| MLM-40/s0", "| MLM-40/s1"]
    assert all("(baseline)" in r for r in rows)  # s1's row had bare numbers: the reference of the s1 rows


def test_the_mask_ratio_numbers_name_models_by_label(study):
    with (study / "report" / "figures" / "mask_ratio.csv").open() as f:
        models = {row["model"] for row in csv.DictReader(f)}
    assert models == {"MLM-40/s0", "MLM-20/s0"}  # were the ids mlm40/s0, mlm20/s0 beside labelled tables


def test_a_dataset_without_a_document_cap_says_so_in_words(study):
    line = next(line for line in _md(study).splitlines() if line.startswith("| data |"))
    assert "every document" in line and "None" not in line
    # a tokenizer the study trains, in the plan's words (was "tokenizer train", the study file's key)
    from encoderlab.study.spec import DataSpec

    vocab = DataSpec(name="x", corpus=("x",)).vocab_size  # the fake study's dataset keeps the default
    assert f"main: fake, tokenizer trained on the corpus ({vocab:,} ids), every document" in line


def test_the_scale_of_a_study_without_hardware_has_no_empty_parentheses(study):
    """A study of one's own states no hardware (`StudySpec.hardware`): its report read `| scale | custom () |`."""
    line = next(line for line in _md(study).splitlines() if line.startswith("| scale |"))
    assert line == "| scale | test |"  # the fake study's scale; it names no hardware
    from encoderlab.study.report import _scale_text

    assert _scale_text(small_spec(scale="custom")) == "custom"
    assert _scale_text(small_spec(scale="demo", hardware="2 CPU cores")) == "demo (2 CPU cores)"


def test_the_results_note_names_each_tasks_metric(study):
    note = next(line for line in _md(study).splitlines() if line.startswith("Per checkpoint: mean"))
    assert (
        "test metric in percent, higher is better (mnli: accuracy; ner: accuracy; squad: accuracy; sst: accuracy)"
        in note
    )


def test_the_cka_figure_names_runs_by_label(study):
    assert "### CKA divergence: CLM vs MLM-40" in _md(study)  # was "clm vs mlm40", ids beside labelled claims


def test_the_results_figure_caption_says_the_bars_are_means_and_the_whiskers_intervals(study):
    md = _md(study).split("### Results per family\n")[1]
    assert "whiskers: 95% t-intervals over fine-tuning seeds" in md  # was "bars are 95% t-intervals"
    assert "bars are 95%" not in md


def test_a_claim_over_all_tasks_of_a_study_with_one_task_names_it(tmp_path):
    from encoderlab.study.spec import ClaimSpec

    spec = small_spec(
        eval=EvalSpec(suite="fake", tasks=("sst",), lrs=(1e-4,), seeds=(0, 1), checkpoint_lrs=(1e-4,)),
        claims=(ClaimSpec(id="avg", text="MLM beats CLM", kind="beats", a="mlm40", b="clm"),),
        cka=(),
    )
    run_study(spec, tmp_path, backend(), progress=False)
    write_report(tmp_path, figures=False)
    (claim,) = json.loads((tmp_path / "report" / "results.json").read_text())["claims"]
    assert " on sst (difference " in claim["sentence"]  # was "on the average over all tasks", of one task


def test_the_results_figure_of_one_family_draws_no_avg_bar_the_table_leaves_out(tmp_path):
    from encoderlab.study.data import load_study
    from encoderlab.study.figures import _fig_results
    from encoderlab.study.table import results_table

    spec = small_spec(
        eval=EvalSpec(suite="fake", tasks=("sst", "mnli"), lrs=(1e-4,), seeds=(0, 1), checkpoint_lrs=(1e-4,)),
        claims=(),
        cka=(),
    )
    run_study(spec, tmp_path, backend(), progress=False)
    write_report(tmp_path, figures=False)
    data = load_study(tmp_path)  # the results figure alone, as `write_report` draws it (not the five others)
    figure = _fig_results(data, results_table(data), tmp_path / "report" / "figures")
    with figure.png.with_suffix(".csv").open() as f:
        assert {row["family"] for row in csv.DictReader(f)} == {"sc"}  # "all" drew SC's bars twice
    head = next(
        line for line in _md(tmp_path).split("## Results\n")[1].splitlines() if line.startswith("| model")
    )
    assert head == "| model | SC | mnli | sst |"


def test_runs_that_name_their_tasks_are_not_said_to_be_scored_on_all(tmp_path):
    spec = small_spec(eval=EvalSpec(suite="fake", lrs=(1e-4,), seeds=(0, 1)), claims=(), cka=())
    spec = replace(spec, runs=tuple(replace(r, tasks=("sst",), eval_steps=()) for r in spec.runs))
    run_study(spec, tmp_path, backend(), progress=False)
    write_report(tmp_path, figures=False)
    line = next(line for line in _md(tmp_path).splitlines() if line.startswith("| evaluation |"))
    assert (
        "suite fake, tasks sst, LR 0.0001, seeds 0, 1 |" in line
    )  # read "tasks all (sst)": the suite has four


def test_the_evaluation_row_says_lr_seed_and_task_file_in_the_singular_for_one():
    """It read "LRs 5e-05, seeds 0" and "task files a.yaml", where `study plan` says "LR 5e-05"."""
    from types import SimpleNamespace

    from encoderlab.study.plantext import task_sources_text
    from encoderlab.study.report import _config_rows

    ev = EvalSpec(suite=None, lrs=(5e-5,), seeds=(0,), task_files=("a.yaml",))
    assert task_sources_text(ev) == "task file a.yaml"
    assert task_sources_text(replace(ev, task_files=("a.yaml", "b.yaml"))) == "task files a.yaml, b.yaml"
    data = StudyData(spec=small_spec(eval=ev), nodes=[])
    table = SimpleNamespace(tasks=("a",))
    rows = dict(_config_rows(data, table))
    assert rows["evaluation"].endswith(", LR 5e-05, seed 0")


def test_the_evaluation_row_names_the_task_files_beside_the_suite_as_study_plan_does():
    """A study of a suite and task files read "suite fake, tasks ..." (its files left out), where `study
    plan` says "suite fake (...) and task file a.yaml"."""
    from types import SimpleNamespace

    from encoderlab.study.report import _config_rows

    ev = EvalSpec(suite="fake", lrs=(5e-5,), seeds=(0,), task_files=("a.yaml",))
    data = StudyData(spec=small_spec(eval=ev), nodes=[])
    rows = dict(_config_rows(data, SimpleNamespace(tasks=("sst", "a"))))
    assert rows["evaluation"].startswith("suite fake and task file a.yaml, tasks ")
    ev = replace(ev, task_files=("a.yaml", "b.yaml"))
    rows = dict(_config_rows(StudyData(spec=small_spec(eval=ev), nodes=[]), SimpleNamespace(tasks=())))
    assert rows["evaluation"].startswith("suite fake and task files a.yaml, b.yaml, tasks ")


def test_the_evaluation_row_of_a_study_that_evaluates_no_run_says_none_as_study_plan_does():
    """With `evaluate: false` on every run the row named the suite, tasks, LRs and seeds of a grid that
    never ran, above an empty Results table; `study plan` says "none"."""
    from types import SimpleNamespace

    from encoderlab.study.report import _config_rows

    spec = small_spec(eval=EvalSpec(suite="fake", lrs=(5e-5,), seeds=(0,)))
    spec = replace(spec, runs=tuple(replace(r, evaluate=False, eval_steps=()) for r in spec.runs))
    rows = dict(_config_rows(StudyData(spec=spec, nodes=[]), SimpleNamespace(tasks=())))
    assert rows["evaluation"] == "none (no run is fine-tuned: `evaluate: false` on every run)"


def test_the_cka_claim_says_when_fewer_texts_than_dimensions_inflate_cka(tmp_path, monkeypatch):
    import fake_study

    spec = small_spec(eval=EvalSpec(suite="fake", tasks=("sst",), lrs=(1e-4,), seeds=(0, 1)))
    spec = replace(spec, claims=tuple(c for c in spec.claims if c.id == "cka"))
    monkeypatch.setattr(fake_study, "CKA_SHAPE", {"n_texts": 64, "hidden_size": 384})  # the paper2 demo's
    run_study(spec, tmp_path, backend(), progress=False)
    write_report(tmp_path, figures=False)
    (claim,) = json.loads((tmp_path / "report" / "results.json").read_text())["claims"]
    assert (
        "; on 64 texts, no more than the models' 384 hidden dimensions, which inflates CKA; "
        in claim["sentence"]
    )


def test_a_study_folder_resumes_with_the_report_key_its_built_in_study_gave():
    from encoderlab.config import from_dict, to_dict
    from encoderlab.study.catalog import get_study
    from encoderlab.study.graph import report_config
    from encoderlab.study.spec import StudySpec

    spec = get_study(
        "paper2-detour", "demo"
    )  # expected_minutes 12, an int, read back from study.json as 12.0
    again = from_dict(StudySpec, json.loads(json.dumps(to_dict(spec))), where="study.json")
    # `study run DIR` rewrote the report (and noted the old report folder as stale): another spec digest
    assert report_config(again) == report_config(spec)


def test_the_compute_tables_numbers_keep_three_significant_digits():
    """The demo's branched run spent 2,000,356,700,160 FLOPs, shown "2e+12" beside "2.67e+12": one digit."""
    assert [_num(x) for x in (2000356700160.0, 2.67e12, 100.0, 1_234_567, None)] == [
        "2.00e+12",
        "2.67e+12",
        "100",
        "1,234,567",
        "–",
    ]


def test_the_data_efficiency_caption_names_its_degenerate_points(tmp_path, monkeypatch):
    """The demo's MLM-40 data-efficiency line fell from step 100 to its final model, whose brown-pos score was
    the tag prior's for 2 of 3 seeds; the figure's caption did not say so (only "Degenerate predictions" did,
    and of final models only)."""
    import fake_study

    monkeypatch.setattr(fake_study, "DEGENERATE", {("clm", "sst")})  # CLM's final model and its step-20 one
    run_study(
        pair_spec(claims=()), tmp_path, backend(), progress=False
    )  # MLM-40's checkpoints: the other line
    write_report(tmp_path)  # with figures
    md = (tmp_path / "report" / "report.md").read_text()
    caption = next(line for line in md.splitlines() if line.startswith("Points are means") and "step" in line)
    assert caption.count("predicted one output") == 1, caption
    assert "CLM at step 20 on sst (3 of 3 fine-tuning seeds); CLM at step 100 on sst (3 of 3" in caption
    assert "MLM-40 at step" not in caption


def test_the_pretraining_loss_line_of_a_clm_then_mlm_run_breaks_where_its_objective_changes(
    tmp_path, monkeypatch
):
    """The demo's CLM 25% -> MLM-40 line ran on from its last CLM loss (6.51 at step 100) to its first MLM-40
    loss (6.84 at step 101) as one curve, under a caption that says the two losses are not comparable."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from encoderlab.study import figurefile, lossfigures

    losses = {"clm": [7.0, 6.6, 6.5], "mlm40": [6.9, 6.8, 6.7]}
    records = [
        ("CLM", {"step": s + 1, "loss": v, "objective": "clm"}) for s, v in enumerate(losses["clm"] * 2)
    ]
    records += [
        ("CLM 25% -> MLM-40", {"step": s + 1, "loss": v, "objective": o})
        for s, (o, v) in enumerate(
            [("clm", v) for v in losses["clm"]] + [("mlm40", v) for v in losses["mlm40"]]
        )
    ]
    monkeypatch.setattr(lossfigures, "_metrics", lambda data, study_dir: records)
    kept = []
    monkeypatch.setattr(figurefile, "savefig_atomic", lambda fig, path, **kw: kept.append(fig))
    drawn = lossfigures.loss_figure(None, tmp_path, tmp_path)
    assert drawn.caption.endswith(
        "A run's line breaks where it changes objective: CLM 25% -> MLM-40 from clm to mlm40 after step 3."
    )
    FigureCanvasAgg(kept[0]).draw()
    lines = [(line.get_label(), list(line.get_ydata())) for line in kept[0].axes[0].get_lines()]
    assert lines == [
        ("CLM", losses["clm"] * 2),
        ("CLM 25% -> MLM-40", losses["clm"]),
        ("_CLM 25% -> MLM-40", losses["mlm40"]),  # its own line, the run's colour, no second legend entry
    ]
    colours = [line.get_color() for line in kept[0].axes[0].get_lines()]
    assert colours[1] == colours[2] != colours[0]


@pytest.mark.parametrize(
    ("paper", "said"),
    [
        ("paper1", "Points opposite to the paper at this scale"),
        ("", "Points opposite to the claim at this scale"),
    ],
)
def test_a_study_of_ones_own_says_the_claim_not_the_paper(paper, said):
    # was "Points opposite to the paper" (and "same direction as the paper") in the report of a study file
    # naming no paper, under its own "This study names no paper"
    from encoderlab.study.measures import Outcome
    from encoderlab.study.results import _prefix

    o = Outcome(status="opposite in direction", numbers={"level": "fine-tuning"})
    assert _prefix(o, "beats", paper).startswith(said)
    undecided = _prefix(Outcome(status="holds", significant=False), "beats", paper)
    assert (
        undecided
        == f"Undecided at this scale (same direction as the {'paper' if paper else 'claim'}, not significant)"
    )


def test_a_trained_tokenizer_smaller_than_asked_is_said_at_its_own_size():
    """A corpus with fewer merges than `vocab_size` asks trains a smaller tokenizer (434 ids of 512 asked);
    the report's data row said "trained on the corpus (512 ids)", the size asked, not the one trained on."""
    spec = small_spec()
    d = spec.data[0]
    data = StudyData(spec=spec, nodes=[])
    assert (
        data.tokenizer_text(d) == f"trained on the corpus ({d.vocab_size:,} ids)"
    )  # none recorded: as asked
    data.tokenizer_ids[d.name] = d.vocab_size - 78
    assert data.tokenizer_text(d) == (
        f"trained on the corpus ({d.vocab_size - 78:,} ids of the {d.vocab_size:,} asked: it held no more merges)"
    )
    data.tokenizer_ids[d.name] = d.vocab_size  # the size asked: the plan's words
    assert data.tokenizer_text(d) == f"trained on the corpus ({d.vocab_size:,} ids)"
