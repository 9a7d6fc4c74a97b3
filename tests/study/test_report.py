"""The report: numbers, claims, figures with their data, and an HTML page that renders."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest
from fake_study import backend, pair_spec, small_spec

from encoderlab.eval.summary import EvalRecord, select_lr
from encoderlab.study.data import load_study
from encoderlab.study.report import write_report
from encoderlab.study.runner import node_dir, run_study
from encoderlab.study.spec import RunSpec
from encoderlab.study.table import results_table


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    run_study(small_spec(), out, backend(), progress=False)
    write_report(out)  # with figures
    return out


def test_lr_is_chosen_on_validation_and_reported_on_test():
    rows = [
        EvalRecord(
            model="m", task="t", family="sc", task_signature="x", metric="accuracy", lr=lr, seed=s,
            val={"accuracy": val}, test={"test": {"accuracy": test}}, val_score=val, test_score=test,
        )
        for lr, val, test in [(1e-4, 80.0, 60.0), (5e-4, 70.0, 90.0)]
        for s in (0, 1)
    ]  # fmt: skip
    scores = select_lr(rows)
    assert scores.best_lr == 1e-4 and scores.test_by_seed == {0: 60.0, 1: 60.0}  # not the better test score


def test_table_and_claims_match_a_direct_computation(study):
    data = load_study(study)
    table = results_table(data)
    # direct: per seed, mean over the two SC tasks of the test score at the LR with the best mean val
    evals = [e.record for e in data.evals if e.model == "clm" and e.step is None and e.record.family == "sc"]
    per_seed = {}
    for task in {r.task for r in evals}:
        mine = [r for r in evals if r.task == task]
        best = max({r.lr for r in mine}, key=lambda lr: np.mean([r.val_score for r in mine if r.lr == lr]))
        for r in mine:
            if r.lr == best:
                per_seed.setdefault(r.seed, []).append(r.test_score)
    values = [np.mean(v) for _, v in sorted(per_seed.items())]
    cell = table.cells["clm"]["sc"]
    assert cell.mean == pytest.approx(np.mean(values))
    half = 4.302652729911275 * np.std(values, ddof=1) / np.sqrt(3)  # t(0.975, 2)
    assert cell.half_width == pytest.approx(half)
    results = json.loads((study / "report" / "results.json").read_text())
    claims = {c["id"]: c for c in results["claims"]}
    # one pretraining seed: a direction of two checkpoints, never "significant" (was "holds", significant)
    assert claims["mlm-sc"]["status"] == "holds in direction" and claims["mlm-sc"]["significant"] is None
    assert claims["early"]["status"] == "holds in direction" and claims["early"]["numbers"]["step"] == 20
    assert claims["stable"]["status"] == "holds in direction"
    assert claims["cka"]["status"] == "holds"
    assert claims["mlm-sc"]["sentence"].startswith(
        "Points the claim's way at this scale, for one pretraining seed (two checkpoints; cannot speak to the "
        "objectives): MLM-40"
    )


def test_the_data_efficiency_curve_scores_its_final_point_like_its_checkpoints(tmp_path):
    from encoderlab.study.figures import _curves

    spec = pair_spec()  # CLM's curve reads CLM's evaluations alone
    lr = 5e-4  # checkpoints at the worse LR: a final point chosen over the whole grid would use 1e-4
    spec = replace(spec, eval=replace(spec.eval, checkpoint_lrs=(lr,)))
    run_study(spec, tmp_path, backend(), progress=False)
    data = load_study(tmp_path)
    rows = _curves(data, results_table(data))["data_efficiency"]
    final = {r["step"]: r for r in rows if r["model"] == "clm" and r["name"] == "all"}[100]
    evals = [e.record for e in data.evals if e.model == "clm" and e.step is None and e.record.lr == lr]
    per_seed = [np.mean([r.test_score for r in evals if r.seed == s]) for s in spec.eval.seeds]
    assert final["mean"] == pytest.approx(np.mean(per_seed))


def _only_claim(tmp_path, **changes) -> dict:
    """The report's verdict for the first claim of the fake study with `changes`, alone (on its two runs)."""
    spec = pair_spec()
    claims = (replace(spec.claims[0], **changes),)
    run_study(replace(spec, claims=claims), tmp_path, backend(), progress=False)
    return json.loads((tmp_path / "report" / "results.json").read_text())["claims"][0]


def test_a_claim_that_fails_says_so(tmp_path):
    claim = _only_claim(tmp_path, id="rev", a="clm", b="mlm40")
    assert (
        claim["status"] == "opposite in direction"
        and claim["sentence"].startswith(
            "Points opposite to the claim at this scale, for one pretraining seed (two checkpoints; cannot speak"
        )
    )  # the fake study names no paper; was "Does not hold at this scale, for one pretraining seed (significant)": two checkpoints only


def test_every_figure_has_its_numbers_and_the_html_is_self_contained(study):
    figs = sorted((study / "report" / "figures").glob("*.png"))
    names = {f.stem for f in figs}
    assert {
        "results",
        "data_efficiency",
        "lr_stability",
        "mask_ratio",
        "cka_clm",
        "pretraining_loss",
    } <= names
    for png in figs:
        rows = list(csv.DictReader(png.with_suffix(".csv").open()))
        assert rows, png.name
    page = (study / "report" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(figs)
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)  # nothing external
    md = (study / "report" / "report.md").read_text()
    assert "## Claims of the study at this scale" in md and "figures/results.csv" in md


def test_the_html_renders_in_headless_chromium(study, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium); the HTML render check needs it")
    shot = tmp_path / "shot.png"
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--screenshot={shot}",
        "--window-size=1200,1600",
        (study / "report" / "report.html").as_uri(),
    ]
    subprocess.run(
        cmd,
        check=True,
        capture_output=True,
        timeout=120,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[0] > 500 and pixels.std() > 0.05  # not blank: text, tables and a figure are drawn
    # the figures themselves are drawn: some pixels are the plot's colours, neither white nor grey
    sat = pixels.max(axis=-1) - pixels.min(axis=-1)
    assert (sat > 0.3).mean() > 0.001


def test_a_claim_the_grid_cannot_test_says_why(tmp_path):
    spec = pair_spec()  # the claim's two runs: it reads nothing of the others
    run_study(replace(spec, eval=replace(spec.eval, lrs=(1e-4,))), tmp_path, backend(), progress=False)
    claims = {c["id"]: c for c in json.loads((tmp_path / "report" / "results.json").read_text())["claims"]}
    assert claims["stable"]["status"] == "not tested"
    assert claims["stable"]["sentence"] == (
        "Not tested: the evaluation grid (0.0001) has 1 learning rate in the claim's range 0.0001 to 0.0005 "
        "(0.0001); the spread needs two."
    )


def test_identical_scores_are_no_difference_not_a_direction(tmp_path, monkeypatch):
    import fake_study

    monkeypatch.setattr(fake_study, "SCORED_AS", {"twin": "mlm40"})
    spec = pair_spec()  # mlm40 and its twin are all the claim reads
    spec = replace(
        spec, runs=(*spec.runs, fake_study.TWIN), claims=(replace(spec.claims[0], id="same", b="twin"),)
    )
    run_study(spec, tmp_path, backend(), progress=False)
    claim = json.loads((tmp_path / "report" / "results.json").read_text())["claims"][0]
    assert claim["status"] == "no difference" and claim["sentence"].startswith(
        "Undecided at this scale, for one pretraining seed (identical scores, no difference)"
    )


def test_configuration_names_the_evaluated_tasks_of_a_whole_suite(study):
    from fake_study import TASKS

    row = next(
        line for line in (study / "report" / "report.md").read_text().splitlines() if "| evaluation |" in line
    )
    listed = re.search(r"tasks all \(([^)]*)\)", row).group(1).split(", ")
    assert sorted(listed) == sorted(TASKS)


def test_results_columns_never_repeat_one_another(study, tmp_path):
    # SC has two tasks (sst, mnli): its tasks get columns; TC and QA have one each, named in the header
    md = (study / "report" / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| model | "))
    assert header == "| model | QA: squad | SC | TC: ner | Avg | mnli | sst |"
    # one family of one task (as paper2-detour's cpu grid): a single column, no Avg repeating it
    spec = pair_spec(eval=replace(small_spec().eval, tasks=("ner",)))
    run_study(spec, tmp_path, backend(), progress=False)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| model | TC: ner |" in md.splitlines()


def test_degenerate_predictions_are_flagged_in_the_report(tmp_path, monkeypatch):
    import fake_study

    monkeypatch.setattr(fake_study, "DEGENERATE", {("clm", "sst")})
    run_study(pair_spec(), tmp_path, backend(), progress=False)  # CLM degenerate, MLM-40 not
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Degenerate predictions" in md
    assert (
        "- CLM on sst: 3 of 3 fine-tuning seeds at LR 0.0001; predicts class 'neg' for all 40 examples" in md
    )
    assert "MLM-40 on sst" not in md


@pytest.mark.parametrize(
    ("low_ci", "difference_ci", "status"),
    [
        ((20.0, 35.0), (18.0, 32.6), "holds"),
        ((20.0, 35.0), (-3.5, 5.3), "undecided"),  # above the noise, not shown above the others
        ((0.8, 1.4), (18.0, 32.6), "undecided"),  # not shown above the noise
        ((0.5, 0.9), (18.0, 32.6), "does not hold"),  # below the seed noise
        ((20.0, 35.0), (-9.0, -2.0), "does not hold"),  # below the other layers
        (None, None, "undecided"),  # no interval
    ],
)
def test_the_cka_claim_does_not_hold_only_where_an_interval_lies_against_it(
    study, low_ci, difference_ci, status
):
    """ "Does not hold" is kept for an interval wholly on the other side of its bound; one across it is
    undecided (it read "does not hold" whenever the claim did not hold)."""
    from encoderlab.study.results import check_claims

    data = load_study(study)
    node = next(n.name for n in data.nodes if n.kind == "cka")
    low = data.markers[node].result["low_layers"]
    holds = None if low_ci is None else low_ci[0] > 1.0 and difference_ci[0] > 0.0
    low.update(low_ci=low_ci, difference_ci=difference_ci, holds=holds)
    low["sentence"] = "layers 0-1 diverge 27.50x seed noise"
    (claim,) = [c for c in check_claims(data) if c.claim.kind == "cka_low_layers"]
    prefix = {"holds": "Holds", "undecided": "Undecided", "does not hold": "Does not hold"}[status]
    # one checkpoint per run, said in the verdict: "Holds at this scale" read as a claim about the objectives
    assert claim.status == status and claim.sentence.startswith(
        f"{prefix} at this scale, for one checkpoint of each run (their first pretraining seeds; cannot speak to "
        "the objectives' seed-to-seed variation): layers 0-1"
    )
    assert claim.numbers["holds"] is holds and claim.significant is None


def test_the_cka_claim_without_a_seed_noise_pair_is_not_tested(study):
    from encoderlab.study.results import check_claims

    data = load_study(study)
    node = next(n.name for n in data.nodes if n.kind == "cka")
    data.markers[node].result.update({"low_layers": None, "ratio": None, "noise_divergence": None})
    (claim,) = [c for c in check_claims(data) if c.claim.kind == "cka_low_layers"]
    assert claim.status == "not tested" and "seed twin" in claim.sentence


def test_a_report_on_a_partly_finished_study_says_what_its_claims_have_not_seen(study, tmp_path):
    """`study report` mid-study (or after a failed node) gave a verdict on the finished fine-tuning runs
    without a word that some of the claim's runs were still missing."""
    shutil.copytree(study, tmp_path / "s")
    data = load_study(tmp_path / "s")
    clm = [n for n in data.nodes if n.kind == "eval" and n.name.startswith("eval/clm/")]
    total = sum(1 for n in data.nodes if n.kind == "eval" and n.name.startswith(("eval/clm/", "eval/mlm40/")))
    node_dir(tmp_path / "s", clm[0]).joinpath("node.json").unlink()
    write_report(tmp_path / "s", figures=False)
    claims = {
        c["id"]: c for c in json.loads((tmp_path / "s" / "report" / "results.json").read_text())["claims"]
    }
    said = (
        f"Partial: 1 of the {total} fine-tuning runs of the final models of MLM-40 and CLM have not finished"
    )
    assert claims["mlm-sc"]["numbers"]["unfinished_evals"] == 1 and said in claims["mlm-sc"]["sentence"]
    assert "Partial:" not in claims["early"]["sentence"]  # its checkpoints' runs have all finished
    assert said in (tmp_path / "s" / "report" / "report.md").read_text()
    full = {c["id"]: c for c in json.loads((study / "report" / "results.json").read_text())["claims"]}
    assert all("Partial:" not in c["sentence"] for c in full.values())


def test_a_report_before_any_fine_tuning_run_finished_says_so_not_a_bare_table_header(study, tmp_path):
    """`study report` after pretraining only wrote a results table of its header alone ("| model |"), under
    a note on what its cells mean."""
    shutil.copytree(study, tmp_path / "s")
    for node in load_study(tmp_path / "s").nodes:
        if node.kind == "eval":
            node_dir(tmp_path / "s", node).joinpath("node.json").unlink()
    write_report(tmp_path / "s", figures=False)
    md = (tmp_path / "s" / "report" / "report.md").read_text()
    results = md.split("## Results\n", 1)[1].split("\n## ", 1)[0]
    assert results.strip() == "No fine-tuning run has finished yet (`encoderlab study status` lists them)."
    assert "## Results" in (study / "report" / "report.md").read_text()  # the finished study's table stays
    assert "| model |" in (study / "report" / "report.md").read_text()


def test_a_ladders_report_names_its_sizes_and_no_evaluation(tmp_path):
    """A ladder for `advise` (no study `size`, one per run through its recipe; `evaluate: false` on every
    run): its report said "model size: as the start model" of runs from scratch, an evaluation grid
    ("suite fake, tasks all, LRs 0.0001, 0.0005, ...") that ran nowhere, and "No fine-tuning run has
    finished yet"."""
    runs = (
        RunSpec(
            name="mlm", recipe="pfs-clm-mlm", params={"clm_fraction": 0.0, "size": "nano"}, evaluate=False
        ),
        RunSpec(
            name="clm", recipe="pfs-clm-mlm", params={"clm_fraction": 1.0, "size": "micro"}, evaluate=False
        ),
    )
    spec = small_spec(size=None, runs=runs, baseline="mlm", cka=(), claims=())
    run_study(spec, tmp_path, backend(), progress=False)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| model size | nano, micro |" in md
    assert (
        "| evaluation | none (no run is fine-tuned: \\`evaluate: false\\` on every run) |" in md
    )  # a cell: as written
    assert md.split("## Results\n", 1)[1].split("\n## ", 1)[0].strip() == (
        "None (no run is fine-tuned: `evaluate: false` on every run)."
    )
    from encoderlab.study.graph import build_graph
    from encoderlab.study.plantext import model_size_text

    mixed = small_spec(
        size=None,
        runs=(*runs, RunSpec(name="cpt", recipe="cpt-mlm", init="mlm")),
        baseline="mlm",
        cka=(),
        claims=(),
    )
    assert model_size_text(mixed, list(build_graph(mixed, backend()).nodes.values())) == (
        "nano, micro (from scratch); as the start model"
    )


def test_a_finished_nodes_record_edited_by_hand_names_its_file_and_the_rerun(study, tmp_path, capsys):
    """A node.json whose result is valid JSON of the wrong shape (a score as text, a cut record) was
    "eval/mlm40/sst/lr0.0001/s0.test_score: expected float, got 'high'": no file, no way out."""
    from encoderlab.cli import main

    copy = shutil.copytree(study, tmp_path / "s")
    marker = next((copy / "nodes" / "eval").glob("mlm40_sst_lr0.0001_s0-*/node.json"))
    for edit in ({"test_score": "high"}, None):
        record = json.loads(marker.read_text())
        record["result"] = {**record["result"], **edit} if edit else {"task": "sst"}  # cut by hand
        marker.write_text(json.dumps(record))
        with pytest.raises(SystemExit):
            main(["study", "report", str(copy)])
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"encoderlab: error: {marker} is damaged (result")
        assert err.endswith(
            f"; delete {marker.parent} and run the study again, which redoes eval/mlm40/sst/lr0.0001/s0"
        )
        marker.write_text((study / marker.relative_to(copy)).read_text())


def test_a_damaged_validation_json_is_one_line_naming_it(study, tmp_path, capsys):
    """A run's validation.json cut short or holding a loss as text was a JSONDecodeError or TypeError
    traceback in the report."""
    from encoderlab.cli import main

    copy = shutil.copytree(study, tmp_path / "s")
    path = next((copy / "nodes" / "pretrain").glob("clm-*/metrics.jsonl")).with_name("validation.json")
    for text, problem in (('{"step', "JSONDecodeError: "), ('{"val/mlm15": "low"}', "not a mapping of val/")):
        path.write_text(text)
        with pytest.raises(SystemExit):
            main(["study", "report", str(copy)])
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"encoderlab: error: {path} is damaged ({problem}")
        assert err.endswith(
            "; restore it from a copy, or delete it (the report then shows no held-out loss for that run)"
        )
    path.unlink()
    main(["study", "report", str(copy)])


def test_a_metrics_line_edited_by_hand_is_no_point_of_the_loss_figures(study, tmp_path):
    """A metrics.jsonl line with a loss as text was a TypeError traceback in the report's figures; it is
    drawn as no point, a gap in the curve."""
    copy = shutil.copytree(study, tmp_path / "s")
    metrics = next((copy / "nodes" / "pretrain").glob("clm-*/metrics.jsonl"))
    with open(metrics, "a") as f:
        f.write(json.dumps({"step": 10**6, "loss": "low", "val/mlm15": "low"}) + "\n")
    write_report(copy)
    with open(copy / "report" / "figures" / "pretraining_loss.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["step"] != str(10**6) for r in rows)


def test_a_node_compute_record_edited_by_hand_names_its_file_or_counts_as_unfinished(study, tmp_path, capsys):
    """node.json's compute with a time as text was a TypeError traceback in the report; a compute or
    result that is not a mapping at all, in `study run` too. The first names the file; the second is a
    marker not read whole, so the node counts as unfinished and runs again."""
    from encoderlab.cli import main
    from encoderlab.study.data import load_study

    copy = shutil.copytree(study, tmp_path / "s")
    marker = next((copy / "nodes" / "eval").glob("mlm40_sst_lr0.0001_s0-*/node.json"))
    original = json.loads(marker.read_text())
    marker.write_text(json.dumps({**original, "compute": {**original["compute"], "wall_s": "slow"}}))
    with pytest.raises(SystemExit):
        main(["study", "report", str(copy)])
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"encoderlab: error: {marker} is damaged (compute.wall_s: expected float, got 'slow')"
    )
    for part in ("compute", "result"):
        marker.write_text(json.dumps({**original, part: []}))
        assert "eval/mlm40/sst/lr0.0001/s0" not in load_study(copy).markers
        write_report(copy, figures=False)  # the node is unfinished before any figure reads it


def test_a_label_with_a_line_break_or_a_bar_stays_one_table_row():
    """A run's `label` is free text: a line break in it ended the table row mid-cell."""
    from types import SimpleNamespace

    from encoderlab.study.reportpage import markdown_page

    spec = SimpleNamespace(name="s", scale="demo", description="")
    text = markdown_page(spec, [("Runs", "table", (["label", "id"], [["MLM\n40 | best", "mlm40"]]))])
    assert "| MLM 40 \\| best | mlm40 |" in text.splitlines()


def test_a_label_with_a_bar_stays_one_row_of_a_figure_s_numbers():
    """The numbers under a figure (results per family, pretraining loss) name each model by its label: a
    `|` in it split the row into one cell more than the table's head (only the section tables escaped it)."""
    from pathlib import Path
    from types import SimpleNamespace

    from encoderlab.study.figures import Figure
    from encoderlab.study.reportpage import markdown_page

    spec = SimpleNamespace(name="s", scale="demo", description="")
    rows = [{"model": "CLM | x2", "step": 1, "loss": 5.5}, {"model": "MLM\n40", "step": 1, "loss": 5.25}]
    figure = Figure(name="loss", title="Loss", caption="c", png=Path("loss.png"), rows=rows)
    lines = markdown_page(spec, [("Figures", "figures", [figure])]).splitlines()
    assert "| CLM \\| x2 | 1 | 5.5 |" in lines
    assert "| MLM 40 | 1 | 5.25 |" in lines


def test_the_report_is_read_and_written_in_its_turn_so_the_last_one_written_is_the_latest(
    study, tmp_path, monkeypatch
):
    """`study report` run while the study's report node wrote: it read the folder before the node finished
    and wrote after it, so the finished study kept a partial report. Each writer now reads the folder in
    its turn (an exclusive flock on the study folder, which a second writer waits for)."""
    import fcntl
    import os

    from encoderlab.study import report

    shutil.copytree(study, tmp_path / "s")
    held = []

    def load(folder):
        fd = os.open(folder, os.O_RDONLY)  # another writer's turn, tried while this one reads
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return load_study(folder)

    monkeypatch.setattr(report, "load_study", load)
    write_report(tmp_path / "s", figures=False)
    assert held == [True]


def test_a_claim_on_a_degenerate_score_says_so(tmp_path, monkeypatch):
    """A claim whose score averages a task a model predicted one output for says so in its own sentence:
    it was listed only under "Degenerate predictions", and the claim read as a comparison of two models."""
    import fake_study

    monkeypatch.setattr(fake_study, "DEGENERATE", {("clm", "sst")})
    run_study(pair_spec(), tmp_path, backend(), progress=False)  # both claims compare mlm40 and clm
    claims = {c["id"]: c for c in json.loads((tmp_path / "report" / "results.json").read_text())["claims"]}
    sc = claims["mlm-sc"]
    assert sc["numbers"]["degenerate"] == {"CLM": {"sst": "3 of 3 fine-tuning seeds"}}
    assert (
        "Caveat: fine-tuning runs at the chosen LR predicted one output for every test example (a tagger: one tag "
        "for at least 99% of the words it read, a tag the gold gives to under 90% of them): CLM on sst (3 of 3 "
        "fine-tuning seeds); such a score is the label prior's" in sc["sentence"]
    )
    assert "(Degenerate predictions, above)" in sc["sentence"]
    qa = claims["mlm-qa"]  # CLM on squad predicted more than one answer: no caveat
    assert "degenerate" not in qa["numbers"] and "label prior" not in qa["sentence"]
