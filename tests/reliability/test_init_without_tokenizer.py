"""A start model without tokenizer files, continued on prepared data (found by a new-user hunt, 2026-12-06).

`check_data_tokenizer` compares the data's tokenizer with the one the `init` model ships, and skipped the
check when the model ships none: a BERT folder saved with `model.save_pretrained` alone (30,522 rows) was
continued on data a byte-level BPE of 8,192 ids had tokenized, without a word, so every id meant another
word to the model, and the run saved the data's tokenizer beside the model as if it were the model's.
`eval` refuses such a folder ("has no tokenizer files"); pretraining from it is refused too, before the run
folder is made. Synthetic data (ids that mean no words) still trains a start model without a tokenizer.
"""

from __future__ import annotations

import json

import pytest
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.model.io import save_model_folder

CPT = "--recipe cpt-mlm --param seq_len=16 global_batch=2 micro_batch_size=2 steps=2 warmup=0 decay=1 checkpoint_every=1"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Data prepared with a tokenizer, and a model folder of as many rows that holds no tokenizer files."""
    from encoderlab.cli import main

    root = tmp_path_factory.mktemp("init_without_tokenizer")
    tok = make_tokenizer(vocabulary_texts())
    tok.save_pretrained(root / "tok")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in vocabulary_texts()))
    main(["data", "prepare", "--source", str(corpus), "--tokenizer", str(root / "tok"), "--out", str(root / "data"),
          "--decontaminate", "none", "--workers", "1"])  # fmt: skip
    save_model_folder(tiny_model(len(tok)), root / "bare")  # no tokenizer: the rows fit, the ids are unknown
    save_model_folder(tiny_model(len(tok)), root / "with_tok", tok)
    save_model_folder(tiny_model(512), root / "bare_512")  # the synthetic data's 512 ids
    return root


def test_a_start_model_without_a_tokenizer_on_prepared_data_is_refused_before_the_run_folder(
    world, tmp_path, capsys
):
    bare, data = world / "bare", world / "data"
    argv = [*CPT.split(), f"init={bare}", f"data={data}", "--set", "device=cpu", "--out", tmp_path / "o"]
    code, err = cli(["pretrain", *argv], capsys)
    assert_one_line(
        code,
        err,
        rf"start model {bare} has no tokenizer files, so nothing shows that {data} was tokenized with the "
        rf"tokenizer it was trained with; save that tokenizer into {bare} \(tokenizer.save_pretrained\) and "
        rf"prepare the data with --tokenizer {bare}$",
    )
    assert not (tmp_path / "o").exists()
    # the same model with its tokenizer trains on the same data
    argv = [
        *CPT.split(),
        f"init={world / 'with_tok'}",
        f"data={data}",
        "--set",
        "device=cpu",
        "progress=false",
    ]
    assert cli(["pretrain", *argv, "--out", tmp_path / "ok"], capsys)[0] == 0


def test_a_start_model_without_a_tokenizer_still_trains_on_synthetic_tokens(world, tmp_path, capsys):
    argv = [
        *CPT.split(),
        f"init={world / 'bare_512'}",
        "--set",
        "data.path=synthetic",
        "device=cpu",
        "progress=false",
    ]
    code, err = cli(["pretrain", *argv, "--out", tmp_path / "s"], capsys)
    assert code == 0, err
    assert (tmp_path / "s" / "final").is_dir()
