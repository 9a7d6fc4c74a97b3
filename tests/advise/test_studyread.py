"""A study folder as a ladder: only finished, current pretraining nodes from scratch, read from their files."""

from __future__ import annotations

import json

import pytest
from tests.advise.advise_fixtures import write_node, write_pretrain_node

from encoderlab.advise.ladder import Schedule
from encoderlab.advise.studyread import read_study
from encoderlab.config import save_yaml, to_dict
from encoderlab.errors import UserError
from encoderlab.eval.summary import EvalRecord
from encoderlab.model.config import ModelConfig
from encoderlab.train.recipes import build_recipe


def test_pretraining_nodes_become_observations(tmp_path):
    study = tmp_path / "study"
    tokens = write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    write_pretrain_node(study, "mlm40/s1", "b" * 64, "pfs-mlm", ["ratio=0.4"], 1, 6.2, flops=False)
    write_pretrain_node(study, "clm25", "c" * 64, "pfs-clm-mlm", ["clm_fraction=0.25", "ratio=0.4"], 0, 5.9)
    write_pretrain_node(study, "old", "d" * 64, "pfs-clm", [], 0, 1.0)  # a superseded key: not in graph.json
    write_pretrain_node(study, "running", "e" * 64, "pfs-clm", [], 0, 1.0, marker=False)
    graph = [
        {"name": f"pretrain/{n}", "key": k * 64}
        for n, k in (("mlm40", "a"), ("mlm40/s1", "b"), ("clm25", "c"))
    ]
    graph += [{"name": "pretrain/old", "key": "f" * 64}, {"name": "pretrain/running", "key": "e" * 64}]
    (study / "graph.json").write_text(json.dumps(graph))
    runs, notes = read_study(study, "val/mlm15")
    assert notes == []
    by_value = {o.value: o for o in runs}
    assert sorted(by_value) == [5.9, 6.1, 6.2]
    n = ModelConfig.from_size("tiny", vocab_size=1).num_params(include_embedding=False)
    mlm, seed1, split = by_value[6.1], by_value[6.2], by_value[5.9]
    assert mlm.schedule == Schedule.biphasic(0.0, 0.4)
    # no study.json: its share is read off its steps (5 of 20), marked as such (test_one_split_read_off_steps...)
    assert split.schedule.clm_share == 0.25 and split.schedule.name == "CLM ~25% -> MLM-40"
    assert (mlm.params, mlm.tokens, mlm.flops, mlm.seed) == (n, tokens, 20e9, 0)
    assert seed1.seed == 1 and seed1.flops is None and seed1.compute == 6 * n * tokens


def test_continued_runs_are_left_out_with_a_note_and_missing_metrics_refused(tmp_path):
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    folder = write_node(study, "pretrain", "pretrain/cpt", "b" * 64, {})
    (folder / "run").mkdir()
    save_yaml(
        build_recipe("cpt-mlm", ["init=some/model", "steps=10", "warmup=1", "decay=2"]),
        folder / "run" / "config.yaml",
    )
    graph = [{"name": "pretrain/mlm40", "key": "a" * 64}, {"name": "pretrain/cpt", "key": "b" * 64}]
    (study / "graph.json").write_text(json.dumps(graph))
    runs, notes = read_study(study, "val/mlm15")
    assert len(runs) == 1 and notes == [
        "pretrain/cpt continues some/model, so it is not on a from-scratch ladder: left out"
    ]
    with pytest.raises(UserError, match="run pretrain/mlm40 has no val/mlm16"):
        read_study(study, "val/mlm16")


def test_a_finetuning_metric_is_the_test_mean_at_the_lr_chosen_on_validation(tmp_path):
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    graph = [{"name": "pretrain/mlm40", "key": "a" * 64}]
    scores = {(1e-4, 0): (70, 60), (1e-4, 1): (72, 62), (5e-4, 0): (80, 75), (5e-4, 1): (78, 71)}
    for i, ((lr, seed), (val, test)) in enumerate(scores.items()):
        key = f"{i}" * 64
        config = {"model": "mlm40", "step": None, "task": "tweets", "family": "sc", "lr": lr, "seed": seed}
        record = EvalRecord(
            model="fp",
            task="tweets",
            family="sc",
            task_signature="sig",
            metric="accuracy",
            lr=lr,
            seed=seed,
            val={"accuracy": val},
            test={"test": {"accuracy": test}},
            val_score=val,
            test_score=test,
        )
        name = f"eval/mlm40/tweets/lr{lr:g}/s{seed}"
        write_node(study, "eval", name, key, config, ("pretrain/mlm40",), to_dict(record))
        graph.append({"name": name, "kind": "eval", "key": key, "config": config})
    unfinished = {"model": "mlm40", "step": None, "task": "wnut16", "lr": 1e-4, "seed": 0}
    graph.append(
        {"name": "eval/mlm40/wnut16/lr0.0001/s0", "kind": "eval", "key": "9" * 64, "config": unfinished}
    )
    (study / "graph.json").write_text(json.dumps(graph))
    (run,), _ = read_study(study, "finetune:tweets")
    assert run.value == pytest.approx(73.0)  # LR 5e-4 wins on validation (79 vs 71); its test mean
    with pytest.raises(UserError, match="has no finetune:wnut16 .*finish the study"):
        read_study(study, "finetune:wnut16")  # planned, not finished
    # was: "has no finetune:squad ...; choose another --metric or finish the study", for a task no
    # node of the study evaluates, which no finishing gives
    with pytest.raises(
        UserError, match=r"evaluates no task 'squad'; its tasks: tweets, wnut16; use --metric"
    ):
        read_study(study, "finetune:squad")


def test_a_finetuning_metric_of_a_study_that_fine_tunes_nothing_names_a_metric_it_has(tmp_path):
    """It said "its tasks: none (it has no evaluation nodes); use --metric finetune:TASK with one of them"."""
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    (study / "graph.json").write_text(json.dumps([{"name": "pretrain/mlm40", "key": "a" * 64}]))
    with pytest.raises(UserError) as err:
        read_study(study, "finetune:tweets")
    assert str(err.value) == (
        f"--metric finetune:tweets: the study {study} fine-tunes no run (it has no evaluation nodes); use a metric "
        "its training logs, such as --metric val/mlm15, or advise a study whose runs are fine-tuned on tweets"
    )


def test_a_metric_edited_to_a_non_number_is_named_not_skipped(tmp_path):
    """The last val/mlm15 edited to text was skipped, and the one before it advised on without a word."""
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    (study / "graph.json").write_text(json.dumps([{"name": "pretrain/mlm40", "key": "a" * 64}]))
    metrics = next(study.glob("nodes/pretrain/*/run/metrics.jsonl"))
    lines = metrics.read_text().splitlines()[:-1]  # without the torn last line
    metrics.write_text("\n".join([*lines, json.dumps({"step": 21, "val/mlm15": "low"})]) + "\n")
    with pytest.raises(UserError, match=r"run/metrics.jsonl: the last val/mlm15 is 'low', not a number"):
        read_study(study, "val/mlm15")


def test_runs_not_finished_are_named_in_a_note(tmp_path):
    """A study still training was advised from its finished runs, the others left out without a word."""
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    write_pretrain_node(study, "clm", "b" * 64, "pfs-clm", [], 0, 5.0, marker=False)
    graph = [
        {"name": "pretrain/mlm40", "kind": "pretrain", "key": "a" * 64},
        {"name": "pretrain/clm", "kind": "pretrain", "key": "b" * 64},
        {"name": "eval/mlm40-tweets", "kind": "eval", "key": "c" * 64},  # not a run of the ladder
    ]
    (study / "graph.json").write_text(json.dumps(graph))
    runs, notes = read_study(study, "val/mlm15")
    assert [o.value for o in runs] == [6.1]
    assert notes == [
        f"1 pretraining run of {study} not finished (pretrain/clm): left out; finish the study "
        "(`encoderlab study run`) for the whole ladder"
    ]


@pytest.mark.parametrize("last", ["null", "NaN"])
def test_a_run_whose_last_metric_is_not_finite_is_left_out_with_a_note(tmp_path, last):
    """A diverged run's last held-out loss is null in metrics.jsonl (NaN in a file edited by hand): it was
    skipped, and the run's earlier evaluation advised on as its final loss, without a word."""
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    write_pretrain_node(study, "clm", "b" * 64, "pfs-clm", [], 0, 5.0)
    graph = [{"name": "pretrain/mlm40", "key": "a" * 64}, {"name": "pretrain/clm", "key": "b" * 64}]
    (study / "graph.json").write_text(json.dumps(graph))
    metrics = next(study.glob("nodes/pretrain/pretrain_mlm40-*/run/metrics.jsonl"))
    lines = metrics.read_text().splitlines()[:-1]  # without the torn last line
    metrics.write_text("\n".join([*lines, f'{{"step": 21, "val/mlm15": {last}}}']) + "\n")
    runs, notes = read_study(study, "val/mlm15")
    assert [o.value for o in runs] == [5.0]
    assert notes == ["pretrain/mlm40: its last val/mlm15 (step 21) is not finite, so it diverged: left out"]


def test_one_corpus_prepared_from_two_copies_scores_the_same_held_out_rows():
    """`data.packed.identity` holds the corpus's path: two studies preparing one corpus from two copies had
    other identities for the same val split, and would have been refused as scored on other rows."""
    from encoderlab.advise.studyread import _held_out_rows

    def meta(location: str, val_sha: str) -> dict:
        files = {
            "tokens.bin": {"bytes": 260, "sha256": val_sha},
            "doc_offsets.npy": {"bytes": 8, "sha256": "b"},
        }
        return {
            "recipe": {"sources": [{"location": location}], "tokenizer_hash": "t"},
            "sources": [{"location": location, "files": [{"path": location, "sha256": "c"}]}],
            "split_files": {"val": files, "train": {"tokens.bin": {"sha256": location}}},
        }

    assert _held_out_rows(meta("/a/corpus.jsonl", "v")) == _held_out_rows(meta("/b/corpus.jsonl", "v"))
    assert _held_out_rows(meta("/a/corpus.jsonl", "v")) != _held_out_rows(meta("/a/corpus.jsonl", "w"))


@pytest.mark.parametrize(
    ("key", "edited"), [("tokens", '"many"'), ("tokens", "NaN"), ("tokens", "-5"), ("flops", '"1e9"')]
)
def test_a_logged_count_edited_to_no_count_is_one_line(tmp_path, key, edited):
    """A run's logged tokens edited to text was a TypeError traceback; NaN or a negative count on the last
    line was hidden by the max of the earlier ones, and flops edited to text were dropped from the sum."""
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    (study / "graph.json").write_text(json.dumps([{"name": "pretrain/mlm40", "key": "a" * 64}]))
    metrics = next(study.glob("nodes/pretrain/*/run/metrics.jsonl"))
    lines = metrics.read_text().splitlines()[:-1]  # without the torn last line
    edited_last = json.dumps({**json.loads(lines[-1]), key: "EDIT"}).replace('"EDIT"', edited)
    metrics.write_text("\n".join([*lines[:-1], edited_last]) + "\n")
    with pytest.raises(UserError, match=rf"metrics.jsonl: step 20 logs {key} .*, not a count of {key}"):
        read_study(study, "val/mlm15")


@pytest.mark.parametrize("kept", [12, 0])
def test_a_finished_runs_metrics_cut_short_are_refused_and_create_nothing(tmp_path, capsys, kept):
    """A finished run's metrics.jsonl cut after step 12 of 20 was advised at the tokens and FLOPs of the cut (a
    rung no run trained at), its step-10 evaluation read as its final val/mlm15; emptied, it said "has no
    val/mlm15 ...; finish the study" of a finished study (found by using advise on a real study, 2026-12-07)."""
    from encoderlab.cli import main

    study, out = tmp_path / "study", tmp_path / "advice"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    (study / "graph.json").write_text(json.dumps([{"name": "pretrain/mlm40", "key": "a" * 64}]))
    metrics = next(study.glob("nodes/pretrain/*/run/metrics.jsonl"))
    metrics.write_text("".join(line + "\n" for line in metrics.read_text().splitlines()[:kept]))
    with pytest.raises(SystemExit):
        main(["advise", str(study), "--target-flops", "1e15", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        f"{metrics}: its last step is {kept} of the run's 20 (cut short or damaged since training wrote it), so the "
        "run's tokens, FLOPs and final metrics are unknown; restore the file as training wrote it"
    )
    assert not out.exists()


def test_a_refused_ladder_names_the_runs_left_out_of_it(tmp_path, capsys):
    """A study whose CLM runs were still training was refused as "the ladder has one schedule (MLM-40) ...
    add runs of another schedule", though it had them: the note naming the unfinished runs was never printed."""
    from encoderlab.cli import main

    study, out = tmp_path / "study", tmp_path / "advice"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    write_pretrain_node(study, "clm", "b" * 64, "pfs-clm", [], 0, 5.0, marker=False)
    graph = [
        {"name": f"pretrain/{n}", "kind": "pretrain", "key": k * 64}
        for n, k in (("mlm40", "a"), ("clm", "b"))
    ]
    (study / "graph.json").write_text(json.dumps(graph))
    with pytest.raises(SystemExit):
        main(["advise", str(study), "--target-flops", "1e15", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        f"; note: 1 pretraining run of {study} not finished (pretrain/clm): left out; finish the study "
        "(`encoderlab study run`) for the whole ladder"
    )
    assert not out.exists()


def test_a_finished_run_without_its_config_says_what_to_restore(tmp_path):
    """Said "config file .../run/config.yaml does not exist", naming no fix."""
    study = tmp_path / "study"
    write_pretrain_node(study, "mlm40", "a" * 64, "pfs-mlm", ["ratio=0.4"], 0, 6.1)
    (study / "graph.json").write_text(json.dumps([{"name": "pretrain/mlm40", "key": "a" * 64}]))
    next(study.glob("nodes/pretrain/*/run/config.yaml")).unlink()
    with pytest.raises(
        UserError, match=r"finished run pretrain/mlm40 has no run/config.yaml, .*; restore its run folder"
    ):
        read_study(study, "val/mlm15")


def test_a_study_whose_finished_runs_all_continue_a_model_is_refused_for_that(tmp_path):
    """Paper 2's study continues one checkpoint: every finished run was left out, and the refusal said "run or
    finish the study first" of a study that had finished them (found by the paper-2 hunt, 2026-12-06)."""
    study = tmp_path / "study"
    folder = write_node(study, "pretrain", "pretrain/detour", "b" * 64, {})
    (folder / "run").mkdir()
    save_yaml(
        build_recipe("cpt-mlm", ["init=minilm", "steps=10", "warmup=1", "decay=2"]),
        folder / "run" / "config.yaml",
    )
    (study / "graph.json").write_text(json.dumps([{"name": "pretrain/detour", "key": "b" * 64}]))
    with pytest.raises(UserError) as refused:
        read_study(study, "val/mlm15")
    assert str(refused.value) == (
        f"{study} holds no pretraining run from scratch: its finished runs continue a model (pretrain/detour from "
        "minilm), so none is on a ladder of sizes and budgets; advise a ladder study of runs from scratch, or a "
        "ladder file (docs/advise.md)"
    )


def test_a_short_split_is_read_at_the_share_the_study_asked_for(tmp_path):
    """A hand-written study of `pfs-clm-mlm` splits at 20 and 31 steps: CLM 50% of 31 steps switches at step 16
    and the recipe's default 25% at step 8, which advise read off the steps as 52% and 26%, two more schedules,
    so a finished study was refused as sharing no rung (found by the advise hunt, 2026-12-07). The study's
    record (study.json) says what each run was asked for; where it is gone, or asks for a share the steps do not
    round from, the steps are read as before."""
    study = tmp_path / "study"
    runs = {  # run name -> (recipe, params, steps)
        "mlm40-x20": ("pfs-mlm", ["ratio=0.4"], 20),
        "mlm40-x31": ("pfs-mlm", ["ratio=0.4"], 31),
        "clm50-x20": ("pfs-clm-mlm", ["clm_fraction=0.5", "ratio=0.4"], 20),
        "clm50-x31": ("pfs-clm-mlm", ["clm_fraction=0.5", "ratio=0.4"], 31),
        "clm25-x31": ("pfs-clm-mlm", ["ratio=0.4"], 31),  # the recipe's default share
    }
    graph = []
    for i, (run, (recipe, params, steps)) in enumerate(runs.items()):
        for seed in (0, 1):
            key = f"{i}{seed}" * 32
            write_pretrain_node(study, f"{run}/s{seed}", key, recipe, params, seed, 6.0, steps=steps)
            graph.append({"name": f"pretrain/{run}/s{seed}", "kind": "pretrain", "key": key})
    (study / "graph.json").write_text(json.dumps(graph))

    def record(**shares):
        asked = [
            {
                "name": run,
                "recipe": recipe,
                "params": dict(p.split("=") for p in params) | shares.get(run, {}),
            }
            for run, (recipe, params, _) in runs.items()
        ]
        for r in asked:
            r["params"] = {k: float(v) for k, v in r["params"].items()}
        (study / "study.json").write_text(json.dumps({"name": "hand", "runs": asked}))

    def schedules():
        return {
            o.source.rsplit(":pretrain/", 1)[1]: o.schedule.name for o in read_study(study, "val/mlm15")[0]
        }

    record()
    read = schedules()
    assert set(read.values()) == {"MLM-40", "CLM 50% -> MLM-40", "CLM 25% -> MLM-40"}, read
    assert read["clm50-x31/s1"] == read["clm50-x20/s0"] == "CLM 50% -> MLM-40"
    assert read["clm25-x31/s0"] == "CLM 25% -> MLM-40"
    record(**{"clm50-x31": {"clm_fraction": 0.25}})  # asked for a share its 16 CLM steps are not
    assert schedules()["clm50-x31/s0"] == "CLM ~50% -> MLM-40"  # read off steps: 50% to 53.2% (stepshares)
    (study / "study.json").unlink()  # nothing recorded: the steps' shares
    read = schedules()
    assert (read["clm50-x31/s0"], read["clm25-x31/s0"], read["clm50-x20/s0"]) == (
        "CLM ~50% -> MLM-40",  # 16 of 31 steps and 10 of 20: one share explains both (stepshares)
        "CLM ~26% -> MLM-40",
        "CLM ~50% -> MLM-40",
    )


@pytest.mark.parametrize("recipe", [["pfs-clm-mlm"], {"name": "pfs-clm-mlm"}])
def test_a_study_record_whose_recipe_is_no_name_is_not_read(tmp_path, recipe):
    # was: `recipe in RECIPES` of a hand-edited record's list or mapping, a TypeError traceback; a record
    # that does not say what a run was asked for is read as none, the steps' shares as before
    study = tmp_path / "study"
    write_pretrain_node(
        study, "clm50/s0", "a" * 64, "pfs-clm-mlm", ["clm_fraction=0.5", "ratio=0.4"], 0, 6.0, steps=31
    )
    (study / "graph.json").write_text(
        json.dumps([{"name": "pretrain/clm50/s0", "kind": "pretrain", "key": "a" * 64}])
    )
    run = {"name": "clm50", "recipe": recipe, "params": {"clm_fraction": 0.5}}
    (study / "study.json").write_text(json.dumps({"name": "hand", "runs": [run]}))
    (read,) = read_study(study, "val/mlm15")[0]
    assert read.schedule.name == "CLM ~50% -> MLM-40" and read.schedule.stages[0].approx


def test_runs_of_two_shares_are_two_schedules_whatever_digits_are_printed(tmp_path):
    """Shares rounded to the hundredth keyed a schedule: a study asking 0.125 and 0.12 of 400 steps (50 and 48
    CLM steps, two recipes) fitted them as one trend line named "CLM 12%"; and 16 of 31 steps read off a run
    (no record) was the same schedule, and name, as a recipe's exact 52%."""
    study = tmp_path / "study"
    runs = {"clm12.5": 0.125, "clm12": 0.12, "clm52": 0.52}
    graph = []
    for i, (run, share) in enumerate(runs.items()):
        key = f"{i}" * 64
        write_pretrain_node(
            study, run, key, "pfs-clm-mlm", [f"clm_fraction={share}", "ratio=0.4"], 0, 6.0, steps=400
        )
        graph.append({"name": f"pretrain/{run}", "kind": "pretrain", "key": key})
    key = "9" * 64  # a run whose record is gone: 16 of 31 steps, read off them
    write_pretrain_node(
        study, "clm50", key, "pfs-clm-mlm", ["clm_fraction=0.5", "ratio=0.4"], 0, 6.0, steps=31
    )
    graph.append({"name": "pretrain/clm50", "kind": "pretrain", "key": key})
    (study / "graph.json").write_text(json.dumps(graph))
    record = [{"name": r, "recipe": "pfs-clm-mlm", "params": {"clm_fraction": s}} for r, s in runs.items()]
    (study / "study.json").write_text(json.dumps({"name": "hand", "runs": record}))
    read = {o.source.rsplit(":pretrain/", 1)[1]: o.schedule for o in read_study(study, "val/mlm15")[0]}
    assert len(set(read.values())) == 4, read
    assert len({s.name for s in read.values()}) == 4, read
    assert read["clm12.5"].name == "CLM 12.5% -> MLM-40" and read["clm12.5"].clm_share == 0.125
    assert read["clm52"].name == "CLM 52% -> MLM-40" and read["clm50"].name == "CLM ~50% -> MLM-40"
    assert Schedule.biphasic(0.7, 0.4) == Schedule.biphasic(1 - 0.3, 0.4)  # float noise keys alike


def test_one_split_read_off_steps_at_two_lengths_is_one_schedule(tmp_path):
    """With no record, shares are read off the steps to the hundredth and marked `~`; marked only where that
    rounded, 30% of 100 steps (30 CLM steps, 30%) and of 33 (10, ~30%) were two schedules of one split."""
    study, graph = tmp_path / "study", []
    for i, steps in enumerate((100, 33)):
        key = f"{i}" * 64
        write_pretrain_node(
            study, f"x{steps}", key, "pfs-clm-mlm", ["clm_fraction=0.3", "ratio=0.4"], 0, 6.0, steps=steps
        )
        graph.append({"name": f"pretrain/x{steps}", "kind": "pretrain", "key": key})
    (study / "graph.json").write_text(json.dumps(graph))
    read = {o.source.rsplit(":pretrain/", 1)[1]: o.schedule for o in read_study(study, "val/mlm15")[0]}
    assert read["x100"] == read["x33"], read
    assert read["x33"].name == "CLM ~30% -> MLM-40"


def test_shares_read_off_steps_are_one_schedule_where_one_share_explains_the_switches(tmp_path):
    """Read off steps to the hundredth, CLM 12.5% of 1000 steps (125: 0.125, 12%) and of 333 (42: 0.1261, 13%)
    were two schedules of one split, while 12% of 1000 steps (120) was 12.5%'s: one trend line of two recipes.
    A switch at step b of T is any share within half a step of it; runs that one share explains are one."""
    study, graph = tmp_path / "study", []
    runs = {"a-x1000": (0.125, 1000), "a-x333": (0.125, 333), "b-x1000": (0.12, 1000), "b-x400": (0.12, 400)}
    for i, (run, (share, steps)) in enumerate(runs.items()):
        key = f"{i}" * 64
        params = [f"clm_fraction={share}", "ratio=0.4"]
        write_pretrain_node(study, run, key, "pfs-clm-mlm", params, 0, 6.0, steps=steps)
        graph.append({"name": f"pretrain/{run}", "kind": "pretrain", "key": key})
    (study / "graph.json").write_text(json.dumps(graph))  # no study.json: every share is read off steps
    read = {o.source.rsplit(":pretrain/", 1)[1]: o.schedule for o in read_study(study, "val/mlm15")[0]}
    assert read["a-x1000"] == read["a-x333"] and read["b-x1000"] == read["b-x400"], read
    assert read["a-x1000"] != read["b-x1000"], read
    assert (read["a-x333"].name, read["b-x400"].name) == ("CLM ~12.5% -> MLM-40", "CLM ~12% -> MLM-40")


def test_step_shares_group_longest_first_and_never_split_one_length_two_ways():
    from encoderlab.advise.stepshares import StepSplit, settle

    def split(*steps):
        return StepSplit(
            tuple(("clm" if i % 2 == 0 else "mlm", None if i % 2 == 0 else 0.4) for i in range(len(steps))),
            steps,
        )

    # 16 of 31 steps allows 50% to 53.2%: beside runs of 50% and 52% it joins the nearer, alone it is 50%
    fifty, fifty2, short = settle([split(500, 500), split(520, 480), split(16, 15)])
    assert (fifty.name, fifty2.name, short) == ("CLM ~50% -> MLM-40", "CLM ~52% -> MLM-40", fifty2)
    assert settle([split(16, 15)])[0].name == "CLM ~50% -> MLM-40"
    # two switches of one length are two shares, though a third run's interval meets both
    one, other, wide = settle([split(24, 176), split(25, 175), split(6, 44)])
    assert one != other and wide in (one, other)
    # three stages: one schedule where every switch agrees, named whole
    a, b, c = settle([split(250, 500, 250), split(83, 167, 83), split(250, 250, 500)])
    assert a == b != c and a.name == "CLM ~25% -> MLM-40 ~50% -> CLM"
