"""Tiny Hugging Face tokenizer folders of classes that read files of their own (LUKE's entity_vocab.json,
ALBERT's spiece.model), shared by the start-model identity tests (tests/train/test_init_identity.py) and the
study key tests of a local model folder (tests/study/test_local_model_keys.py).

A helper that one test module wrote and others imported lives here under a public name
(tests/test_import_layers.py refuses a test module importing another test module's underscore name)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.train.helpers import save_tiny_decoder


def luke_tokenizer(folder: Path) -> None:
    """studio-ousia/luke-base's tokenizer files, tiny: RoBERTa's byte-level BPE (vocab.json, merges.txt) and
    the entity vocabulary LukeTokenizer reads of its own (`vocab_files_names`: entity_vocab.json)."""
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "a": 5, "b": 6, "Ġ": 7, "ab": 8}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\na b\n")
    (folder / "entity_vocab.json").write_text(json.dumps({"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LukeTokenizer"}))


def edit_luke(folder: Path) -> None:
    """Another entity vocabulary: one entity more."""
    entities = json.loads((folder / "entity_vocab.json").read_text())
    (folder / "entity_vocab.json").write_text(json.dumps({**entities, "Paris": len(entities)}))


def albert_tokenizer(folder: Path) -> None:
    """albert-base-v2's SentencePiece model (`spiece.model`, its class's `vocab_files_names`), named by
    tokenizer_config.json as the hub's folder names it."""
    from tests.model.model_fixtures import save_albert_tokenizer

    save_albert_tokenizer(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "AlbertTokenizer"}))


def edit_albert(folder: Path) -> None:
    """Another SentencePiece model in spiece.model: DeBERTa-v3's fixture's, of other pieces."""
    from tests.model.model_fixtures import save_deberta_v3_tokenizer

    other = folder / "other"
    other.mkdir()
    save_deberta_v3_tokenizer(other)
    shutil.move(other / "spm.model", folder / "spiece.model")
    shutil.rmtree(other)


TOKENIZER_CLASSES = {
    "LukeTokenizer": (luke_tokenizer, edit_luke, ["merges.txt", "vocab.json", "entity_vocab.json"]),
    "AlbertTokenizer": (albert_tokenizer, edit_albert, ["spiece.model"]),
}
"""Tokenizer class -> (its files' writer, an edit of one, the vocabulary files its load reads). LUKE's
entity_vocab.json is a file the fixed list (`TOKENIZER_READS`) missed."""


def hf_folder_with(tmp_path: Path, writer) -> Path:
    """A Hugging Face folder (a tiny Llama's weights and config) whose tokenizer files are `writer`'s."""
    folder = save_tiny_decoder(tmp_path / "decoder", tied=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    writer(folder)
    return folder
