"""`encoderlab analyze transplant` end to end on tiny model folders (`analysis/transplant_command.py`): one
transplant or a sweep written, scored with each model's own tokenizer, and bad input one line, a flag the
chosen mode would ignore before any model source or `--out` is looked at."""

from __future__ import annotations

import json
import random

import pytest
from analysis_helpers import WORDS, make_model, make_tokenizer, one_line_error

from encoderlab.cli import main
from encoderlab.model.io import is_model_folder, save_model_folder


@pytest.mark.parametrize(
    "flags,message",
    [
        (
            ["--layers", "0", "--max-length", "128"],
            "--max-length 128 sets the probe of --probe-task, but --layers makes one transplant and runs no "
            "probe, so would ignore it; drop it",
        ),
        (
            ["--sweep", "parts", "--max-examples", "10", "--attention-mode", "causal"],
            "--max-examples 10, --attention-mode causal set the probe of --probe-task, but --sweep parts runs no "
            "probe without --probe-task and would ignore them; drop them, or add --probe-task TASK",
        ),
    ],
    ids=["one-transplant", "sweep"],
)
def test_the_probes_flags_without_a_probe_task_are_refused_before_any_path(tmp_path, capsys, flags, message):
    # were ignored without a word: the transplant was saved as if they had not been given
    out = tmp_path / "t"
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "transplant", str(tmp_path / "a"), str(tmp_path / "b"), *flags, "--out", str(out)])
    assert exc.value.code == 2 and capsys.readouterr().err.strip() == f"encoderlab: error: {message}"
    assert not out.exists()


def test_the_probes_flags_are_taken_with_a_probe_task(tmp_path, capsys):
    """With --probe-task they are the probe's: the command goes on to the next check (model A's source)."""
    flags = [
        "--sweep",
        "parts",
        "--probe-task",
        "x.jsonl",
        "--max-length",
        "64",
        "--attention-mode",
        "causal",
    ]
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "analyze",
                "transplant",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                *flags,
                "--out",
                str(tmp_path / "t"),
            ]
        )
    assert exc.value.code == 2 and "does not exist" in capsys.readouterr().err


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
    one_line_error(
        capsys,
        [*base, folders["b"], "--layers", "0-5", "--out", str(tmp_path / "x")],
        "layer 3 is out of range",
    )
    one_line_error(
        capsys,
        [*base, folders["wide"], "--layers", "0", "--out", str(tmp_path / "x")],
        "different architectures (hidden_size 32 vs 64)",
    )
    one_line_error(capsys, [*base, folders["b"], "--out", str(tmp_path / "x")], "exactly one of --layers")
    one_line_error(
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


def test_embeddings_or_head_between_two_tokenizers_are_refused(folders, tmp_path, capsys):
    """A's embeddings under B's tokenizer of another vocabulary (same size, so the architecture check
    passed): every row stood for another token, and the transplant was saved as if meaningful."""
    tok_a = make_tokenizer([f"x{i}" for i in range(len(WORDS))])
    a = save_model_folder(make_model(0), tmp_path / "a", tokenizer=tok_a)
    for flags in (["--embeddings"], ["--embeddings", "--head"]):
        argv = ["analyze", "transplant", str(a), folders["b"], "--layers", "0", *flags]
        one_line_error(
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
    one_line_error(capsys, argv, "give exactly one of --layers (one transplant) or --sweep (several)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and not (run / "final").exists()


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


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_blocks_alone_move_between_vocabularies_of_other_sizes(folders, tmp_path, capsys):
    """docs/analysis.md: blocks alone between models of different tokenizers are moved, with a note. Two
    tokenizers of other sizes (the usual case) were refused as "different architectures (vocab_size 58 vs
    68)", after the note that said they were moved: two lines, and a refusal of what blocks never read."""
    from safetensors.torch import load_file

    words = [f"x{i}" for i in range(len(WORDS) + 10)]
    tok_a = make_tokenizer(words)
    big = make_model(0, vocab_size=len(tok_a))
    a = save_model_folder(big, tmp_path / "a", tokenizer=tok_a)
    main(["analyze", "transplant", str(a), folders["b"], "--layers", "0", "--out", str(tmp_path / "t")])
    notes = capsys.readouterr().err.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith("encoderlab: note: A and B have different tokenizers")
    got = load_file(tmp_path / "t" / "model.safetensors")
    b = load_file(f"{folders['b']}/model.safetensors")
    donor = load_file(tmp_path / "a" / "model.safetensors")
    assert all(got[k].equal(donor[k]) for k in got if k.startswith("layers.0."))
    assert got["embed_tokens.weight"].equal(b["embed_tokens.weight"])  # B's vocabulary, B's rows
    main(["analyze", "transplant", str(a), folders["b"], "--sweep", "parts", "--out", str(tmp_path / "s")])
    assert is_model_folder(tmp_path / "s" / "all-mlp")
    capsys.readouterr()
    # the tokenizers' line, which says to move blocks alone: was "different architectures (vocab_size ...)"
    argv = ["analyze", "transplant", str(a), folders["b"], "--layers", "0", "--embeddings", "--head"]
    one_line_error(
        capsys,
        [*argv, "--out", str(tmp_path / "e")],
        "--embeddings and --head would copy rows of A's vocabulary into B, but A and B have different tokenizers",
    )
    # another depth is one line, with no note before it that the blocks are moved
    deep = save_model_folder(
        make_model(0, vocab_size=len(tok_a), n_layers=4), tmp_path / "d", tokenizer=tok_a
    )
    argv = ["analyze", "transplant", str(deep), folders["b"], "--layers", "0", "--out", str(tmp_path / "x")]
    one_line_error(capsys, argv, "different architectures (n_layers 4 vs 3)")
    assert not (tmp_path / "e").exists() and not (tmp_path / "x").exists()


def test_a_scored_sweep_says_how_many_test_examples_its_scores_rest_on(folders, tmp_path, capsys):
    """The scores and shares of the gap were printed to the hundredth ("+200% of the gap") with nothing
    saying they came from one split of a few test texts, where one text moves a score by 100 / n points:
    on 300 tweets, A and B were two of 60 test texts apart."""
    from encoderlab.analysis.probe import load_task, split_rows

    task = folders["root"] / "seq.jsonl"
    argv = [
        "analyze",
        "transplant",
        folders["a"],
        folders["b"],
        "--sweep",
        "parts",
        "--probe-task",
        str(task),
    ]
    main([*argv, "--out", str(tmp_path / "s")])
    n = len(split_rows(len(load_task(str(task)).inputs), 0)[2])  # the probe's test split, seed 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == (
        f"scores: test accuracy (%) of a ridge probe on the last layer, on one seeded split of {n} test texts "
        f"of seq: one of them is {100 / n:.2f} points, and no interval is given (docs/analysis.md)"
    )
    rows = json.loads((tmp_path / "s" / "transplant_sweep.json").read_text())
    assert [r["n_test"] for r in rows] == [n] * 4
    # each score is a whole number of test texts
    assert all(abs(r["accuracy"] * n / 100 - round(r["accuracy"] * n / 100)) < 1e-9 for r in rows)
