"""A study of one's own as a YAML file, in the schema of the built-in studies (`spec.StudySpec`).

`encoderlab study show paper1-pfs --scale cpu > my.yaml` writes a built-in study as YAML
(`dump_study`); `load_study_file` reads one back, so an exported study round-trips to the identical
spec, less the claims it cannot test (which a study file may not hold; the file names them in comments),
and `encoderlab study run my.yaml` runs it like a built-in one.

Reading is strict and says what it finds in two rounds, each problem one line and each round one
`UserError`: first every entry on its own (an unknown field with the valid ones, a wrong type, an
unknown recipe or recipe parameter), then, once those are right, the study as a whole (a run name a
claim, analysis or the baseline refers to but the study lacks, names that repeat, ...). The second
round needs typed entries, so a hand-written study is fixed in at most two passes rather than one
error per run (the `eval` grid too: `eval.taskruns.grid_problems`). Relative paths in the file (a local corpus,
tokenizer, start model or prepared folder, CKA texts, task files) are taken relative to the file's folder; a corpus
entry is in `--source`'s syntax, a path or glob with `#key=value` options (`corpus.jsonl#text_field=body`).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import typing
from pathlib import Path
from typing import Any

import yaml

from encoderlab.config import coerce, missing_fields, read_mapping, recorded_fields, to_dict, unknown_fields
from encoderlab.configforms import not_a_list, not_a_mapping
from encoderlab.data.filekinds import COMPRESSIONS, UNREAD_COMPRESSIONS
from encoderlab.errors import UserError, closest
from encoderlab.paths import found_in_cwd_instead
from encoderlab.study.spec import CkaSpec, ClaimSpec, DataSpec, EvalSpec, RunSpec, StudySpec
from encoderlab.study.specproblems import untestable_claims, why_untestable
from encoderlab.words import count, noun

_SECTIONS: dict[str, type] = {"data": DataSpec, "runs": RunSpec, "claims": ClaimSpec, "cka": CkaSpec}
"""StudySpec fields that are lists of specs: each item is checked on its own."""


def dump_study(spec: StudySpec, origin: str = "") -> str:
    """The spec as YAML (with a comment saying where it came from and how to run it), less the claims it can
    never test (`specproblems.why_untestable`: the demo's stability claim over its one LR, a QA claim where
    no QA task is fine-tuned), which `load_study_file` would refuse. Each is written after the study as a
    comment: the refusal's line, which names the fix, and the claim to add back once it is made. Trade-off:
    the file reads back as the study less those claims, not the identical spec; the built-in study itself
    keeps them and its report says why each is not tested."""
    left = {c.id: lines for c in spec.claims if (lines := why_untestable(spec, c))}
    kept = dataclasses.replace(spec, claims=tuple(c for c in spec.claims if c.id not in left))
    head = f"# encoderlab study{f' exported from {origin}' if origin else ''}.\n"
    head += "# Edit it, then: encoderlab study run FILE.yaml --out DIR   (schema: docs/studies.md)\n"
    text = head + yaml.safe_dump(to_dict(kept), sort_keys=False, allow_unicode=True)
    if not left:
        return text
    text += (
        f"# {count(len(left), 'claim')} of the study left out: this study cannot test "
        f'{"it" if len(left) == 1 else "them"} as it is\n# (its report says "not tested"). Make the change '
        "each line names, then add the claim back under claims:\n"
    )
    for c in spec.claims:
        if c.id in left:
            text += "".join(f"#   {line}\n" for line in left[c.id])
            claim = yaml.safe_dump([to_dict(c)], sort_keys=False, allow_unicode=True, width=1000)
            text += "".join(f"#     {line}\n" for line in claim.splitlines())
    return text


def load_study_file(path: Path | str) -> StudySpec:
    """Read and check a study file; every problem is one line of one UserError."""
    path = Path(path)
    _refuse_data_file(path)
    data = read_mapping(path, "study file")
    errors: list[str] = []
    spec = _build(StudySpec, _with_paths(data, path.parent, errors), "study", errors)
    if spec is not None:
        errors += untestable_claims(spec)
    if errors or spec is None:
        lines = "\n".join(f"  {e}" for e in errors)
        raise UserError(f"study file {path} has {count(len(errors), 'problem')}:\n{lines}")
    return dataclasses.replace(spec, folder=str(path.parent.resolve()))


_DATA_SUFFIXES = (".jsonl", ".csv", ".tsv", ".parquet")
"""A corpus's or a task's data file, never a study file (a `.json` or `.txt` one may be YAML: read as such)."""


def _refuse_data_file(path: Path) -> None:
    """A corpus or a task's data file given as the study (`study run corpus.jsonl`), named as such: read as
    YAML, a JSON lines file was "not valid YAML at line 1 ...; fix the syntax", a gzipped one "not UTF-8
    text ...; save it as UTF-8, e.g. `iconv ...`" and a CSV "holds '<its first row>', not a mapping",
    fixes for a file that was never a study's (the task-file side: `localfiles.refuse_data_file`)."""
    suffixes = [s.lower() for s in path.suffixes[-2:]] or [""]
    packed = suffixes[-1] in (*COMPRESSIONS, *UNREAD_COMPRESSIONS) and len(suffixes) == 2
    inner = suffixes[0] if packed else suffixes[-1]
    if inner in _DATA_SUFFIXES or (packed and inner in (".txt", ".json")):  # a packed corpus is not YAML
        kind = "".join(suffixes) if packed else inner
        raise UserError(
            f"study file {path} is a {kind} data file, not a study file; pass the study's YAML file, which "
            "lists a corpus in a dataset's `corpus:` and a task's data in a task file of its "
            '`eval: {task_files: [...]}` (docs/studies.md, "A study of your own")'
        )


def _build(cls: type, data: Any, where: str, errors: list[str]) -> Any:
    """`cls` from plain data, adding one line per problem to `errors` (None if there was one)."""
    if not isinstance(data, dict):
        errors.append(str(not_a_mapping(data, where, cls.__name__, recorded_fields(cls))))
        return None
    fields = recorded_fields(cls)
    before = len(errors)
    if line := _key_problems(where, data, fields):
        errors.append(line)
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name in [n for n in fields if n in data]:  # the schema's order: a set's order changed from run to run
        kwargs[name] = _field(cls, name, hints[name], data[name], where, errors)
    if len(errors) > before:
        return None
    try:
        return cls(**kwargs)
    except UserError as exc:  # __post_init__: the spec's own checks, each line already names its subject
        errors.extend(str(exc).splitlines())
        return None


def _key_problems(where: str, data: dict, fields: dict) -> str | None:
    """One line for an entry's unknown and missing keys: a key misnamed (`name:` for a claim's `id:`) was
    two lines, "unknown field name" and "missing field id", neither naming the fix; one unknown key beside
    one missing field is named as that field misnamed."""
    unknown = unknown_fields(where, data, fields)
    missing = missing_fields(fields, data)
    if not missing:
        return unknown
    absent = f"missing {noun(len(missing), 'field')} {', '.join(missing)}"
    if unknown is None:
        return f"{where}: {absent}"
    extra = sorted(set(data) - set(fields), key=str)
    if len(extra) == 1 and len(missing) == 1:
        return f"{where}: unknown field {extra[0]}, {absent}; rename {extra[0]} to {missing[0]}"
    return f"{unknown.removesuffix('; valid: ' + ', '.join(sorted(fields)))}; {absent}; valid: {', '.join(sorted(fields))}"


def _field(cls: type, name: str, hint: Any, value: Any, where: str, errors: list[str]) -> Any:
    if cls is StudySpec and name in _SECTIONS:
        if not isinstance(value, list):
            errors.append(str(not_a_list(value, f"{where}.{name}")))
            return ()
        items = [_build(_SECTIONS[name], v, _item(name, i, v), errors) for i, v in enumerate(value)]
        return tuple(items)
    if cls is StudySpec and name == "eval":
        return _build(EvalSpec, value, "eval", errors)
    try:
        return coerce(value, hint, f"{where}.{name}")
    except UserError as exc:
        errors.append(str(exc))
        return None


def _item(section: str, i: int, value: Any) -> str:
    label = value.get("name") or value.get("id") if isinstance(value, dict) else None
    return f"{section}[{i}]" + (f" ({label})" if label else "")


def _with_paths(data: dict, folder: Path, errors: list[str]) -> dict:
    """The file's relative paths made relative to its folder (names of assets, hub corpora, runs and
    hub ids stay as they are), `~` read as the home folder (as a run config's `data.path`; it was a
    folder `~` beside the file). A path is never looked for in the working directory: one that is
    missing beside the file but found there is a problem (`errors`), not a silent second place."""
    paths = _Paths(folder, data, errors)
    out = dict(data)
    if isinstance(out.get("data"), list):
        out["data"] = [
            {
                **d,
                "corpus": [paths.source(c, f"data[{i}].corpus") for c in d.get("corpus", [])],
                "tokenizer": paths.local(d.get("tokenizer", "train"), f"data[{i}].tokenizer"),
                # a folder, never a name: was read from the working directory (`--prepared`'s rule)
                **(
                    {"prepared": paths.path(d["prepared"], f"data[{i}].prepared")}
                    if d.get("prepared")
                    else {}
                ),
            }
            if isinstance(d, dict) and isinstance(d.get("corpus", []), list)
            else d
            for i, d in enumerate(out["data"])
        ]
    if isinstance(out.get("runs"), list):
        out["runs"] = [
            {**r, "init": paths.local(r["init"], f"runs[{i}].init")}
            if isinstance(r, dict) and r.get("init")
            else r
            for i, r in enumerate(out["runs"])
        ]
    if isinstance(out.get("cka"), list):
        out["cka"] = [
            {**c, "texts": paths.local(c["texts"], f"cka[{i}].texts")}
            if isinstance(c, dict) and "texts" in c
            else c
            for i, c in enumerate(out["cka"])
        ]
    ev = out.get("eval")
    if isinstance(ev, dict) and isinstance(ev.get("task_files"), list):
        # always paths (no asset names): one missing beside the file is not looked for in the
        # working directory, and its error names where it was looked for
        out["eval"] = {
            **ev,
            "task_files": [paths.path(t, f"eval.task_files[{i}]") for i, t in enumerate(ev["task_files"])],
        }
    return out


def _home(value: Any) -> Any:
    """A path written from the home folder (`~/corpus.txt`) made absolute; anything else as it is."""
    return os.path.expanduser(value) if isinstance(value, str) and value.startswith("~") else value


class _Paths:
    """How each kind of value in a study file is read relative to the file's folder."""

    def __init__(self, folder: Path, data: dict, errors: list[str]):
        from encoderlab.data.assets import ASSETS
        from encoderlab.data.corpora import CORPORA

        runs = data.get("runs") if isinstance(data.get("runs"), list) else []
        self.corpora = {*ASSETS, *CORPORA}
        self.names = {*self.corpora, "train"} | {r.get("name") for r in runs if isinstance(r, dict)}
        self.folder, self.errors = folder, errors

    def local(self, value: Any, where: str) -> Any:
        """A path beside the file, made absolute; else a name (an asset, a run, a hub id) as it is."""
        value = _home(value)
        if not isinstance(value, str) or not value or Path(value).is_absolute():
            return value
        if (self.folder / value).exists():
            return str((self.folder / value).resolve())
        self._not_from_cwd(value, where)
        return value

    def source(self, value: Any, where: str) -> Any:
        """A corpus entry in `--source`'s syntax: its location (a path, or a glob, matched from the
        file's folder, whether or not anything is there), and its `#options` as they are."""
        from encoderlab.data.sources import is_pattern, names_a_path

        value = _home(value)
        if not isinstance(value, str) or (self.folder / value).exists():  # a path as written, '#' and all
            return self.beside(value)
        location, sep, options = value.rpartition("#")
        location = location if sep else value
        if (
            not location
            or Path(location).is_absolute()
            or location.startswith("hf:")
            or location in self.names
        ):
            return value
        exists = names_a_path(self.folder / location)  # a symlink to nothing too: refused when read
        pattern = is_pattern(location, self.folder)  # the path taken from the study file's folder
        if not pattern and not exists:
            before = len(self.errors)
            self._not_from_cwd(location, where, options if sep else "")
            if len(self.errors) == before and (near := closest(location, self.corpora)):
                # was only "'FOLDER/wiki-lead' is not an existing file, folder or glob"
                self.errors.append(
                    f"{where}: {location} is no file beside the study file (in {self.folder}) nor an asset or "
                    f"named corpus; did you mean {near}?"
                )
        # a pattern matches names under the folder, whose own `[`, `*` or `?` are no pattern: `study[2]/`
        # made `study[2]/*.jsonl` match `study2/`'s files, or none
        folder = str(self.folder.resolve())
        full = Path(glob.escape(folder) if pattern else folder) / location
        return str(full) + (sep + options if sep else "")

    def path(self, value: Any, where: str) -> Any:
        """A task file or a dataset's `prepared` folder, always a path beside the study file; one only the
        working directory holds is a problem (was "task file FOLDER/x.yaml does not exist", without saying
        where it was; a relative `prepared` was read from the working directory)."""
        value = _home(value)
        if isinstance(value, str) and value and not (self.folder / value).exists():
            found = found_in_cwd_instead(value, self.folder, "study file")
            if found:
                self.errors.append(f"{where}: {found}")
        return self.beside(value)

    def beside(self, value: Any) -> Any:
        if isinstance(value, str) and value and not Path(value).is_absolute():
            return str((self.folder / value).resolve())
        return value

    def _not_from_cwd(self, value: str, where: str, options: str = "") -> None:
        found = (
            None if value in self.names else found_in_cwd_instead(value, self.folder, "study file", options)
        )
        if found:
            self.errors.append(f"{where}: {found}")
