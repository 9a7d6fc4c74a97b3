"""The sentence-transformers files of a Hugging Face folder, carried from load to export.

A sentence-transformers folder (MiniLM's all-MiniLM-L6-v2) is a transformers folder plus a few
small JSON files that say how token states become a sentence vector: `modules.json` (the module
list), `sentence_bert_config.json`, `config_sentence_transformers.json` and one folder per module
(`1_Pooling/config.json`). encoderlab reads them as text when it loads the folder, an adapter keeps
them (`HFAdapter.sentence_files`), the model folder stores them in its config.json, and
`encoderlab export` writes them back, so `SentenceTransformer(export)` pools as the source did.

Only configuration is carried: a module folder holding anything but JSON (a `Dense` layer's
weights) means the set cannot be carried whole, and none of it is (the load notes say so); an
export without these files still loads in sentence-transformers, with its default mean pooling.
Every name is a relative path inside the folder, checked on read and again before writing.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

TOP = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json")
MAX_BYTES = 1 << 20
"""A larger file is no configuration: the set is not carried."""


def safe_name(name: object) -> bool:
    """True for a relative path of plain parts below a folder (no `..`, no absolute path, no `\\`)."""
    if not isinstance(name, str) or not name or "\\" in name:
        return False
    parts = PurePosixPath(name).parts
    return not PurePosixPath(name).is_absolute() and all(p not in ("", ".", "..") for p in parts)


def _module_dirs(folder: Path) -> list[str] | None:
    """The module folders `modules.json` names (the transformer's own "" left out); None if unreadable."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        return None
    paths = [m.get("path", "") for m in modules]
    if not all(p == "" or safe_name(p) for p in paths):
        return None
    return [p for p in paths if p]


def read_sentence_files(folder: Path) -> tuple[dict[str, str], list[str]]:
    """The sentence-transformers files of `folder` as {relative name: text}, and notes.

    Empty with no note when the folder is no sentence-transformers folder; empty with a note when
    it is one whose modules cannot be carried (see the module docstring)."""
    folder = Path(folder)
    if not (folder / "modules.json").is_file():
        return {}, []
    dirs = _module_dirs(folder)
    skipped = f"{folder}'s sentence-transformers files were not kept (an export will have none): "
    if dirs is None:
        return {}, [skipped + "modules.json is not a list of modules with relative paths"]
    names = [n for n in TOP if (folder / n).is_file()]
    for d in dirs:
        if (folder / d).is_dir():
            names += [f"{d}/{p.name}" for p in sorted((folder / d).iterdir())]
    files = {}
    for name in names:
        path = folder / name
        if not name.endswith(".json") or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return {}, [skipped + f"{name} is not a small JSON configuration file"]
        try:
            files[name] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return {}, [skipped + f"{name} is not readable text"]
    return files, []


def sentence_files_problem(files: object) -> str | None:
    """What is wrong with a stored {name: text} mapping, if anything (a model folder's config.json)."""
    if not isinstance(files, dict):
        return "its 'sentence_transformers' is not a mapping of file names to text"
    bad = [n for n, text in files.items() if not safe_name(n) or not isinstance(text, str)]
    return f"its 'sentence_transformers' names {bad[0]!r}, no file inside the folder" if bad else None


def write_sentence_files(files: dict[str, str], folder: Path) -> None:
    """Write the files below `folder` (names checked again: they never leave it)."""
    for name, text in files.items():
        if not safe_name(name):
            raise ValueError(f"sentence-transformers file name {name!r} is not inside the folder")
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
