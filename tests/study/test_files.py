"""Studies of one's own as YAML files: export, round trip, one line per problem, and one run end to end."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats
import yaml
from fake_study import tiny_corpus
from tests.study.study_fixtures import MINE, polarity_task_file

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.study.catalog import built_in, get_study
from encoderlab.study.files import dump_study, load_study_file
from encoderlab.study.specproblems import why_untestable


def _testable(spec):
    """The spec less the claims a study file may not hold (`why_untestable`), as `dump_study` writes it."""
    return replace(spec, claims=tuple(c for c in spec.claims if not why_untestable(spec, c)))


@pytest.mark.parametrize("study,scale", built_in())
def test_every_builtin_study_exports_and_reads_back_identical(study, scale, tmp_path):
    spec = get_study(study, scale)
    (tmp_path / "s.yaml").write_text(text := dump_study(spec, origin=study))
    assert load_study_file(tmp_path / "s.yaml") == _testable(spec)
    for claim in set(spec.claims) - set(_testable(spec).claims):  # each left out is named, with the fix
        assert all(f"#   {line}\n" in text for line in why_untestable(spec, claim))
        assert f"#     - id: {claim.id}\n" in text


def test_study_show_prints_a_file_that_study_run_reads(tmp_path, capsys):
    main(["study", "show", "paper1-pfs", "--scale", "cpu"])
    text = capsys.readouterr().out
    assert text.startswith("# encoderlab study exported from paper1-pfs --scale cpu.")
    (tmp_path / "my.yaml").write_text(text)
    assert load_study_file(tmp_path / "my.yaml") == _testable(get_study("paper1-pfs", "cpu"))


BAD = """
name: mine
colour: blue
data: [{name: main, corpus: [general-en]}]
runs:
  - {name: mlm, recipe: pfs-mlm, params: {ratoi: 0.3}}
  - {name: clm, recipe: pfs-clmm}
  - {name: mix, recipe: pfs-clm-mlm, steps: many, grop: x}
baseline: mlm
claims:
  - {id: c1, text: MLM beats CLM, kind: beats, a: mlm, b: cml}
"""


def test_a_bad_study_file_says_every_problem_on_its_own_line(tmp_path):
    (tmp_path / "bad.yaml").write_text(BAD)
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "bad.yaml")
    head, *lines = str(err.value).splitlines()
    assert head == f"study file {tmp_path / 'bad.yaml'} has {len(lines)} problems:"
    lines = [line.strip() for line in lines]
    assert (
        "study: unknown field colour; valid: baseline, branch, cka, claims, data, description, eval, "
        in lines[0]
    )
    assert any(
        line.startswith("run mlm: recipe pfs-mlm has no parameter 'ratoi' (ratio?); valid: ")
        for line in lines
    )
    assert any(line.startswith("run clm: unknown recipe 'pfs-clmm' (pfs-clm?); valid: ") for line in lines)
    assert any(line.startswith("runs[2] (mix): unknown field grop (group?); valid: ") for line in lines)
    assert "runs[2] (mix).steps: expected int, got 'many'; give a whole number such as 1000" in lines
    assert len(lines) == 5  # the claim's reference is checked once the runs are valid
    (tmp_path / "ref.yaml").write_text(BAD.replace("ratoi", "ratio").replace("pfs-clmm", "pfs-clm").replace(
        "steps: many, grop: x", "steps: 10").replace("colour: blue\n", ""))  # fmt: skip
    with pytest.raises(
        UserError, match="claim c1 names run 'cml', which the study does not have; runs: mlm, clm"
    ):
        load_study_file(tmp_path / "ref.yaml")


def test_a_misnamed_key_is_one_line_naming_the_rename(tmp_path):
    """A claim with `name:` for its `id:` was two lines, "unknown field name" and "missing field id", neither
    naming the fix; a key misnamed is one line saying which key to rename to which."""
    misnamed = (
        BAD.replace("ratoi", "ratio")
        .replace("pfs-clmm", "pfs-clm")
        .replace("steps: many, grop: x", "steps: 10")
    )
    misnamed = misnamed.replace("colour: blue\n", "").replace("cml", "clm").replace("{id: c1,", "{name: c1,")
    (tmp_path / "claim.yaml").write_text(misnamed)
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "claim.yaml")
    assert [line.strip() for line in str(err.value).splitlines()[1:]] == [
        "claims[0] (c1): unknown field name, missing field id; rename name to id"
    ]
    (tmp_path / "two.yaml").write_text(misnamed.replace("text: MLM", "txt: MLM"))
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "two.yaml")
    lines = str(err.value).splitlines()[1:]
    assert len(lines) == 1 and lines[0].strip().startswith(
        "claims[0] (c1): unknown fields name, txt (text?); missing fields id, text; valid: a, b, "
    )


def test_claims_the_report_could_not_check_are_refused_with_the_file(tmp_path):
    """Were planned and run: the report keyed verdicts by claim id (the first of two claims of one id was
    given the second's verdict), a run compared with itself, an LR range holding no LR; an LR range of one
    LR (or a CKA noise pair of one run) was an IndexError traceback, and one of three silently dropped its third."""
    claims = """claims:
  - {id: sc, text: MLM wins, kind: beats, a: mlm, b: clm}
  - {id: sc, text: CLM wins, kind: beats, a: clm, b: mlm}
  - {id: self, text: MLM beats MLM, kind: beats, a: mlm, b: mlm}
  - {id: lrs, text: CLM is stable, kind: more_stable, a: clm, b: mlm, lr_range: [1.0e-3, 1.0e-5]}
  - {id: one, text: CLM is stable, kind: more_stable, a: clm, b: mlm, lr_range: [1.0e-3]}
  - {id: three, text: CLM is stable, kind: more_stable, a: clm, b: mlm, lr_range: [1.0e-5, 1.0e-4, 1.0e-3]}
cka: [{a: clm, b: clm}, {a: clm, b: mlm, noise: [mlm]}]
"""
    (tmp_path / "claims.yaml").write_text(MINE.split("claims:")[0] + claims)
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "claims.yaml")
    assert [line.strip() for line in str(err.value).splitlines()[1:]] == [
        "claim ids must be unique, repeated: sc",
        "claim self compares run mlm with itself; name two runs (a and b)",
        "cka clm-vs-clm compares run clm with itself; name two runs",
        "cka clm-vs-mlm: noise must be [TWIN, mlm], mlm and its seed twin (the floor mlm is measured against), "
        "got ['mlm']",
        "claim lrs: lr_range must be two finite positive learning rates, low then high, got [0.001, 1e-05]; "
        "give e.g. lr_range: [1.0e-4, 5.0e-4]",
        "claim one: lr_range must be two finite positive learning rates, low then high, got [0.001]; "
        "give e.g. lr_range: [1.0e-4, 5.0e-4]",
        "claim three: lr_range must be two finite positive learning rates, low then high, got [1e-05, 0.0001, 0.001]; "
        "give e.g. lr_range: [1.0e-4, 5.0e-4]",
    ]


def test_every_problem_of_the_eval_grid_is_its_own_line(tmp_path):
    """The grid's check stopped at its first problem: a study file with a bad LR, a repeated seed and a
    bad checkpoint LR was fixed in three passes."""
    grid = "eval: {lrs: [0.001, -1.0], seeds: [0, 0], checkpoint_lrs: [.nan]}\n"
    (tmp_path / "grid.yaml").write_text(MINE.split("eval:")[0] + grid + "baseline: mlm\n")
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "grid.yaml")
    assert [line.strip() for line in str(err.value).splitlines()[1:]] == [
        "eval: learning rates must be a non-empty list of finite positive numbers, got [0.001, -1.0]; list positive "
        "numbers, e.g. lrs: [1.0e-4, 3.0e-4]",
        "eval: seeds repeat 0; give each once",
        "eval: checkpoint_lrs must be a non-empty list of finite positive numbers, got [nan]; list positive "
        "numbers, e.g. checkpoint_lrs: [1.0e-4, 3.0e-4]",
    ]


def test_an_empty_runs_or_data_list_is_one_line_each(tmp_path):
    """Were a line per run ("run mlm reads dataset 'main'; defined: ", naming nothing) and per reference
    to a run ("baseline names run 'mlm', which the study does not have; runs: ")."""
    (tmp_path / "empty.yaml").write_text("name: x\nruns: []\ndata: []\nbaseline: mlm\n")
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "empty.yaml")
    assert [line.strip() for line in str(err.value).splitlines()[1:]] == [
        "study x: runs is empty; list a run in it, e.g. runs: [{name: mlm, recipe: pfs-mlm}]",
        "study x: data is empty; list a dataset in it, e.g. data: [{name: main, corpus: [my.jsonl]}]",
    ]
    (tmp_path / "nodata.yaml").write_text(
        "name: x\nruns: [{name: mlm, recipe: pfs-mlm}]\ndata: []\nbaseline: mlm\n"
    )
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "nodata.yaml")
    assert [line.strip() for line in str(err.value).splitlines()[1:]] == [
        "study x: data is empty; list a dataset in it, e.g. data: [{name: main, corpus: [my.jsonl]}]"
    ]


def test_a_task_or_task_file_named_twice_is_refused(tmp_path):
    """Were dropped without a word (`eval --tasks boolq boolq` refuses the repeat)."""
    grid = "eval: {suite: pocket, tasks: [tweets, tweets], task_files: [p.yaml, p.yaml], checkpoint_tasks: [tweets, tweets]}\n"
    runs = "  - {name: clm, recipe: pfs-clm, tasks: [tweets, brown-pos, tweets]}\n"
    text = MINE.split("eval:")[0].replace("  - {name: clm, recipe: pfs-clm}\n", runs)
    (tmp_path / "p.yaml").write_text("name: p\n")
    (tmp_path / "twice.yaml").write_text(text + grid + "baseline: mlm\n")
    with pytest.raises(UserError) as err:
        load_study_file(tmp_path / "twice.yaml")
    assert [line.strip() for line in str(err.value).splitlines()[1:]] == [
        "eval.tasks: tweets given twice; give each once",
        "eval.checkpoint_tasks: tweets given twice; give each once",
        f"eval.task_files: {tmp_path.resolve() / 'p.yaml'} given twice; give each once",
        "run clm tasks: tweets given twice; give each once",
    ]


@pytest.mark.parametrize("evaluation", ["suite: null", "tasks: [polarity]"])
def test_a_study_of_task_files_needs_no_suite(tmp_path, capsys, evaluation):
    # was: "eval.suite: expected str, got None"; a study had to keep `suite: pocket` and list `tasks:`
    from encoderlab.eval.tasks import TASKS
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodeconfig import EvalNode
    from encoderlab.study.nodes import real_backend

    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    (tmp_path / "my-study.yaml").write_text(MINE.replace("suite: null", evaluation))
    before = dict(TASKS)
    try:
        graph = build_graph(load_study_file(tmp_path / "my-study.yaml"), real_backend())
        main(["study", "plan", str(tmp_path / "my-study.yaml")])
    finally:
        TASKS.clear()
        TASKS.update(before)
    evals = [EvalNode.of(n) for n in graph if n.kind == "eval"]
    assert sorted((e.model.split("-")[0], e.task, e.seed) for e in evals) == sorted(
        (run, "polarity", seed) for run in ("mlm", "clm") for seed in (0, 1)
    )
    files = f"task file {tmp_path / 'polarity.yaml'}"  # one file, one LR: singular (were "task files", "LRs")
    # was "(all their tasks)" and no metric for a study of task files alone, though the docs promised them
    own = f"{files} (polarity)" if "null" in evaluation else f"suite pocket (polarity) and {files}"
    out = capsys.readouterr().out
    assert f"evaluation: {own}; LR 0.002" in out
    assert "2 fine-tuning seeds; the last step's weights tested; metrics accuracy\n" in out
    (tmp_path / "my-study.yaml").write_text(MINE.replace("task_files: [polarity.yaml], ", ""))
    with pytest.raises(
        UserError, match="eval: suite is null, so the study's tasks are its task files, and it"
    ):
        load_study_file(tmp_path / "my-study.yaml")


@pytest.fixture(scope="module")
def own_study(tmp_path_factory):
    """Real nodes throughout: prepare a local corpus, pretrain two tiny runs, fine-tune on a task file."""
    root = tmp_path_factory.mktemp("own")
    tiny_corpus(root / "corpus.jsonl", 300)
    polarity_task_file(root)
    (root / "my-study.yaml").write_text(MINE)
    return root


@pytest.mark.slow
def test_a_study_of_ones_own_runs_end_to_end(own_study, capsys):
    main(["study", "run", str(own_study / "my-study.yaml"), "--out", str(own_study / "out"), "--no-fetch"])
    assert "report:" in capsys.readouterr().out
    results = json.loads((own_study / "out" / "report" / "results.json").read_text())
    assert set(results["table"]) == {"mlm", "clm"} and "sc" in results["table"]["mlm"]
    (claim,) = results["claims"]
    assert claim["status"] != "not tested" and claim["numbers"]["diff"]["n"] == 2
    md = (own_study / "out" / "report" / "report.md").read_text()
    assert "# Study my-study at scale custom" in md and "polarity" in md
    assert f"| evaluation | task file {own_study / 'polarity.yaml'}, tasks all (polarity)," in md
    from encoderlab.study.cli import study_spec

    with pytest.raises(UserError, match="is a study file, which sets its own scale; drop --scale cpu"):
        study_spec(str(own_study / "my-study.yaml"), "cpu")


@pytest.mark.slow
def test_the_report_draws_each_runs_held_out_loss_as_the_trainer_logged_it(own_study):
    """Issue 18 item 4: val/mlm15 and val/clm of every pretraining run, in the report with their numbers."""
    out = own_study / "out"
    if not (out / "report").exists():  # run alone (-k): the study is the test above's
        main(["study", "run", str(own_study / "my-study.yaml"), "--out", str(out), "--no-fetch"])
    from encoderlab.study.data import load_study

    data, want = load_study(out), []
    for name in ("mlm", "clm"):
        (run,) = (out / "nodes" / "pretrain").glob(f"{name}-*/run")
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        scored = [r for r in records if "val/mlm15" in r]
        assert [r["step"] for r in scored] == [3, 6]  # every 3 steps and at the last
        assert scored[-1]["val/mlm15"] == json.loads((run / "validation.json").read_text())["val/mlm15"]
        want += [
            (data.label(name), k, r["step"], r["tokens"], r[k])
            for r in scored
            for k in ("val/mlm15", "val/clm")
        ]
    figures = out / "report" / "figures"
    rows = json.loads((figures / "validation_loss.json").read_text())
    runs = [r for r in rows if not r["model"].startswith("unigram entropy")]
    assert sorted((r["model"], r["metric"], r["step"], r["tokens"], r["loss"]) for r in runs) == sorted(want)
    # the reference line: the entropy of the prepared training tokens' frequencies, computed directly
    (prepared,) = (out / "nodes" / "prepare").glob("*/data")
    meta = json.loads((prepared / "meta.json").read_text())
    tokens = np.fromfile(prepared / "tokens.bin", dtype=meta["dtype"])
    unigram = [r for r in rows if r["model"].startswith("unigram entropy")]
    assert len(unigram) == 4 and {r["metric"] for r in unigram} == {"val/mlm15", "val/clm"}
    for r in unigram:
        assert r["loss"] == pytest.approx(scipy.stats.entropy(np.bincount(tokens)), rel=1e-9)
    assert len(list(csv.DictReader((figures / "validation_loss.csv").open()))) == len(want) + 4 == 12
    assert (figures / "validation_loss.png").stat().st_size > 0
    md = (out / "report" / "report.md").read_text()
    assert "### Held-out loss during pretraining" in md and "figures/validation_loss.csv" in md
    assert "| None |" not in md  # the reference line has no step: "–", as every other empty cell
    page = (out / "report" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(list(figures.glob("*.png")))


def test_the_example_in_the_docs_is_a_valid_study(tmp_path):
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "studies.md").read_text()
    block = doc.split("<!-- study-file example -->\n```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "my-study.yaml").write_text(block)
    spec = load_study_file(tmp_path / "my-study.yaml")
    assert spec.name == "my-study" and spec.seeds_of(spec.run("clm")) == (0, 1, 2)
    assert spec.run("mlm30").params == {"ratio": 0.3}
    assert spec.eval.task_files == (str((tmp_path / "polarity.yaml").resolve()),)


def test_a_task_file_is_read_beside_the_study_file_never_from_the_working_directory(
    tmp_path, monkeypatch, capsys
):
    # was: a task file missing beside the study file was read from the working directory when one
    # of that name was there (silently another task), and its error named the bare relative path;
    # then "task file FOLDER/studies/polarity.yaml does not exist", not saying where the one there is
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "my-study.yaml").write_text(MINE)
    (tmp_path / "polarity.yaml").write_text("name: not-this-one\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as err:
        load_study_file("studies/my-study.yaml")
    assert str(err.value).splitlines()[1:] == [
        "  eval.task_files[0]: polarity.yaml is not beside the study file (in studies) but in the working "
        "directory, which a study file's paths are not read from; write ../polarity.yaml or an absolute path"
    ]
    with pytest.raises(SystemExit):
        main(["study", "plan", "studies/my-study.yaml"])
    assert "write ../polarity.yaml or an absolute path" in capsys.readouterr().err
    # missing everywhere: read beside the study file, and refused there
    (tmp_path / "polarity.yaml").unlink()
    spec = load_study_file("studies/my-study.yaml")
    assert spec.eval.task_files == (str(tmp_path.resolve() / "studies" / "polarity.yaml"),)
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend

    with pytest.raises(UserError) as err:
        build_graph(spec, real_backend())
    assert str(err.value).startswith(
        f"task file {tmp_path.resolve() / 'studies' / 'polarity.yaml'} does not exist"
    )
    # was: `study plan` printed "evaluation: task files .../polarity.yaml (all their tasks)", exit 0
    with pytest.raises(SystemExit):
        main(["study", "plan", "studies/my-study.yaml"])
    assert "polarity.yaml does not exist" in capsys.readouterr().err


AS_IS = """
name: as-is
description: a model of one's own, evaluated as is on a task of one's own
size: tiny
data: [{name: main, corpus: [corpus.jsonl], vocab_size: 300, decontaminate: false}]
runs:
  - {name: base, init: ASSET}
eval: {suite: null, task_files: [polarity.yaml], lrs: [0.002], seeds: [0], max_steps: 8}
baseline: base
claims: []
"""


def test_a_model_evaluated_as_is_is_keyed_by_the_pooling_the_task_asks_for(tmp_path):
    # was: a task pooling as the model declares (`pooling: model`) was keyed as `late` for a model
    # evaluated as is, whatever that model's config.json declares (`bos`, say): a task file changed from
    # `model` to `late` then handed back the results of the `bos` fine-tuning runs
    from tests.eval.fixtures import model_folder

    from encoderlab.eval.tasks import TASKS
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend

    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    task = (tmp_path / "polarity.yaml").read_text()
    # a real model folder: an as-is model on this machine is keyed by the files its load reads
    (tmp_path / "as-is.yaml").write_text(AS_IS.replace("ASSET", str(model_folder(tmp_path / "model"))))
    keys = {}
    before = dict(TASKS)
    try:
        for pooling in ("model", "late"):
            (tmp_path / "polarity.yaml").write_text(
                f"{task}options: {{pooling: {pooling}, head: eurobert}}\n"
            )
            graph = build_graph(load_study_file(tmp_path / "as-is.yaml"), real_backend())
            keys[pooling] = next(n.key for n in graph if n.kind == "eval")
    finally:
        TASKS.clear()
        TASKS.update(before)
    assert keys["model"] != keys["late"]


def test_a_task_file_given_as_the_study_says_it_is_a_task_file(tmp_path, capsys):
    """Was: "study file has 1 problem: unknown fields columns, family, ...", listing the task's own fields."""
    from tests.eval.fixtures import write_task_file
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    task = {"name": "reviews", "family": "sc", "columns": {"text": "sentence"}}
    path = write_task_file(tmp_path, "task.yaml", **task, data={"train": "train.csv", "test": "test.csv"})
    code, err = cli(["study", "run", path, "--out", tmp_path / "s"], capsys)
    assert_one_line(
        code, err, rf"study file {path} is a task file \(it has `family:`, not `runs:`\); pass it"
    )
    assert_printed_as_documented("study-file-is-a-task-file", err, tmp_path)
    assert not (tmp_path / "s").exists()


def test_an_empty_task_folder_of_a_study_file_names_how_a_study_file_lists_task_files(tmp_path, capsys):
    # was: "... or name the files: --task-file a.yaml b.yaml", a flag `study run` has not
    (tmp_path / "tasks").mkdir()
    (tmp_path / "s.yaml").write_text(MINE.replace("task_files: [polarity.yaml]", "task_files: [tasks]"))
    with pytest.raises(SystemExit):
        main(["study", "plan", str(tmp_path / "s.yaml")])
    err = capsys.readouterr().err
    assert "holds no .yaml or .yml task files" in err and "eval: {task_files: [a.yaml, b.yaml]}" in err, err


def test_a_claim_on_family_pair_sc_is_told_that_pair_tasks_count_in_sc(tmp_path):
    """A task file's family `pair-sc` written as a claim's family: refused with no hint (no claim family is
    near it by spelling), though a pair task is scored in family sc."""
    (tmp_path / "c.txt").write_text("words here\n")
    study = {
        "name": "mini",
        "data": [{"name": "main", "corpus": ["c.txt"]}],
        "runs": [{"name": "a", "recipe": "pfs-mlm"}, {"name": "b", "recipe": "pfs-clm"}],
        "baseline": "a",
        "claims": [
            {
                "id": "x",
                "text": "a beats b on pairs",
                "kind": "beats",
                "a": "a",
                "b": "b",
                "family": "pair-sc",
            }
        ],
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(UserError) as exc:
        load_study_file(tmp_path / "s.yaml")
    assert str(exc.value).splitlines()[1:] == [
        "  claim x: family must be one of sc, tc, qa, ir, or null for the average over all tasks, got 'pair-sc'; "
        "a pair-sc task counts in family sc: write family: sc"
    ]
