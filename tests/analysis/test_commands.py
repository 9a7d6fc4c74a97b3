"""`encoderlab analyze ...` end to end on tiny model folders: outputs written, bad input is one line."""

from __future__ import annotations

import json
import random

import pytest
from analysis_helpers import WORDS, eval_records, make_model, make_texts, make_tokenizer

from encoderlab.cli import main
from encoderlab.model.io import is_model_folder, save_model_folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory):

    root = tmp_path_factory.mktemp("models")
    tok = make_tokenizer()
    paths = {}
    for name, seed, overrides in (
        ("a", 0, {}),
        ("b", 1, {}),
        ("b2", 2, {}),
        ("wide", 3, {"hidden_size": 64}),
    ):
        paths[name] = str(save_model_folder(make_model(seed, **overrides), root / name, tokenizer=tok))
    (root / "texts.txt").write_text("\n".join(make_texts(60)) + "\n")
    rng = random.Random(0)
    topics = [WORDS[:30], WORDS[30:]]
    seq = [
        {"id": str(i), "text": " ".join(rng.choices(topics[i % 2], k=5)), "meta": {"label": str(i % 2)}}
        for i in range(40)
    ]
    (root / "seq.jsonl").write_text("\n".join(json.dumps(r) for r in seq))
    tok_recs = []
    for i in range(30):
        words = rng.choices(WORDS, k=5)
        tok_recs.append(
            {"id": str(i), "text": " ".join(words), "meta": {"tokens": words, "tags": [w[-1] for w in words]}}
        )
    (root / "tok.jsonl").write_text("\n".join(json.dumps(r) for r in tok_recs))
    paths["root"] = root
    return paths


def _one_line_error(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and message in err[0], err


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
    _one_line_error(
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
    _one_line_error(
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


def test_transplant_command_single_and_errors(folders, tmp_path, capsys):
    out = tmp_path / "t"
    main(
        [
            "analyze",
            "transplant",
            folders["a"],
            folders["b"],
            "--layers",
            "0-1",
            "--part",
            "mlp",
            "--out",
            str(out),
        ]
    )
    assert is_model_folder(out) and json.loads((out / "transplant.json").read_text())["spec"]["part"] == "mlp"
    base = ["analyze", "transplant", folders["a"]]
    _one_line_error(
        capsys,
        [*base, folders["b"], "--layers", "0-5", "--out", str(tmp_path / "x")],
        "layer 3 is out of range",
    )
    _one_line_error(
        capsys,
        [*base, folders["wide"], "--layers", "0", "--out", str(tmp_path / "x")],
        "different architectures (hidden_size 32 vs 64)",
    )
    _one_line_error(capsys, [*base, folders["b"], "--out", str(tmp_path / "x")], "exactly one of --layers")
    _one_line_error(
        capsys,
        [*base, folders["b"], "--sweep", "groups", "--groups", "9", "--out", str(tmp_path / "x")],
        "--groups 9 cannot split",
    )
    assert not (tmp_path / "x").exists()


def test_transplant_sweep_with_probe_scores(folders, tmp_path):
    root = folders["root"]
    main(
        [
            "analyze",
            "transplant",
            folders["a"],
            folders["b"],
            "--sweep",
            "parts",
            "--probe-task",
            str(root / "seq.jsonl"),
            "--out",
            str(tmp_path),
        ]
    )
    rows = json.loads((tmp_path / "transplant_sweep.json").read_text())
    assert [r["name"] for r in rows] == ["A", "B", "all-attention", "all-mlp"]
    assert all(0 <= r["accuracy"] <= 100 for r in rows) and (tmp_path / "transplant_sweep.png").is_file()
    assert is_model_folder(tmp_path / "all-mlp")


def test_transplant_sweep_scores_a_with_its_own_tokenizer(folders, tmp_path):
    """A was probed with B's tokenizer: with another vocabulary of the same size (same config, so the
    transplant is allowed) A's words were all unknown to it, A scored like B and no gap was reported."""
    from encoderlab.analysis.features import Encoding
    from encoderlab.analysis.probe import load_task, probe_model

    words = [f"x{i}" for i in range(len(WORDS))]
    tok_a = make_tokenizer(words)
    a = save_model_folder(make_model(0), tmp_path / "a", tokenizer=tok_a)
    rng = random.Random(0)
    # texts of 3-8 words: B, which knows none of them, reads each by its length alone (were all of 5 words,
    # one input to B, which a probe now refuses: B and every transplant scored the most frequent class)
    records = [
        {"id": str(i), "text": " ".join(rng.choices(words[:30] if i % 2 else words[30:], k=rng.randint(3, 8))),
         "meta": {"label": str(i % 2)}}
        for i in range(40)
    ]  # fmt: skip
    task = tmp_path / "x.jsonl"
    task.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = ["analyze", "transplant", str(a), folders["b"], "--sweep", "parts", "--probe-task", str(task)]
    main([*argv, "--out", str(tmp_path / "s")])
    rows = {r["name"]: r for r in json.loads((tmp_path / "s" / "transplant_sweep.json").read_text())}
    (direct,) = probe_model(make_model(0), tok_a, load_task(str(task)), Encoding(max_length=64), layers=[2])
    assert rows["A"]["accuracy"] == direct.accuracy


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
    _one_line_error(
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
    _one_line_error(capsys, argv, f"--baseline {twin} has the very weights of model B")
    assert not (tmp_path / "o").exists()


def test_cka_refuses_a_twin_with_the_weights_of_a(folders, tmp_path, capsys):
    """A as B's seed twin ran: the seed noise was A against B itself, so every ratio was 1.00 [1.00, 1.00]
    and the sentence said "low layers not above seed noise"."""
    argv = ["analyze", "cka", folders["a"], folders["b"], "--baseline", folders["a"], "--n", "50"]
    argv += ["--texts", str(folders["root"] / "texts.txt"), "--out", str(tmp_path / "o")]
    _one_line_error(capsys, argv, f"--baseline {folders['a']} has the very weights of model A")
    assert not (tmp_path / "o").exists()


def test_cka_refuses_a_twin_of_another_architecture_than_b(folders, tmp_path, capsys):
    """A twin twice as wide as B ran and divided A's divergence by one that mixes width with seed noise."""
    argv = ["analyze", "cka", folders["a"], folders["b"], "--baseline", folders["wide"], "--n", "50"]
    argv += ["--texts", str(folders["root"] / "texts.txt"), "--out", str(tmp_path / "o")]
    _one_line_error(
        capsys, argv, f"--baseline {folders['wide']} is not a seed twin of model B ({folders['b']}): their "
        "architectures differ (hidden_size 64 vs 32)",
    )  # fmt: skip
    assert not (tmp_path / "o").exists()


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_single_transplant_and_a_sweep_never_share_an_out(folders, tmp_path, capsys):
    """One transplant over a sweep's folder replaced it whole, deleting every transplant of the sweep; a
    sweep over one transplant's model folder wrote its folders and table into that model folder."""
    from tests.reliability.errors_doc import assert_printed_as_documented

    base = ["analyze", "transplant", folders["a"], folders["b"]]
    main([*base, "--sweep", "parts", "--out", str(tmp_path / "sweep")])
    main([*base, "--layers", "0", "--out", str(tmp_path / "one")])
    before = _snapshot(tmp_path)
    for case, argv, message in (
        (
            "transplant-over-a-sweep",
            ["--layers", "1", "--out", str(tmp_path / "sweep")],
            "holds a transplant sweep",
        ),
        (
            "sweep-over-a-transplant",
            ["--sweep", "parts", "--out", str(tmp_path / "one")],
            "holds one transplant",
        ),
    ):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            main([*base, *argv])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and message in err, err
        assert_printed_as_documented(case, err, tmp_path)
    assert _snapshot(tmp_path) == before


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


def test_embeddings_or_head_between_two_tokenizers_are_refused(folders, tmp_path, capsys):
    """A's embeddings under B's tokenizer of another vocabulary (same size, so the architecture check
    passed): every row stood for another token, and the transplant was saved as if meaningful."""
    tok_a = make_tokenizer([f"x{i}" for i in range(len(WORDS))])
    a = save_model_folder(make_model(0), tmp_path / "a", tokenizer=tok_a)
    for flags in (["--embeddings"], ["--embeddings", "--head"]):
        argv = ["analyze", "transplant", str(a), folders["b"], "--layers", "0", *flags]
        _one_line_error(
            capsys,
            [*argv, "--out", str(tmp_path / "t")],
            f"{' and '.join(flags)} would copy rows of A's vocabulary",
        )
        assert not (tmp_path / "t").exists()
    capsys.readouterr()
    main(["analyze", "transplant", str(a), folders["b"], "--layers", "0", "--out", str(tmp_path / "t")])
    assert (tmp_path / "t" / "transplant.json").is_file()  # blocks alone carry no vocabulary
    # but they are read under B's tokenizer: said in one note (was silent)
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("encoderlab: note:")]
    assert len(notes) == 1 and "A and B have different tokenizers" in notes[0] and "only blocks" in notes[0]
    main(["analyze", "transplant", folders["a"], folders["b"], "--layers", "0", "--out", str(tmp_path / "s")])
    assert "tokenizers" not in capsys.readouterr().err  # one tokenizer: no note


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


def test_a_reused_sweep_out_keeps_no_bar_chart_of_scores_it_no_longer_has(folders, tmp_path):
    out = tmp_path / "s"
    sweep = ["analyze", "transplant", folders["a"], folders["b"], "--sweep", "parts", "--out", str(out)]
    main([*sweep, "--probe-task", str(folders["root"] / "seq.jsonl")])
    assert (out / "transplant_sweep.png").is_file()
    main(sweep)
    assert not (out / "transplant_sweep.png").exists()
    assert "accuracy" not in json.loads((out / "transplant_sweep.json").read_text())[0]


def test_a_reused_sweep_out_keeps_no_transplant_of_an_earlier_sweep(folders, tmp_path):
    """`--sweep layers` then `--sweep parts` into one --out kept layer-0, layer-1, layer-2 beside the new
    transplants, though the table (and transplant_sweep.json) listed only all-attention and all-mlp."""
    out = tmp_path / "s"
    sweep = ["analyze", "transplant", folders["a"], folders["b"], "--out", str(out), "--sweep"]
    main([*sweep, "layers"])
    assert {p.name for p in out.iterdir() if p.is_dir()} == {"layer-0", "layer-1", "layer-2"}
    main([*sweep, "parts"])
    listed = {row["name"] for row in json.loads((out / "transplant_sweep.json").read_text())}
    assert {p.name for p in out.iterdir() if p.is_dir()} == listed == {"all-attention", "all-mlp"}


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
    _one_line_error(capsys, argv, f"model source '{folders['root']}/nope' does not exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", ["a missing model", "an --out in a run's final"])
def test_transplants_mode_is_refused_before_any_path_is_checked(folders, tmp_path, capsys, path):
    """Flags alone come first, as every analyze command checks its arguments before its paths: neither
    --layers nor --sweep was said only once a model was found, and after the run-part refusal of --out."""
    from encoderlab.outdir import create_output

    run = create_output(tmp_path / "run", "pretrain")
    model, out = {
        "a missing model": (str(tmp_path / "nope"), tmp_path / "o"),
        "an --out in a run's final": (folders["a"], run / "final" / "t"),
    }[path]
    argv = ["analyze", "transplant", model, folders["b"], "--out", str(out)]
    _one_line_error(capsys, argv, "give exactly one of --layers (one transplant) or --sweep (several)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and not (run / "final").exists()


def test_curves_names_a_missing_input_before_reading_any_or_checking_out(tmp_path, capsys):
    """The curves file was read after --out was checked, and each results file only after the ones
    listed before it had been read (an empty first one was named, not the missing second)."""
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "results.jsonl").write_text("")
    (tmp_path / "c.yaml").write_text("sources:\n  - {results: e, model: M}\n  - {results: gone, model: N}\n")
    _one_line_error(
        capsys, ["analyze", "curves", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "f")], "gone"
    )
    (tmp_path / "a_file").write_text("mine")
    missing = ["analyze", "curves", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "a_file")]
    _one_line_error(capsys, missing, "missing.yaml does not exist")
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
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], message.format(**names))
    assert list(tmp_path.iterdir()) == []


def test_a_scored_sweep_prints_each_transplants_share_of_the_gap_as_its_table_says(folders, tmp_path, capsys):
    """The share of the B -> A gap a transplant recovers (paper 2's last column) was in the table and the
    figure only: the printed lines gave the scores."""
    argv = ["analyze", "transplant", folders["a"], folders["b"], "--sweep", "layers"]
    main([*argv, "--probe-task", str(folders["root"] / "seq.jsonl"), "--out", str(tmp_path / "s")])
    printed = capsys.readouterr().out.splitlines()
    rows = json.loads((tmp_path / "s" / "transplant_sweep.json").read_text())
    assert rows[0]["accuracy"] != rows[1]["accuracy"]  # A and B differ: every transplant has a gap share
    for row in rows[2:]:
        (line,) = [line for line in printed if line.startswith(f"{row['name']} ")]
        assert line.endswith(f"{row['accuracy']:6.2f}  {row['gap_recovered']:+.0%} of the gap"), line
