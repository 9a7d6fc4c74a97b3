"""`load_tokenizer` reads a folder that names transformers' generic fast class with that class's own
`from_pretrained`, not `AutoTokenizer`'s (which reads a model config first and so imports torch): the
tokenizer is the same in every way the code reads one, its saved files byte for byte, and `data prepare`
no longer imports torch at all. Its three commands run in one fresh interpreter, each answering for itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.data.corpus_fixtures import (  # noqa: F401 (fixtures)
    corpus_records,
    tokenizer_dir,
    wordpiece_with_call_settings,
    write_jsonl,
)

from encoderlab.data.tokenizer import generic_fast_folder, load_tokenizer, spec_fields, tokenizer_hash

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["the river of the city 12.", "café 漢字 🙂 unknownword", ""]
PAIRS = ["school state", "club"]


def _synthetic(folder: Path) -> Path:
    from encoderlab.data.synthetic import synthetic_spec, synthetic_tokenizer

    synthetic_tokenizer(synthetic_spec(64)).save_pretrained(str(folder))
    return folder


def _bos_only_bpe(folder: Path) -> Path:
    """A byte-level BPE that adds a BOS only, as Llama 3's does, saved by transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator([r["text"] for r in corpus_records(40)], trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{specials[0]} $A", special_tokens=[(specials[0], 0)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=specials[0], eos_token=specials[1]
    ).save_pretrained(str(folder))
    return folder


def _model_folder(tokenizer: Path, folder: Path) -> Path:
    """An encoderlab model folder (its config.json names no model_type) with `tokenizer`'s tokenizer."""
    from tests.eval.conftest import tiny_model

    from encoderlab.model.io import save_model_folder

    tok = load_tokenizer(tokenizer)
    return save_model_folder(tiny_model(len(tok)), folder, tok)


def _renamed(source: Path, folder: Path, name: str) -> Path:
    """`source`'s files with tokenizer_config.json's class named `name` (4.x saves wrote PreTrainedTokenizerFast)."""
    folder.mkdir()
    for f in source.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": name}))
    return folder


def _calls(tok) -> list:
    """What the code asks of a tokenizer: ids of texts and pairs (truncated, padded, with offsets), decoding."""
    pad = "max_length" if tok.pad_token is not None else "do_not_pad"  # a decoder's has none
    return [
        tok(TEXTS)["input_ids"],
        dict(tok(PAIRS, PAIRS[::-1], return_special_tokens_mask=True)),
        dict(tok(TEXTS, truncation=True, max_length=5, padding=pad, return_offsets_mapping=True)),
        tok.encode(TEXTS[0], add_special_tokens=False),
        tok.decode(tok(TEXTS[0])["input_ids"]),
        tok.convert_ids_to_tokens(list(range(8))),
    ]


def _saved(tok, folder: Path) -> dict[str, bytes]:
    tok.save_pretrained(str(folder))
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


@pytest.mark.parametrize("kind", ["bpe", "wordpiece", "synthetic", "bos_only", "older_name", "model"])
def test_the_generic_class_loads_what_auto_tokenizer_loads(
    kind,
    tmp_path,
    tokenizer_dir,  # noqa: F811
    wordpiece_with_call_settings,  # noqa: F811
):
    from transformers import AutoTokenizer

    folder = {
        "bpe": lambda: tokenizer_dir,
        "wordpiece": lambda: wordpiece_with_call_settings,  # its tokenizer.json keeps truncation and padding
        "synthetic": lambda: _synthetic(tmp_path / "synthetic"),
        "bos_only": lambda: _bos_only_bpe(tmp_path / "bos_only"),
        "older_name": lambda: _renamed(tokenizer_dir, tmp_path / "older", "PreTrainedTokenizerFast"),
        # a path naming model types: transformers 5 picks no config class by name (4.x did)
        "model": lambda: _model_folder(tokenizer_dir, tmp_path / "bert-roberta-llama"),
    }[kind]()
    assert generic_fast_folder(folder)
    ours, auto = load_tokenizer(folder), AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    assert type(ours) is type(auto)
    assert ours.backend_tokenizer.to_str() == auto.backend_tokenizer.to_str()
    assert ours.get_vocab() == auto.get_vocab() and len(ours) == len(auto)
    assert ours.special_tokens_map == auto.special_tokens_map and ours.all_special_ids == auto.all_special_ids
    assert ours.init_kwargs == auto.init_kwargs
    assert spec_fields(ours) == spec_fields(auto) and tokenizer_hash(ours) == tokenizer_hash(auto)
    assert _calls(ours) == _calls(auto)
    assert _saved(ours, tmp_path / "ours") == _saved(auto, tmp_path / "auto")


CHANGES = {
    "model_type": {
        "model_type": "bert"
    },  # a transformers model's config: its model_type can pick another class
    "no format": {},  # a config.json that is not an encoderlab model's
    "tokenizer_class": {"format": "encoderlab-model", "tokenizer_class": "BertTokenizer"},
    "config auto_map": {"format": "encoderlab-model", "auto_map": {"AutoConfig": "x.Y"}},
    "config not JSON": None,
}


@pytest.mark.parametrize("change", [*CHANGES, "auto_map", "BertTokenizer", "no tokenizer_config"])
def test_a_folder_whose_class_autotokenizer_picks_otherwise_takes_its_path(change, tmp_path, tokenizer_dir):  # noqa: F811
    folder = _renamed(
        tokenizer_dir, tmp_path / "f", "BertTokenizer" if change == "BertTokenizer" else "TokenizersBackend"
    )
    if change in CHANGES:
        config = CHANGES[change]
        (folder / "config.json").write_text("{" if config is None else json.dumps(config))
    elif change == "auto_map":
        config = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(
            json.dumps({**config, "auto_map": {"AutoTokenizer": [None, "x.Y"]}})
        )
    elif change == "no tokenizer_config":
        (folder / "tokenizer_config.json").unlink()
    assert generic_fast_folder(tokenizer_dir) and not generic_fast_folder(folder)


def test_the_format_named_is_the_model_folders():
    from encoderlab.data.tokenizer import ENCODERLAB_FORMAT
    from encoderlab.model.sources import FORMAT

    assert ENCODERLAB_FORMAT == FORMAT


COMMANDS = ("prepare", "prepare with a model's tokenizer", "tokenizer")

CHILD = """
import json, sys
from encoderlab.cli import main

answers = {}
for name, argv in json.loads(sys.argv[1]).items():
    code = 0
    try:
        main(argv)
    except SystemExit as e:
        code = e.code
    answers[name] = [code, *(m in sys.modules for m in ("torch", "torch._dynamo", "transformers"))]
print(json.dumps(answers), flush=True)
"""


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, tokenizer_dir) -> tuple[dict, str, dict[str, Path]]:  # noqa: F811
    """(each command's [exit code, torch imported, torch._dynamo imported, transformers imported], the
    child's stderr, each command's own folder): the COMMANDS run in order in one fresh interpreter. An
    imported module stays imported, so the first command that imports torch is the first whose answer
    shows it; an interpreter per command spent most of its CPU starting Python and importing encoderlab."""
    root = tmp_path_factory.mktemp("no_torch")
    corpus = write_jsonl(root / "corpus.jsonl", corpus_records(10))
    folders = {name: root / f"case{i}" for i, name in enumerate(COMMANDS)}
    given = {
        "prepare": ["--tokenizer", str(tokenizer_dir)],
        "prepare with a model's tokenizer": [
            "--tokenizer",
            str(_model_folder(tokenizer_dir, root / "m")),
        ],
        "tokenizer": ["--vocab-size", "300"],
    }
    argvs = {
        name: [
            "data",
            name.split()[0],
            "--source",
            str(corpus),
            *given[name],
            "--out",
            str(folders[name] / "out"),
        ]
        for name in COMMANDS
    }
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argvs)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr, folders


@pytest.mark.parametrize("command", COMMANDS)
def test_data_preparation_does_not_import_torch(command, prepared):
    """`data prepare` and `data tokenizer` never use torch; AutoTokenizer imported it (1.5 s and more of CPU),
    for a model folder's tokenizer too (`--tokenizer INIT`, as a run from that model needs)."""
    answers, stderr, folders = prepared
    code, *imported = answers[command]
    assert code in (0, None), stderr
    # transformers stays: the tokenizer files written are its save_pretrained's
    assert imported == [False, False, True], (answers, stderr)
    tokenizer = folders[command] / "out" / ("" if command == "tokenizer" else "tokenizer")
    assert (tokenizer / "tokenizer.json").is_file()
