"""End to end on fixture assets in the real schemas: the grid, the cache and resume, summaries,
LR selection, paired comparison and every bad-input error."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fixtures import boolq_records, model_folder, squad_records, write_asset

from encoderlab.errors import UserError
from encoderlab.eval import protocol
from encoderlab.eval.predictions import read_predictions, rescore
from encoderlab.eval.protocol import evaluate
from encoderlab.eval.spec import FinetuneConfig
from encoderlab.eval.summary import Degenerate, EvalRecord, compare, summarize_results
from encoderlab.eval.summarypage import summary_markdown
from encoderlab.eval.tasks import TASKS, load_task

QUICK = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=40)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def quick(monkeypatch):
    """Shorter schedules for the named tasks (their signatures change, as they should)."""

    def apply(*names):
        for name in names:
            monkeypatch.setitem(TASKS, name, replace(TASKS[name], finetune=QUICK))

    return apply


def test_boolq_grid_summary_cache_and_resume(home, tmp_path, quick, monkeypatch):
    write_asset(home, "boolq", boolq_records(240))
    quick("boolq")
    model = model_folder(tmp_path / "model")
    out = tmp_path / "eval"
    summary = evaluate(
        str(model), suite="pocket", tasks=["boolq"], lrs=[1e-4, 2e-3], seeds=[0, 1], out=out, progress=False
    )

    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4
    task = summary.tasks["boolq"]
    # 30 test examples: > 80 is 25+ right, a 0.02% chance under guessing (chance is ~50). The score is
    # the same in every process (93.3 here), since the fixture's tokenizer trains reproducibly.
    assert task.best_lr == 2e-3 and task.test.mean > 80
    assert [c.lr for c in task.curve] == [1e-4, 2e-3]
    assert task.test.n == 2 and task.test.ci_low <= task.test.mean <= task.test.ci_high
    assert summary.families["sc"].tasks == ["boolq"]
    assert json.loads((out / "summary.json").read_text())["tasks"]["boolq"]["best_lr"] == 2e-3

    # Every run saved its test predictions; the score recomputed from them, directly and with
    # `rescore`, is the recorded one.
    for line in lines:
        record = json.loads(line)
        saved = read_predictions(out / record["predictions"])
        rows = saved["test"]
        assert len(rows) == record["test"]["test"]["n"] and {r["gold"] for r in rows} <= {"false", "true"}
        direct = 100.0 * sum(r["gold"] == r["pred"] for r in rows) / len(rows)
        assert direct == pytest.approx(record["test_score"])
        assert rescore(TASKS["boolq"], out / record["predictions"]) == record["test"]
        assert record["degenerate"] == {}
    assert "| boolq | sc | accuracy | 0.002 |" in (out / "summary.md").read_text()

    # Cached: a rerun trains nothing. Torn last line: only that node is recomputed.
    calls = []
    real = protocol.run_one
    monkeypatch.setattr(protocol, "run_one", lambda *a, **k: calls.append(a[4:6]) or real(*a, **k))
    evaluate(
        str(model), suite="pocket", tasks=["boolq"], lrs=[1e-4, 2e-3], seeds=[0, 1], out=out, progress=False
    )
    assert calls == []
    (out / "results.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    evaluate(
        str(model), suite="pocket", tasks=["boolq"], lrs=[1e-4, 2e-3], seeds=[0, 1], out=out, progress=False
    )
    assert len(calls) == 1
    assert [json.loads(x)["seed"] for x in (out / "results.jsonl").read_text().splitlines()] == [
        json.loads(x)["seed"] for x in lines
    ]


def test_squad_with_ood_tests_and_skipped_spans(home, tmp_path, quick):
    write_asset(home, "squad-v1-dev", squad_records(300, 0, bad_every=10))
    for i, shift in enumerate(("nyt", "reddit", "amazon", "new-wiki")):
        write_asset(home, f"squad-shifts-{shift}", squad_records(40, i + 1, title_prefix=shift))
    quick("squad")
    summary = evaluate(
        str(model_folder(tmp_path / "m")),
        suite="pocket",
        tasks=["squad"],
        lrs=[2e-3],
        seeds=[0],
        out=tmp_path / "o",
        progress=False,
    )
    task = summary.tasks["squad"]
    assert set(task.test_splits) == {"test", "nyt", "reddit", "amazon", "new-wiki"}
    record = json.loads((tmp_path / "o" / "results.jsonl").read_text())
    assert rescore(TASKS["squad"], tmp_path / "o" / record["predictions"]) == record["test"]
    # 30 of the 300 questions have a wrong span: training drops its own, scored splits keep theirs
    counts = task.counts
    assert counts["skipped_answers"] == counts["skipped_questions"] > 0
    assert counts["skipped_answers"] + counts["mismatched_scored_answers"] == 30
    _, data = load_task(TASKS["squad"])
    scored = [e for split in (data.val, *data.tests.values()) for e in split]
    kept = [e for e in scored if e["id"].startswith("t-0-") and int(e["id"].split("-")[-1]) % 10 == 0]
    assert len(kept) == counts["mismatched_scored_answers"] and all(e["answers"] for e in kept)
    assert task.test.mean > 50 and task.test.sd is None  # one seed: no interval


def _rec(model, lr, seed, val, test, task="boolq"):
    return EvalRecord(model=model, task=task, task_signature=TASKS[task].signature(), lr=lr, seed=seed,
                      metric="accuracy", family="sc", val={"accuracy": val}, val_score=val, test_score=test,
                      test={"test": {"accuracy": test}})  # fmt: skip


def test_a_result_counts_only_for_its_model_task_version_lr_and_seed(tmp_path):
    """`ResultsStore.has_result`, the one test of "already run" that `evaluate`, `eval_node` and
    `eval --check` share: a task whose settings changed (another signature) has no result yet."""
    store = protocol.ResultsStore(tmp_path / protocol.RESULTS)
    store.add(_rec("a", 1e-4, 0, 70, 80))
    boolq = TASKS["boolq"]
    assert store.has_result("a", boolq, 1e-4, 0)
    other_version = replace(boolq, max_length=boolq.max_length // 2)
    assert other_version.signature() != boolq.signature()
    misses = [("b", boolq, 1e-4, 0), ("a", TASKS["vitaminc"], 1e-4, 0), ("a", other_version, 1e-4, 0)]
    misses += [("a", boolq, 1e-3, 0), ("a", boolq, 1e-4, 1)]
    assert not any(store.has_result(*miss) for miss in misses)


def test_best_lr_is_chosen_on_validation_not_test():
    records = [_rec("a", 1e-4, s, 70 + s, 90) for s in range(3)] + [
        _rec("a", 1e-3, s, 80 + s, 60) for s in range(3)
    ]
    task = summarize_results(records, "a", ["boolq"], [1e-4, 1e-3], [0, 1, 2]).tasks["boolq"]
    assert task.best_lr == 1e-3 and task.test.mean == 60


def test_the_summary_header_says_its_grid_in_words_that_agree_with_it():
    """It read "LRs [0.0001]; seeds [0, 1, 2]" (the lists as Python prints them)."""
    records = [_rec("a", 1e-4, s, 70 + s, 90) for s in range(3)]
    md = summary_markdown(summarize_results(records, "a", ["boolq"], [1e-4], [0, 1, 2]))
    assert "; LR 0.0001 x seeds 0, 1, 2. Test = " in md
    records = [_rec("a", lr, 0, 70, 90) for lr in (1e-4, 1e-3)]
    md = summary_markdown(summarize_results(records, "a", ["boolq"], [1e-4, 1e-3], [0]))
    assert "; LRs 0.0001, 0.001 x seed 0. Test = " in md


def test_the_summary_prints_scores_to_the_digits_of_their_interval():
    """Was `70.00 ± 24.84 (n=3)`, two places whatever the interval; now as the study report prints a score
    (`words.estimate_text`). Test 60, 70, 80: mean 70, sd 10, half-width t(0.975, 2) x 10 / sqrt(3) = 24.8;
    validation 70, 71, 72: 2.48."""
    records = [_rec("a", 1e-4, s, 70 + s, 60 + 10 * s) for s in range(3)]
    md = summary_markdown(summarize_results(records, "a", ["boolq"], [1e-4], [0, 1, 2]))
    assert "| boolq | sc | accuracy | 0.0001 | 71.0 ± 2.5 (n=3) | 70 ± 25 (n=3) |" in md
    one = summary_markdown(summarize_results(records[:1], "a", ["boolq"], [1e-4], [0]))
    assert "| 70.00 (n=1) | 60.00 (n=1) |" in one  # one seed: no interval, two places as before


def test_lrs_alike_to_6_digits_read_apart_in_the_summary():
    """`--lrs 1e-5 1.0000001e-5` read "LRs 1e-05, 1e-05" and both curve points "1e-05" (`:g`'s 6 digits);
    each is now written as its predictions file names it (`words.lr_text`), usual LRs unchanged."""
    near = 1.0000001e-5
    records = [_rec("a", 1e-5, 0, 70, 80), _rec("a", near, 0, 90, 95)]
    md = summary_markdown(summarize_results(records, "a", ["boolq"], [1e-5, near], [0]))
    assert f"; LRs 1e-05, {near!r} x seed 0. Test = " in md
    assert f"| boolq | sc | accuracy | {near!r} | " in md  # the best LR's cell
    assert f"- boolq: 1e-05: 80.00, {near!r}: 95.00" in md


def test_validation_ties_go_to_the_smaller_lr():
    # Equal validation means (one differing only by summation noise): the smaller LR wins, in
    # whatever order the records come.
    records = [_rec("a", 1e-3, s, 80.0, 60) for s in range(2)] + [
        _rec("a", 1e-4, s, 80.0, 90) for s in range(2)
    ]
    records[0] = replace(records[0], val_score=80.0 + 1e-13)
    for order in (records, records[::-1]):
        task = summarize_results(order, "a", ["boolq"], [1e-4, 1e-3], [0, 1]).tasks["boolq"]
        assert task.best_lr == 1e-4 and task.test.mean == 90


def test_a_model_that_predicts_one_class_is_flagged(home, tmp_path, quick):
    # Every training answer is "true": the classifier learns the prior and answers "true" to all.
    records = boolq_records(160)
    for r in records:
        if r["meta"]["split"] == "train":
            r["meta"]["label"] = True
    write_asset(home, "boolq", records)
    quick("boolq")
    out = tmp_path / "eval"
    summary = evaluate(
        str(model_folder(tmp_path / "m")),
        suite="pocket",
        tasks=["boolq"],
        lrs=[2e-3],
        seeds=[0],
        out=out,
        progress=False,
    )
    record = json.loads((out / "results.jsonl").read_text())
    assert record["degenerate"] == {"test": "predicts class 'true' for all 40 examples"}
    assert summary.tasks["boolq"].degenerate == Degenerate(runs=1, of=1, why=record["degenerate"]["test"])
    md = (out / "summary.md").read_text()
    assert "(degenerate)" in md and "- boolq: 1 of 1 seed; predicts class 'true' for all 40 examples" in md
    assert {r["pred"] for r in read_predictions(out / record["predictions"])["test"]} == {"true"}


def test_paired_comparison_on_the_same_seeds():
    a = [_rec("a", 1e-4, s, 80, 80 + s) for s in range(3)]
    b = [_rec("b", 1e-4, s, 80, 79 + s + 0.1 * s) for s in range(3)]
    out = compare(a + b, "a", "b", ["boolq"], lrs=[1e-4], seeds=[0, 1, 2])["boolq"]
    diffs = [1.0, 0.9, 0.8]
    assert out.at_best_lr.mean == pytest.approx(sum(diffs) / 3)
    assert 0 < out.at_best_lr.p_value < 0.01  # consistent positive differences


def test_unknown_names_are_one_line_errors_listing_the_valid_ones(home, tmp_path):
    with pytest.raises(UserError, match="unknown suite 'nope'; valid: biomed, domain, paper, pocket"):
        evaluate("x", suite="nope")
    with pytest.raises(UserError, match="unknown task 'nope'; valid: .*boolq"):
        evaluate("x", suite="pocket", tasks=["nope"])
    with pytest.raises(UserError, match="not in suite 'pocket'"):
        evaluate("x", suite="pocket", tasks=["pubmedqa"])


def test_missing_assets_name_the_fetch_command(home):
    write_asset(home, "boolq", boolq_records(20))
    with pytest.raises(UserError, match="run: encoderlab assets fetch pubmedqa$"):
        evaluate("x", suite="domain", tasks=["pubmedqa"])


def test_model_without_tokenizer(home, tmp_path):
    write_asset(home, "boolq", boolq_records(20))
    with pytest.raises(UserError, match="no tokenizer"):
        evaluate(
            str(model_folder(tmp_path / "m", with_tokenizer=False)),
            suite="pocket",
            tasks=["boolq"],
            out=tmp_path / "o",
        )


def test_label_outside_the_label_set(home, tmp_path):
    write_asset(home, "tweets", [{"id": "1", "text": "hi", "meta": {"label": "angry"}}])
    with pytest.raises(UserError, match="label 'angry' is not in its label set"):
        evaluate(str(model_folder(tmp_path / "m")), suite="pocket", tasks=["tweets"], out=tmp_path / "o")
    assert not (tmp_path / "o" / "summary.json").exists()


def test_empty_split(home, tmp_path):
    write_asset(
        home,
        "wnut16",
        [{"id": "0", "text": "hi bob", "meta": {"tokens": ["hi", "bob"], "tags": ["O", "B-person"]}}],
    )
    with pytest.raises(UserError, match="split is empty"):
        evaluate(str(model_folder(tmp_path / "m")), suite="pocket", tasks=["wnut16"], out=tmp_path / "o")


def test_bad_grid(home, tmp_path):
    write_asset(home, "boolq", boolq_records(20))
    with pytest.raises(UserError, match="learning rates"):
        evaluate("x", suite="pocket", tasks=["boolq"], lrs=[0.0])


def test_cli_prints_one_line(home, tmp_path, capsys):
    from encoderlab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["eval", "some-model", "--tasks", "nope", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown task 'nope'" in err[0]


def test_cli_and_node_api_share_the_cache(home, tmp_path, quick, capsys):
    from encoderlab.cli import main
    from encoderlab.eval import eval_node

    write_asset(home, "boolq", boolq_records(120))
    quick("boolq")
    model, out = str(model_folder(tmp_path / "m")), tmp_path / "o"
    main(["eval", model, "--tasks", "boolq", "--lrs", "2e-3", "--seeds", "0", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "boolq" in printed and "best lr 0.002" in printed and (out / "summary.md").is_file()
    record = eval_node(model, "boolq", 2e-3, 0, out)  # already cached: returned, not recomputed
    assert record.lr == 2e-3 and len((out / "results.jsonl").read_text().splitlines()) == 1


def test_eval_node_max_steps_caps_fine_tuning_under_its_own_signature(home, tmp_path, quick):
    from encoderlab.eval import eval_node

    write_asset(home, "boolq", boolq_records(120))
    quick("boolq")
    model, out = str(model_folder(tmp_path / "m")), tmp_path / "o"
    capped = eval_node(model, "boolq", 2e-3, 0, out, max_steps=3)
    full = eval_node(model, "boolq", 2e-3, 0, out)
    assert capped.steps == 3 and full.steps == QUICK.max_steps
    assert capped.task_signature != full.task_signature
    again = eval_node(model, "boolq", 2e-3, 0, out, max_steps=3)  # cached: the same record, not retrained
    assert again == capped and len((out / "results.jsonl").read_text().splitlines()) == 2


def test_eval_node_in_a_folder_of_another_models_result_runs_its_own(home, tmp_path, quick):
    """A study's pretrain node run again keeps its key, so its eval nodes rerun in their old folders with
    other weights (study/runner.py `_to_run`). Unlike the CLI's `--out` (`require_own_results`, which
    guards one model's summaries), the node writes no summary: it runs, and its record and predictions sit
    beside the old model's, each keyed by its fingerprint, the old ones untouched. Both capped at 3 steps (a
    study's `max_steps`): what is kept where does not depend on how long each trained."""
    from encoderlab.eval import eval_node

    write_asset(home, "boolq", boolq_records(120))
    quick("boolq")
    out = tmp_path / "node"
    old = eval_node(str(model_folder(tmp_path / "a")), "boolq", 2e-3, 0, out, max_steps=3)
    kept = (out / old.predictions).read_bytes()
    new = eval_node(str(model_folder(tmp_path / "b", seed=1)), "boolq", 2e-3, 0, out, max_steps=3)
    assert new.model != old.model and new.predictions != old.predictions
    store = protocol.ResultsStore(out / protocol.RESULTS)
    assert store.get(new.model, "boolq", new.task_signature, 2e-3, 0) == new
    assert store.get(old.model, "boolq", old.task_signature, 2e-3, 0) == old
    assert (out / old.predictions).read_bytes() == kept and (out / new.predictions).is_file()


def test_tokenised_tasks_are_reused_only_for_the_same_examples(home, tmp_path, quick):
    from encoderlab.eval import load_eval_model
    from encoderlab.eval.tasks import get_task

    write_asset(home, "boolq", boolq_records(120))
    quick("boolq")
    em = load_eval_model(str(model_folder(tmp_path / "m")))
    first = protocol._prepared_task(get_task("boolq"), em)
    assert protocol._prepared_task(get_task("boolq"), em).prepared is first.prepared
    write_asset(home, "boolq", boolq_records(160))  # same task name, other examples
    assert protocol._prepared_task(get_task("boolq"), em).prepared is not first.prepared
