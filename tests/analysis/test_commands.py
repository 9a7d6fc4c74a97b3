"""`encoderlab analyze ...` end to end on tiny model folders: outputs written, bad input is one line."""

from __future__ import annotations

import json

import pytest
from analysis_helpers import eval_records, make_model, make_texts, make_tokenizer, one_line_error

from encoderlab.cli import main
from encoderlab.model.io import save_model_folder


def test_cka_command_writes_report_figures_and_tables(folders, tmp_path, capsys):
    root = folders["root"]
    main(
        [
            "analyze",
            "cka",
            folders["a"],
            folders["b"],
            "--baseline",
            folders["b2"],
            "--texts",
            str(root / "texts.txt"),
            "--n",
            "50",
            "--out",
            str(tmp_path),
        ]
    )
    report = json.loads((tmp_path / "cka_report.json").read_text())
    assert [r["layer"] for r in report["layers"]] == [0, 1, 2] and report["sampling_seeds"] == [42, 43, 44]
    assert all(r["ratio_ci_low"] < r["ratio"] < r["ratio_ci_high"] for r in report["layers"])
    assert report["low_layers"]["low_layers"] == [0] and report["low_layers"]["holds"] in (True, False)
    for stem in ("cka", "cka_ratio"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 5000
        assert len(json.loads((tmp_path / f"{stem}.json").read_text())) == 3
    printed = capsys.readouterr().out
    assert "mean divergence" in printed and report["low_layers"]["sentence"] in printed


def test_cka_command_refuses_too_few_texts_and_different_depths(folders, tmp_path, capsys):
    root = folders["root"]
    one_line_error(
        capsys,
        [
            "analyze",
            "cka",
            folders["a"],
            folders["b"],
            "--texts",
            str(root / "texts.txt"),
            "--n",
            "20",
            "--out",
            str(tmp_path),
        ],
        "too few",
    )
    deep = str(save_model_folder(make_model(0, n_layers=4), tmp_path / "deep", tokenizer=make_tokenizer()))
    one_line_error(
        capsys,
        [
            "analyze",
            "cka",
            folders["a"],
            deep,
            "--texts",
            str(root / "texts.txt"),
            "--n",
            "50",
            "--out",
            str(tmp_path / "o"),
        ],
        "different depths",
    )


@pytest.mark.parametrize("repeat", [False, True], ids=["listed", "repeated"])
def test_probe_command_plots_every_layer_of_every_model(folders, tmp_path, repeat):
    """`--tasks a --tasks b` probes both, as `--tasks a b` does (it was refused as given twice)."""
    root = folders["root"]
    tasks = [str(root / "seq.jsonl"), *(["--tasks"] if repeat else []), str(root / "tok.jsonl")]
    main(["analyze", "probe", folders["a"], folders["b"], "--tasks", *tasks, "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "probe.json").read_text())
    assert len(rows) == 2 * 2 * 3  # models x tasks x layers
    assert {r["kind"] for r in rows} == {"sequence", "token"} and (tmp_path / "probe.png").is_file()


def test_curves_command(folders, tmp_path, capsys):
    lines = eval_records(
        "tweets", {lr: [(50 + s, 40 + s + 1e5 * lr) for s in range(3)] for lr in (1e-5, 1e-4)}
    )
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "results.jsonl").write_text("\n".join(json.dumps(r) for r in lines))
    (tmp_path / "c.yaml").write_text("sources:\n  - {results: e, model: M, step: 100}\n")
    main(["analyze", "curves", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "fig")])
    assert (tmp_path / "fig" / "data_efficiency.png").is_file() and (
        tmp_path / "fig" / "lr_sensitivity.csv"
    ).is_file()
    assert not (tmp_path / "fig" / "mask_ratio.png").exists()
    one_line_error(
        capsys,
        ["analyze", "curves", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "fig2")],
        "does not exist",
    )


def _strict_json(path):
    """The JSON at `path`, refusing `NaN` and `Infinity` (Python writes them by default; JSON has neither)."""

    def refuse(constant):
        raise ValueError(f"{path.name} holds {constant}, which is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_cka_outputs_are_strict_json_when_the_seed_noise_divergence_is_zero(tmp_path, tokenizer):
    """A twin with B's very weights makes d(B', B) = 0 and every ratio infinite (the command refuses such a
    twin; the Python API and a study's constant layer do not): the per-seed lists and the low-layer summary
    held `Infinity` and `NaN`, which strict readers (jq, JavaScript) refuse."""
    from encoderlab.analysis.cka import compare
    from encoderlab.analysis.commands import _write_cka

    b = (make_model(1), tokenizer)
    report = compare((make_model(0), tokenizer), b, make_texts(60), baseline=b, n=50)
    _write_cka(report, tmp_path, ratio=True)
    data = _strict_json(tmp_path / "cka_report.json")
    assert all(r["baseline_divergence"] == 0 and r["ratio_per_seed"] == [None] * 3 for r in data["layers"])
    assert data["low_layers"]["low_ratio"] is None and data["low_layers"]["holds"] is None
    assert "a seed-noise divergence is 0" in data["low_layers"]["sentence"]
    for stem in ("cka", "cka_ratio"):
        rows = _strict_json(tmp_path / f"{stem}.json")
        assert len(rows) == 3 and all(r["ratio"] is None for r in rows)


def test_cka_refuses_a_twin_with_the_weights_of_b(folders, tmp_path, capsys):
    """A copy of B as its own seed twin ran and reported an infinite ratio in every layer."""
    import shutil

    twin = shutil.copytree(folders["b"], tmp_path / "twin")
    argv = ["analyze", "cka", folders["a"], folders["b"], "--baseline", str(twin), "--n", "50"]
    argv += ["--texts", str(folders["root"] / "texts.txt"), "--out", str(tmp_path / "o")]
    one_line_error(capsys, argv, f"--baseline {twin} has the very weights of model B")
    assert not (tmp_path / "o").exists()


def test_cka_refuses_a_twin_with_the_weights_of_a(folders, tmp_path, capsys):
    """A as B's seed twin ran: the seed noise was A against B itself, so every ratio was 1.00 [1.00, 1.00]
    and the sentence said "low layers not above seed noise"."""
    argv = ["analyze", "cka", folders["a"], folders["b"], "--baseline", folders["a"], "--n", "50"]
    argv += ["--texts", str(folders["root"] / "texts.txt"), "--out", str(tmp_path / "o")]
    one_line_error(capsys, argv, f"--baseline {folders['a']} has the very weights of model A")
    assert not (tmp_path / "o").exists()


def test_cka_refuses_a_twin_of_another_architecture_than_b(folders, tmp_path, capsys):
    """A twin twice as wide as B ran and divided A's divergence by one that mixes width with seed noise."""
    argv = ["analyze", "cka", folders["a"], folders["b"], "--baseline", folders["wide"], "--n", "50"]
    argv += ["--texts", str(folders["root"] / "texts.txt"), "--out", str(tmp_path / "o")]
    one_line_error(
        capsys, argv, f"--baseline {folders['wide']} is not a seed twin of model B ({folders['b']}): their "
        "architectures differ (hidden_size 64 vs 32)",
    )  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_cka_refuses_a_twin_with_another_tokenizer_than_b(folders, tmp_path, capsys, monkeypatch):
    """A twin of B's architecture and vocabulary size but another tokenizer ran: its divergence from B, which
    every ratio divides by, mixed the two tokenizations with seed noise."""
    from tests.reliability.treestate import assert_unchanged, world_state

    from encoderlab.data.tokenizer import tokenizer_hash

    other = make_tokenizer([f"v{i}" for i in range(60)])  # 65 ids, as B's
    twin = save_model_folder(make_model(2), tmp_path / "twin", tokenizer=other)
    argv = ["analyze", "cka", folders["a"], folders["b"], "--baseline", str(twin), "--n", "50"]
    argv += ["--texts", str(folders["root"] / "texts.txt"), "--out", str(tmp_path / "o")]
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path, folders["root"])
    hashes = [tokenizer_hash(t)[:12] for t in (other, make_tokenizer())]
    one_line_error(
        capsys, argv, f"--baseline {twin} is not a seed twin of model B ({folders['b']}): their tokenizers "
        f"differ (sha256 {hashes[0]} and {hashes[1]}), so its divergence from B would mix the tokenization",
    )  # fmt: skip
    assert_unchanged(before)


def test_a_max_length_the_special_tokens_fill_is_refused(folders, tmp_path, capsys):
    """`--max-length 2` with a [CLS] ... [SEP] tokenizer read no text: a token task had no word left (a
    ValueError traceback after the feature cache was written), a sequence task and CKA constant features."""
    from tests.reliability.errors_doc import assert_printed_as_documented

    root = folders["root"]
    for argv in (
        ["probe", folders["a"], "--tasks", str(root / "tok.jsonl"), "--max-length", "2", "--out", str(tmp_path / "p")],
        ["cka", folders["a"], folders["b"], "--texts", str(root / "texts.txt"), "--n", "50", "--max-length", "1",
         "--out", str(tmp_path / "c")],
    ):  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            main(["analyze", *argv])
        err = capsys.readouterr().err
        assert (
            exc.value.code == 2 and "leaves no token of text: the tokenizer adds 2 special tokens" in err
        ), err
        if argv[0] == "probe":
            assert_printed_as_documented("analysis-max-length-only-special-tokens", err, tmp_path)
    assert not any(tmp_path.iterdir())


# Figures a command writes only sometimes (cka_ratio without --baseline, a curve no source fills, a sweep's
# bar chart without --probe-task) stayed from the previous run into the same --out, beside numbers they
# disagree with.


def test_a_reused_cka_out_keeps_no_ratio_figure_of_another_pair(folders, tmp_path):
    root, out = folders["root"], tmp_path / "cka"
    cka = ["analyze", "cka", folders["a"], folders["b"], "--texts", str(root / "texts.txt"), "--n", "50"]
    main([*cka, "--baseline", folders["b2"], "--out", str(out)])
    assert (out / "cka_ratio.png").is_file()
    main([*cka, "--out", str(out)])
    assert not list(out.glob("cka_ratio*")) and (out / "cka.png").is_file()


def test_a_reused_curves_out_keeps_no_curve_no_source_fills_now(tmp_path):
    lines = eval_records("tweets", {1e-4: [(50 + s, 40 + s) for s in range(3)]})
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "results.jsonl").write_text("\n".join(json.dumps(r) for r in lines))
    spec, fig = tmp_path / "c.yaml", tmp_path / "fig"
    spec.write_text("sources:\n  - {results: e, model: M, step: 100, mask_ratio: 0.4}\n")
    main(["analyze", "curves", str(spec), "--out", str(fig)])
    assert (fig / "mask_ratio.png").is_file()
    spec.write_text("sources:\n  - {results: e, model: M, step: 100}\n")
    main(["analyze", "curves", str(spec), "--out", str(fig)])
    assert not list(fig.glob("mask_ratio*")) and (fig / "data_efficiency.png").is_file()


@pytest.mark.parametrize(
    "command",
    [
        "cka {a} {root}/nope --texts {root}/texts.txt --n 500",  # was: only 60 texts for 500
        "probe {root}/nope --tasks {root}/texts.txt",  # was: texts.txt is not a probing task
        "transplant {root}/nope {a} --sweep groups --probe-task {root}/missing.jsonl",  # was: the task
    ],
    ids=["cka", "probe", "transplant"],
)
def test_a_missing_model_is_named_before_the_texts_or_tasks_are_read(folders, tmp_path, capsys, command):
    """A missing model, which nothing can fix but the model, was named only after the texts or tasks
    had been read and found wanting."""
    argv = [
        "analyze",
        *command.format(a=folders["a"], root=folders["root"]).split(),
        "--out",
        str(tmp_path / "o"),
    ]
    one_line_error(capsys, argv, f"model source '{folders['root']}/nope' does not exist")
    assert list(tmp_path.iterdir()) == []


def test_curves_names_a_missing_input_before_reading_any_or_checking_out(tmp_path, capsys):
    """The curves file was read after --out was checked, and each results file only after the ones
    listed before it had been read (an empty first one was named, not the missing second)."""
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "results.jsonl").write_text("")
    (tmp_path / "c.yaml").write_text("sources:\n  - {results: e, model: M}\n  - {results: gone, model: N}\n")
    one_line_error(
        capsys, ["analyze", "curves", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "f")], "gone"
    )
    (tmp_path / "a_file").write_text("mine")
    missing = ["analyze", "curves", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "a_file")]
    one_line_error(capsys, missing, "missing.yaml does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "c.yaml", "e"]


@pytest.mark.parametrize(
    "models,tasks,message",
    [
        ("{a} {a}", "{root}/seq.jsonl", "model {a} given twice; give each once"),
        (
            "{a} {root}/a/",
            "{root}/seq.jsonl",
            "model {root}/a/ given twice (as {a} and {root}/a/); give each once",
        ),
        (
            "{a}",
            "{root}/seq.jsonl {root}/tok.jsonl {root}/seq.jsonl",
            "task {root}/seq.jsonl given twice; give each once",
        ),
    ],
    ids=["model", "model-two-spellings", "task"],
)
def test_probe_refuses_a_model_or_task_given_twice(folders, tmp_path, capsys, models, tasks, message):
    """Each was probed twice, and plotted under one label twice."""
    names = {"a": folders["a"], "root": folders["root"]}
    argv = ["analyze", "probe", *models.format(**names).split(), "--tasks", *tasks.format(**names).split()]
    one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], message.format(**names))
    assert list(tmp_path.iterdir()) == []
