"""The hostile-input catalogue, model folders (rows in docs/errors.md): config.json values that
transformers or the encoder refuse, encoderlab model folders whose config.json lost what says what to
build, tokenizers that ship their own code or are damaged, and run folders stopped before their first
checkpoint. Each case goes through `encoderlab.cli.main([...])`
with a "y" waiting on stdin (transformers asked there whether to run a tokenizer's code, and ran it),
must exit 2 with one `encoderlab: error:` line and leave every file as it was. Each failed on the
code before (a traceback, the planted code ran, or a run was called no model folder at all)."""

from __future__ import annotations

import io
import json
import shutil
import sys

import pytest
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.reliability.test_hostile_inputs import assert_refused_unchanged

from encoderlab.eval.tasks.custom import load_task_files
from encoderlab.model.export import export_hf
from encoderlab.model.io import save_model_folder


def _edit(path, change) -> None:
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))


def _copy(root, source: str, name: str, change) -> None:
    shutil.copytree(root / source, root / name)
    _edit(root / name / "config.json", change)


def _plant_tokenizer_code(folder) -> None:
    """An auto_map to a Python file that, imported, writes `ran` next to it (snapshots notice it)."""
    _edit(folder / "tokenizer_config.json", lambda c: (c.pop("tokenizer_class", None), c.update(auto_map={"AutoTokenizer": [None, "evil_tok.EvilTokenizer"]})))  # fmt: skip
    (folder / "evil_tok.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('ran')\n"
        "from transformers import PreTrainedTokenizerFast\n\n\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n"
    )


@pytest.fixture(scope="module")
def mworld(tmp_path_factory):
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.model.hf_adapters import BertAdapter

    root = tmp_path_factory.mktemp("hostile-models")
    tok = make_tokenizer(vocabulary_texts())
    (root / "corpus.jsonl").write_text(json.dumps({"id": "0", "text": vocabulary_texts()[0]}) + "\n")
    save_model_folder(tiny_model(len(tok)), root / "model", tok)
    export_hf(tiny_model(len(tok)), tok, root / "hf")
    bert = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)  # fmt: skip
    save_model_folder(BertAdapter(BertForMaskedLM(bert).eval()), root / "adapter", tok)

    _copy(root, "hf", "hf_kv3", lambda c: c.update(num_key_value_heads=3))
    _copy(root, "hf", "hf_kv_string", lambda c: c.update(num_key_value_heads="2"))
    _copy(root, "hf", "hf_eps_string", lambda c: c.update(rms_norm_eps="1e-5"))
    _copy(root, "hf", "hf_theta_string", lambda c: c["rope_parameters"].update(rope_theta="fast"))
    shutil.copytree(root / "hf", root / "hf_deep")  # JSON nested deeper than Python's stack
    (root / "hf_deep" / "config.json").write_text("[" * 100_000)
    _copy(root, "model", "model_no_sizes", lambda c: c.pop("model"))
    _copy(root, "model", "model_kv0", lambda c: c["model"].update(n_kv_heads=0))
    _copy(root, "adapter", "adapter_no_hf_config", lambda c: c.pop("hf_config"))
    _copy(root, "adapter", "adapter_act_number", lambda c: c["hf_config"].update(hidden_act=3))
    _copy(
        root,
        "adapter",
        "adapter_st_outside",
        lambda c: c.update(sentence_transformers={"../evil.json": "{}"}),
    )
    tok.save_pretrained(root / "remote_tok")
    _plant_tokenizer_code(root / "remote_tok")
    shutil.copytree(root / "model", root / "model_remote_tok")
    _plant_tokenizer_code(root / "model_remote_tok")
    shutil.copytree(root / "model", root / "model_bad_tok")  # JSON, but no tokenizer's
    (root / "model_bad_tok" / "tokenizer.json").write_text('{"added_tokens": []}')
    _first_pooling_task(root, tok)
    _unfinished_runs(root)
    return root


def _unfinished_runs(root) -> None:
    """Run folders stopped before their first checkpoint: none at all, or only a partial one."""
    from tests.reliability.hostile_world import TINY_RUN

    from encoderlab.outdir import create_output

    for name in ("run_no_checkpoint", "run_partial_checkpoint"):
        create_output(root / name, "pretrain")
        (root / name / "config.yaml").write_text(TINY_RUN)
        (root / name / "metrics.jsonl").write_text("")
    (root / "run_partial_checkpoint" / "checkpoints" / "step_0000001.tmp" / "model").mkdir(parents=True)


def _first_pooling_task(root, tok) -> None:
    """A task file pooling the first token of `eos` inputs, and a model whose tokenizer has no BOS or CLS
    token to put there."""
    tok.bos_token = None
    save_model_folder(tiny_model(len(tok)), root / "model_no_bos", tok)
    for split in ("train", "test"):
        (root / f"{split}.csv").write_text(
            "text,label\n" + "".join(f"{split} {i},{'ab'[i % 2]}\n" for i in range(8))
        )
    task = {"name": "first", "family": "sc", "data": {"train": "train.csv", "test": "test.csv"}}
    task.update(inputs="eos", options={"pooling": "first"}, finetune={"max_steps": 1, "batch_size": 2})
    (root / "task_first_eos.yaml").write_text(json.dumps(task))  # JSON is YAML
    load_task_files([root / "task_first_eos.yaml"])  # `datasets` builds its cache now, not in the case


# (id, argv with {w}, pattern of the one line); what the old code did is in docs/errors.md
MODEL_CASES = [
    ("hf-kv-heads-not-dividing", "export {w}/hf_kv3 --out {w}/x", r"hf_kv3/config.json: num_attention_heads 4 is not a multiple of num_key_value_heads 3"),
    ("hf-size-not-an-integer", "export {w}/hf_kv_string --out {w}/x", r"hf_kv_string/config.json: num_key_value_heads must be a positive integer, got '2'"),
    ("hf-value-of-wrong-type", "export {w}/hf_eps_string --out {w}/x", r"hf_eps_string/config.json is not a valid eurobert config \(Validation error for field 'rms_norm_eps'\)"),
    ("hf-rope-theta-not-a-number", "export {w}/hf_theta_string --out {w}/x", r"is not a valid eurobert config \(could not convert string to float: 'fast'\)"),
    ("hf-config-nested-too-deep", "export {w}/hf_deep --out {w}/x", r"hf_deep/config.json is not valid JSON \(maximum recursion depth exceeded"),
    ("model-config-without-sizes", "export {w}/model_no_sizes --out {w}/x", r"model_no_sizes/config.json \(its 'model' is not a mapping of the encoder's sizes\); the file is corrupt"),
    ("model-config-zero-kv-heads", "export {w}/model_kv0 --out {w}/x", r"model_kv0/config.json: n_kv_heads must be positive, got 0"),
    ("adapter-config-without-hf-config", "export {w}/adapter_no_hf_config --out {w}/x", r"\(its 'hf_config' is not a bert config\); the file is corrupt"),
    ("adapter-config-value-of-wrong-type", "export {w}/adapter_act_number --out {w}/x", r"adapter_act_number/config.json \(Validation error for field 'hidden_act'\); the file is corrupt"),
    ("adapter-sentence-file-outside", "export {w}/adapter_st_outside --out {w}/x", r"adapter_st_outside/config.json \(its 'sentence_transformers' names '\.\./evil\.json', no file inside the folder\); the file is corrupt"),
    ("tokenizer-ships-code", "data prepare --source {w}/corpus.jsonl --tokenizer {w}/remote_tok --out {w}/o", r"tokenizer '.*remote_tok' ships its own code \(auto_map in .*\), which encoderlab never runs"),
    ("model-tokenizer-ships-code", "export {w}/model_remote_tok --out {w}/x", r"tokenizer '.*model_remote_tok' ships its own code \(auto_map in .*\), which encoderlab never runs"),
    ("eval-first-pooling-without-start-token", "eval {w}/model_no_bos --task-file {w}/task_first_eos.yaml --lrs 1e-4 --seeds 0 --out {w}/e", r"this task pools the first token \(pooling: first\) of texts fed without the tokenizer's special tokens \(inputs: eos\), and the tokenizer has neither a BOS nor a CLS token to put there; use pooling: mean, or inputs: tokenizer"),
    ("run-without-checkpoint", "export {w}/run_no_checkpoint --out {w}/x", r"run .*run_no_checkpoint has no final model yet, nor a complete checkpoint \(it stopped before its first\); continue it with `encoderlab pretrain --config .*run_no_checkpoint/config.yaml --out .*run_no_checkpoint --resume`, or pass another model"),
    ("run-with-a-partial-checkpoint", "eval {w}/run_partial_checkpoint --task-file {w}/task_first_eos.yaml --lrs 1e-4 --seeds 0 --out {w}/e", r"run .*run_partial_checkpoint has no final model yet, nor a complete checkpoint"),
    ("model-tokenizer-damaged", "export {w}/model_bad_tok --out {w}/x", r"cannot load tokenizer '.*model_bad_tok' \(Exception: Model missing\. .*\); its files are damaged"),
]  # fmt: skip


@pytest.mark.parametrize("case,argv,pattern", MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_hostile_model_folder_is_one_line(mworld, capsys, monkeypatch, case, argv, pattern):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 4))  # what transformers' code prompt read
    assert_refused_unchanged(mworld, case, argv, pattern, capsys, monkeypatch)
