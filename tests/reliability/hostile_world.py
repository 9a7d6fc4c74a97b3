"""The scratch world of the hostile-input catalogue (`test_hostile_inputs.py`): configs, model folders
good and broken, Hugging Face folders, a finished run, and the foreign folders and files that output
commands must leave alone. Built once per module; every case reads it and none may change it."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import torch
import yaml
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts

from encoderlab.cli import main
from encoderlab.model.io import save_model_folder

# A two-step CLM run on synthetic data: the smallest real pretraining run. It scores 2 held-out rows:
# at the default 64, scoring the final model was most of the run's work.
TINY_RUN = """\
phases:
  - objective: {type: clm}
    steps: 2
layout: {seq_len: 16, micro_batch_size: 2}
data: {synthetic_vocab: 64}
checkpoint: {every: 1, keep_last: 5}
validation: {rows: 2}
device: cpu
progress: false
peak_tflops: 1.0
"""


SPLITS = ("train", "validation")


def build_world(root: Path) -> Path:
    """Everything the cases of both rounds read, under `root`."""
    _configs_and_corpora(root)
    tok = make_tokenizer(vocabulary_texts())
    save_model_folder(tiny_model(len(tok)), root / "model", tok)
    shutil.copytree(root / "model", root / "corrupt")
    (root / "corrupt" / "model.safetensors").write_bytes(b"\x00garbage" * 16)
    save_model_folder(tiny_model(64), root / "small_vocab", tok)  # 64 rows, a bigger tokenizer
    _hf_folders(root, tok)
    code = None
    try:
        main(["pretrain", "--config", str(root / "tiny.yaml"), "--out", str(root / "run")])
    except SystemExit as exc:
        code = exc.code
    assert code is None and (root / "run" / "final").is_dir()
    _round2(root)
    (root / "study" / "nodes").mkdir(parents=True)  # a study folder: what makes it one is its study.json
    (root / "study" / "study.json").write_text("{}")
    return root


# A "billion laughs" file: 9 aliases per level, 9 levels, 1 KB of text and 9**9 values written out.
LAUGHS = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


def _configs_and_corpora(root: Path) -> None:
    (root / "tiny.yaml").write_text(TINY_RUN)
    (root / "malformed.yaml").write_text("layout: [1, 2\n  seq_len: : :\n")
    (root / "twice.yaml").write_text("seed: 1\nseed: 2\n")  # PyYAML would keep the last, silently
    (root / "empty.yaml").write_text("# nothing set yet\n")
    (root / "laughs.yaml").write_text(LAUGHS)
    (root / "self_alias.yaml").write_text("out: &a [*a]\n")
    (root / "deep.yaml").write_text("out: " + "[" * 20000 + "]" * 20000 + "\n")
    (root / "list.yaml").write_text("- seed: 1\n- out: run\n")
    (root / "wrong_type.yaml").write_text(TINY_RUN + "seed: lots\n")
    (root / "unknown_field.yaml").write_text(TINY_RUN + "layot: {seq_len: 3}\n")
    (root / "type_field.yaml").write_text(TINY_RUN + "type: run\n")
    (root / "latin1.yaml").write_bytes("out: caf\xe9\n".encode("latin-1"))
    (root / "a_folder.yaml").mkdir()
    (root / "a_file").write_text("not a folder")
    (root / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (root / "empty.txt").write_text("")
    (root / "pile.jsonl.lz4").write_bytes(b"\x04\x22\x4d\x18")  # lz4's magic number
    packed = gzip.compress("".join(f'{{"text": "doc {i}"}}\n' for i in range(2000)).encode())
    (root / "cut.jsonl.gz").write_bytes(packed[: len(packed) // 2])  # a download cut short
    os.symlink("loop.txt", root / "loop.txt")  # a symlink pointing at itself


def _hf_folders(root: Path, tok) -> None:
    from transformers import BertConfig, BertForMaskedLM

    bert = BertForMaskedLM(
        BertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
        )
    )
    bert.save_pretrained(root / "hf_pickle")
    (root / "hf_pickle" / "model.safetensors").unlink()
    torch.save(bert.state_dict(), root / "hf_pickle" / "pytorch_model.bin")
    bert.save_pretrained(root / "hf_remote")
    _edit_json(root / "hf_remote" / "config.json", auto_map={"AutoModel": "modeling_evil.EvilModel"})
    # Sharded checkpoints whose index points outside the folder, or is not JSON.
    bert.save_pretrained(root / "sharded", max_shard_size="20KB")
    index = json.loads((root / "sharded" / "model.safetensors.index.json").read_text())
    first = sorted(set(index["weight_map"].values()))[0]
    shutil.copy(root / "sharded" / first, root / "outside.safetensors")
    for name, target in (
        ("shard_escape", "../outside.safetensors"),
        ("shard_absolute", str(root / "outside.safetensors")),
    ):
        shutil.copytree(root / "sharded", root / name)
        moved = {k: (target if v == first else v) for k, v in index["weight_map"].items()}
        _edit_json(root / name / "model.safetensors.index.json", weight_map=moved)
    shutil.copytree(root / "sharded", root / "shard_badindex")
    (root / "shard_badindex" / "model.safetensors.index.json").write_text('{"weight_map": ')
    # config.json sizes that cannot build the model, or do not fit the weights.
    for name, hidden in (("hf_hidden33", 33), ("hf_hidden0", 0)):
        bert.save_pretrained(root / name)
        _edit_json(root / name / "config.json", hidden_size=hidden)
    shutil.copytree(root / "model", root / "wrong_hidden")
    meta = json.loads((root / "wrong_hidden" / "config.json").read_text())
    meta["model"]["hidden_size"] = meta["model"]["hidden_size"] // 2
    (root / "wrong_hidden" / "config.json").write_text(json.dumps(meta))


def _round2(root: Path) -> None:
    """Issue 20's cases: folders and files that are not encoderlab's, and broken inputs."""
    (root / "foreign").mkdir()
    (root / "foreign" / "notes.txt").write_text("mine, not encoderlab's")
    (root / "sibling.tmp").mkdir()  # someone's folder where a write of {w}/sibling would start
    (root / "sibling.tmp" / "notes.txt").write_text("mine, not a leftover")
    (root / "foreign_eval").mkdir()  # someone else's results.jsonl, with an unterminated last line
    (root / "foreign_eval" / "results.jsonl").write_bytes(b'{"x": 1}\n{"unterminated": ')
    (root / "study_demo").mkdir()  # a study folder of another scale
    (root / "study_demo" / "study.json").write_text(json.dumps({"name": "paper1-pfs", "scale": "demo"}))
    (root / "study_damaged").mkdir()  # a study.json that is not a study's record (it was rewritten)
    (root / "study_damaged" / "study.json").write_text('{"name": "paper1-pfs", "sca')
    (root / "corpus").mkdir()
    (root / "corpus" / "a.txt").write_text(" ".join(vocabulary_texts()[:2]) + "\n")
    (root / "bodies.jsonl").write_text(json.dumps({"id": "1", "body": "a text under another field"}) + "\n")
    (root / "texts.txt").write_text("".join(f"text {i} about the red code\n" for i in range(60)))
    (root / "one_class.jsonl").write_text(
        "".join(
            json.dumps({"id": str(i), "text": f"the red code {i}", "meta": {"label": "pos"}}) + "\n"
            for i in range(30)
        )
    )
    (root / "curves.yaml").write_text("sources:\n  - {results: foreign_eval, model: m}\n")
    glue = root / "mirror_empty" / "nyu-mll" / "glue"  # a hub mirror whose split files are empty
    (glue / "sst2").mkdir(parents=True)
    card = {
        "configs": [
            {"config_name": "sst2", "data_files": [{"split": s, "path": f"sst2/{s}-*"} for s in SPLITS]}
        ]
    }
    (glue / "README.md").write_text("---\n" + yaml.safe_dump(card, sort_keys=False) + "---\n")
    for split in SPLITS:
        (glue / "sst2" / f"{split}-00000-of-00001.jsonl").write_text("")
    shutil.copytree(root / "run", root / "truncated_run")  # a crash or a full disk cut these files
    for f in ("final/model.safetensors", "checkpoints/step_0000001/model/model.safetensors"):
        path = root / "truncated_run" / f
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    shutil.copytree(root / "run", root / "damaged_config_run")  # its final model's config.json cut short
    config = root / "damaged_config_run" / "final" / "config.json"
    config.write_bytes(config.read_bytes()[:40])


def _edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))
