"""An output inside a prepared-data, tokenizer or model folder encoderlab wrote is refused, by every
command, in one line naming the folder's kind (`outdir.check_outside_artefacts`): a file written there
changes what the folder's freshness check hashes, or what loading the model reads."""

from __future__ import annotations

import pytest

from encoderlab.cli import main
from encoderlab.data.target import KIND as PREPARE_KIND
from encoderlab.data.tokenizer_training import KIND as TOKENIZER_KIND
from encoderlab.errors import UserError
from encoderlab.model.export import KIND as EXPORT_KIND
from encoderlab.outdir import ARTEFACT_KINDS, check_output, check_output_file, create_output


def test_the_artefact_kinds_are_those_the_commands_mark_their_folders_with():
    assert set(ARTEFACT_KINDS) == {PREPARE_KIND, TOKENIZER_KIND, EXPORT_KIND}


@pytest.mark.parametrize(
    ("kind", "argv"),
    [
        ("export", ["advise", "{t}/t.txt", "--target-flops", "1e18", "--out", "{a}/x"]),
        (
            "data prepare",
            ["data", "tokenizer", "--source", "{t}/t.txt", "--out", "{a}/x", "--vocab-size", "300"],
        ),
        ("data tokenizer", ["bench", "train", "--size", "nano", "--steps", "1", "--out", "{a}/x/b.json"]),
    ],
    ids=["advise-in-model", "tokenizer-in-prepared", "bench-file-in-tokenizer"],
)
def test_an_out_inside_an_encoderlab_artefact_is_refused_and_writes_nothing(tmp_path, capsys, kind, argv):
    (tmp_path / "t.txt").write_text("hello world\n")
    artefact = create_output(tmp_path / "artefact", kind)
    with pytest.raises(SystemExit) as exit_:
        main([a.format(t=tmp_path, a=artefact) for a in argv])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("encoderlab: error: --out ") and err.count("\n") == 1, err
    assert f"lies inside {artefact}, a {ARTEFACT_KINDS[kind]} encoderlab wrote (`{kind}`)" in err
    assert err.rstrip().endswith("choose another --out outside it")
    assert [p.name for p in artefact.iterdir()] == [".encoderlab.json"]  # was: x/ written into it


@pytest.mark.parametrize("out_kind", ["pretrain", "analyze", "transplant", "data prepare", "bench data"])
def test_every_output_kind_is_refused_inside_one_at_any_depth(tmp_path, out_kind):
    artefact = create_output(tmp_path / "data", "data prepare")
    with pytest.raises(UserError, match="^--work .* lies inside .*, a prepared-data folder"):
        check_output(artefact / "a" / "b", out_kind, flag="--work")
    with pytest.raises(UserError, match="a prepared-data folder"):
        check_output_file(artefact / "r.json", lambda p: True, what="a result")


def test_the_artefact_itself_and_a_folder_beside_it_are_not_refused_by_this(tmp_path):
    artefact = create_output(tmp_path / "data", "data prepare")
    check_output(artefact, "data prepare")  # a rerun's --out: its own kind check
    check_output(tmp_path / "beside", "analyze")
    nested = create_output(tmp_path / "study" / "nodes" / "n", "analyze")  # kinds that hold other outputs
    check_output(nested / "x", "analyze")
