"""The model card `encoderlab export` writes (issue 18, item 7): Hugging Face conventions (YAML front
matter that huggingface_hub parses, a model-index with the scores), and facts read from the run."""

from __future__ import annotations

import json

import pytest
from huggingface_hub import ModelCard

from encoderlab.cli import main
from encoderlab.model.fingerprint import fingerprint
from encoderlab.model.hub import load_pretrained

CORPUS = [
    f"the {w} river ran past the old {v} mill in spring" for w in ("red", "blue", "grey") for v in range(30)
]


def _cli(argv, capsys) -> tuple[int, str]:
    capsys.readouterr()
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code, capsys.readouterr().err
    return 0, capsys.readouterr().err


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A two-phase smoke run (CLM then MLM) on prepared data, with its tokenizer: 20 steps, not the recipe's
    40, still both phases (5 CLM steps) and a checkpoint (step 10) short of the final model."""
    root = tmp_path_factory.mktemp("card")
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(CORPUS))
    )
    steps = [
        ["data", "tokenizer", "--source", root / "corpus.jsonl", "--out", root / "tok", "--vocab-size", "300"],
        ["data", "prepare", "--source", root / "corpus.jsonl", "--tokenizer", root / "tok", "--out", root / "data",
         "--decontaminate", "none", "--workers", "1"],
        ["pretrain", "--recipe", "smoke-clm-mlm", "--param", f"data={root / 'data'}", "--param", "steps=20",
         "--set", "layout.seq_len=32", "progress=false", "--out", root / "run"],
    ]  # fmt: skip
    for argv in steps:
        main([str(a) for a in argv])
    return root


def _summary(model_fp: str) -> dict:
    """summary.json as `encoderlab eval` writes it (a ModelSummary), for one SC task."""
    from encoderlab.config import to_dict
    from encoderlab.eval.stats import Estimate
    from encoderlab.eval.summary import LRPoint, ModelSummary, TaskSummary

    test = Estimate(mean=61.5, sd=1.0, n=2, ci_low=52.5, ci_high=70.5, half_width=9.0)
    point = LRPoint(lr=1e-4, seeds=[0, 1], val=test, test=test, test_by_seed={0: 61.0, 1: 62.0})
    task = TaskSummary(
        metric="accuracy", family="sc", best_lr=1e-4, val=test, test=test, test_splits={"test": test},
        test_by_seed={0: 61.0, 1: 62.0}, curve=[point], counts={}, degenerate=None,
    )  # fmt: skip
    summary = ModelSummary(model=model_fp, lrs=[1e-4], seeds=[0, 1], tasks={"tweets": task}, families={})
    return to_dict(summary)


def test_the_card_records_the_run_and_its_evaluation(run, tmp_path, capsys):
    pre = load_pretrained(run / "run")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "summary.json").write_text(
        json.dumps(_summary(fingerprint(pre.model, pre.tokenizer)))
    )
    code, err = _cli(["export", run / "run", "--eval", tmp_path / "eval", "--out", tmp_path / "hf"], capsys)
    assert code == 0, err
    card = ModelCard.load(tmp_path / "hf" / "README.md")
    assert card.data.library_name == "transformers" and card.data.pipeline_tag == "fill-mask"
    assert {"encoderlab", "clm", "mlm"} <= set(card.data.tags)
    (result,) = card.data.eval_results
    assert (result.dataset_name, result.metric_type, result.metric_value) == ("tweets", "accuracy", 61.5)
    assert result.task_type == "text-classification"
    text = card.text
    last = json.loads((run / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert f"Trained for {last['step']:,} steps, {last['tokens']:,} tokens seen" in text
    assert "| clm" in text and "| mlm (" in text  # one row per phase, with the MLM settings
    meta = json.loads((run / "data" / "meta.json").read_text())
    sha = meta["sources"][0]["files"][0]["sha256"][:12]
    assert f"`corpus.jsonl` ({sha})" in text
    assert f"{meta['splits']['train']['docs']:,} documents" in text
    assert f"{len(pre.tokenizer):,} ids" in text
    assert "| tweets | sc | accuracy | 0.0001 | 61.5 ± 9.0 (n=2) |" in text  # to the interval's digits


def test_an_evaluation_of_another_model_is_refused(run, tmp_path, capsys):
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "summary.json").write_text(json.dumps(_summary("0123456789abcdef0123")))
    code, err = _cli(["export", run / "run", "--eval", tmp_path / "eval", "--out", tmp_path / "hf"], capsys)
    assert code == 2 and "scored another model (fingerprint 0123456789abcdef0123" in err
    assert not (tmp_path / "hf").exists()


def test_an_evaluation_holding_this_models_runs_under_another_models_summary_says_to_rerun_it(
    run, tmp_path, capsys
):
    # was: "scored another model", of a folder two models were evaluated into, this one first
    pre = load_pretrained(run / "run")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "summary.json").write_text(json.dumps(_summary("0123456789abcdef0123")))
    mine = {"model": fingerprint(pre.model, pre.tokenizer), "task": "tweets", "lr": 1e-4, "seed": 0}
    (tmp_path / "eval" / "results.jsonl").write_text(json.dumps(mine) + "\n")
    code, err = _cli(["export", run / "run", "--eval", tmp_path / "eval", "--out", tmp_path / "hf"], capsys)
    assert code == 2 and "its summary.json is another model's (fingerprint 0123456789abcdef0123" in err
    assert "holds this model's runs too; run `encoderlab eval` of this model with --out" in err
    assert not (tmp_path / "hf").exists()


def test_a_checkpoint_card_counts_its_own_tokens(run, tmp_path, capsys):
    ckpt = sorted((run / "run" / "checkpoints").iterdir())[0]
    state = json.loads((ckpt / "state.json").read_text())["progress"]
    assert _cli(["export", ckpt, "--out", tmp_path / "hf"], capsys)[0] == 0
    text = (tmp_path / "hf" / "README.md").read_text()
    assert f"Trained for {state['step']:,} steps, {state['tokens']:,} tokens seen" in text
    assert "Not evaluated" in text


def test_a_model_outside_a_run_says_its_history_is_unknown(run, tmp_path, capsys):
    import shutil

    shutil.copytree(run / "run" / "final", tmp_path / "model")
    assert _cli(["export", tmp_path / "model", "--out", tmp_path / "hf"], capsys)[0] == 0
    assert "is not part of an encoderlab run" in (tmp_path / "hf" / "README.md").read_text()


def test_a_transplants_card_names_its_transplant_json(run, tmp_path, capsys):
    # said only "not part of an encoderlab run", nothing of which layers came from which model
    final = run / "run" / "final"
    argv = ["analyze", "transplant", final, final, "--layers", "0", "--out", tmp_path / "t"]
    assert _cli(argv, capsys)[0] == 0
    assert _cli(["export", tmp_path / "t", "--out", tmp_path / "hf"], capsys)[0] == 0
    text = (tmp_path / "hf" / "README.md").read_text()
    record = json.loads((tmp_path / "t" / "transplant.json").read_text())
    assert f"`{tmp_path / 't' / 'transplant.json'}` records which layers came from which model" in text
    assert f"{record['description']} from `{final}`, the rest from `{final}`" in text


@pytest.mark.parametrize(
    "changes",
    [
        {"phases": 5},
        {"phases": ["mlm"]},
        {"phases": [{"steps": 3}]},
        {"phases": [{"objective": {"type": "mlm"}, "steps": "ten"}]},
        {"data": ["not", "a", "mapping"]},
    ],
)
def test_a_run_whose_config_yaml_was_edited_out_of_shape_still_exports_and_says_so(
    run, tmp_path, capsys, changes
):
    """The card read phases, objectives and step counts from config.yaml as they were, and a file
    edited into another shape was a TypeError, KeyError, AttributeError or ValueError traceback, after
    the load."""
    import shutil

    import yaml

    shutil.copytree(run / "run", tmp_path / "run")
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump({**config, **changes}))
    code, err = _cli(["export", tmp_path / "run", "--out", tmp_path / "hf"], capsys)
    assert code == 0, err
    text = ModelCard.load(tmp_path / "hf" / "README.md").text
    assert "its `config.yaml` does not read as a run's config" in text


def test_the_cards_grid_agrees_with_its_number_and_prints_no_python_list():
    """It read "over LRs [0.0001] x seeds [0, 1]" (the summary's lists as Python prints them)."""
    from encoderlab.model.card import _evaluation

    summary = _summary("fp")
    (line,) = [x for x in _evaluation(summary) if x.startswith("Fine-tuned")]
    assert line.startswith("Fine-tuned per task over LR 0.0001 x seeds 0, 1; the test score")
    (line,) = [x for x in _evaluation({**summary, "lrs": [1e-5, 5e-5], "seeds": [3]}) if x.startswith("Fine")]
    assert line.startswith("Fine-tuned per task over LRs 1e-05, 5e-05 x seed 3; ")
    # was "LRs 1e-05, 1e-05" and a best LR of 1e-05: LRs alike to 6 digits are written in full (words.lr_text)
    near = 1.0000001e-5
    summary = {**summary, "lrs": [1e-5, near], "seeds": [3]}
    summary["tasks"]["tweets"]["best_lr"] = near
    (line,) = [x for x in _evaluation(summary) if x.startswith("Fine")]
    assert line.startswith(f"Fine-tuned per task over LRs 1e-05, {near!r} x seed 3; ")
    (row,) = [x for x in _evaluation(summary) if x.startswith("| tweets")]
    assert f"| {near!r} |" in row


def test_a_summary_without_its_grid_is_refused_in_one_line(tmp_path):
    from encoderlab.errors import UserError
    from encoderlab.model.card import read_eval_summary

    summary = {k: v for k, v in _summary("fp").items() if k != "lrs"}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(UserError, match="no readable summary.json"):
        read_eval_summary(tmp_path, "fp")


@pytest.mark.parametrize(
    ("runs", "of", "said"), [(1, 1, "degenerate in 1 of 1 seed)"), (2, 3, "degenerate in 2 of 3 seeds)")]
)
def test_the_cards_degenerate_note_agrees_with_its_number_of_seeds(runs, of, said):
    # was: "(degenerate in 1/1 seeds)"
    from encoderlab.model.card import _evaluation

    summary = _summary("0123456789abcdef0123")
    summary["tasks"]["tweets"]["degenerate"] = {"runs": runs, "of": of, "why": "predicts class 'pos'"}
    (row,) = [line for line in _evaluation(summary) if line.startswith("| tweets")]
    assert row.endswith(f"(n=2) ({said} |")


def test_a_checkpoint_card_tags_and_marks_only_the_phases_it_trained(tmp_path, capsys):
    """A checkpoint taken in the CLM phase of a CLM-then-MLM run was tagged `mlm` and its card listed the
    MLM phase as training it had: the card claimed an objective the model never trained on."""
    run = tmp_path / "run"
    argv = [
        "pretrain",
        "--recipe",
        "smoke-clm-mlm",
        "--set",
        "progress=false",
        "--out",
        run,
        "--until-step",
        "5",
    ]
    assert _cli(argv, capsys)[0] == 0
    assert _cli(["export", run / "checkpoints" / "step_0000005", "--out", tmp_path / "hf"], capsys)[0] == 0
    card = ModelCard.load(tmp_path / "hf" / "README.md")
    assert card.data.tags == ["encoderlab", "clm"]
    rows = [line for line in card.text.splitlines() if line.startswith("| ") and "steps" in line]
    assert ["not reached" in row for row in rows] == [False, True]
    assert "A checkpoint at step 5: the phases marked *not reached*" in card.text
