"""A study dataset read from a folder prepared outside the study (`DataSpec.prepared`, `with_prepared`).

At paper 1's scale a corpus is ~120B tokens: a lab prepares it across machines (`data prepare --shard
I/N`, then `data merge`, docs/data.md) and hands the merged folder to the study (`study run|plan
--prepared main=DIR`), whose prepare node then reads it instead of tokenizing the corpus again on one
machine. What the folder holds is checked, not trusted:

- its source is the dataset's corpus (the same named corpus, file set or asset; for a hub corpus the
  same repo, config and split, whatever slice of its files was prepared), checked when the graph is
  built, so `study plan` refuses a wrong folder before anything runs;
- its tokenizer is the dataset's (the same hash), checked by the prepare node, which loads it (the dataset's
  tokenizer and its hash are remembered in the process while no file under its folder moved, the memory
  `data prepare` reads too: `tokenizer.held_tokenizer`);
- its tokens are counted, so the study guard (`plan.py`) compares every run with what the folder
  holds, exactly, instead of an estimate.

The node key comes from the folder's content (`identity`: its recipe, split sizes, source identities
and each source file's bytes and sha256 as prepare read them), not its path: a moved folder keeps every
key, and a folder prepared again from other text, even to the same counts, changes every key below it.
Trade-off: the key trusts meta.json (written with the data, atomically) rather than hashing 100B tokens
on each build; the token files are held to what meta.json records of them (`split_files`: a stat, a
hash when the mtime moved) by `study run|plan` before anything runs (`checks.check_prepared_sources`)
and by the packed reader of every node (docs/data.md), so a file swapped since is refused, not keyed.
"""

from __future__ import annotations

import os
from pathlib import Path

from encoderlab.data.stoprule import DEFAULT_STOP
from encoderlab.errors import UserError
from encoderlab.paths import typed
from encoderlab.study.spec import StudySpec


def prepared_meta(folder: str | Path, dataset: str) -> dict:
    """The meta.json of `dataset`'s prepared folder (one line naming the fix when there is none)."""
    from encoderlab.data.packed import read_meta

    path = Path(folder)
    if not (path / "meta.json").is_file():
        raise UserError(
            f"dataset {dataset}: {path} holds no prepared data (no meta.json); prepare it first with "
            f"`encoderlab data prepare --out {typed(path)} ...` (across machines: --shard I/N, then `data merge`)"
        )
    return read_meta(path)


def identity(meta: dict) -> str:
    """A digest of what a prepared folder holds: `data.packed.identity`, the one every checkpoint records
    (its recipe, split sizes, source identities and what was read of each file, paths left out)."""
    from encoderlab.data.packed import identity as prepared_identity

    return prepared_identity(meta)


def _source_keys(cfgs: list, resolved: list[str]) -> list[tuple]:
    """What names each corpus entry however it is written (`SourceConfig`s; `resolved`: where the
    folder's local sources were read, "" where unknown), in their order: for hub data (a named hub corpus
    included) its repo, config, split, data dir and pinned revision (`hf_revision`, as written: a
    folder pinned to one is another corpus than one read from the default branch), whatever slice of
    its files; for local files the
    absolute location; for an asset its name. Then what is read of each record (text and id fields,
    the .txt unit) and the entry's share of a mixture, so `c.jsonl#text_field=title` is another corpus
    than `c.jsonl#text_field=content`, and weights 1:3 are the same mixture as 2:6."""
    from encoderlab.data.sources import expand, is_pattern, names_a_path

    cfgs = [expand(c) for c in cfgs]
    total = sum(c.weight for c in cfgs)
    keys = []
    for cfg, where in zip(cfgs, resolved, strict=True):
        read = (cfg.text_field, cfg.id_field, cfg.txt_unit, round(cfg.weight / total, 9))
        if cfg.location.startswith("hf:"):
            hub = (cfg.location[3:], cfg.hf_config, cfg.hf_split, cfg.hf_data_dir, cfg.hf_revision or "")
            keys.append(("hf", *hub, *read))
            continue
        local = names_a_path(cfg.location) or is_pattern(cfg.location)
        # a folder prepared before `resolved` was recorded: its relative locations are read from here
        where = where or (os.path.realpath(cfg.location) if local else cfg.location)
        keys.append(("path", where, *read))
    return keys


def _named(source) -> str:
    """A recipe source of meta.json as a message names it (`source 'LOCATION'`)."""
    location = source.get("location", "") if isinstance(source, dict) else source
    return f"source '{location}'"


def check_corpus(meta: dict, corpus: tuple[str, ...], dataset: str, folder: str | Path) -> None:
    """Refuse a prepared folder whose sources are not the dataset's corpus (one line)."""
    from encoderlab.config import from_dict
    from encoderlab.data.sources import SourceConfig, parse_source

    sources = meta.get("recipe", {}).get("sources", [])
    records = meta.get("sources", [])
    records = records if len(records) == len(sources) else [{}] * len(sources)
    found = _source_keys(
        # each named: SourceConfig's own refusals leave naming the source to `where`
        [from_dict(SourceConfig, s, where=f"{folder}/meta.json: {_named(s)}") for s in sources],
        [r.get("resolved", "") for r in records],
    )
    wanted = [parse_source(c) for c in corpus]
    want = sorted(_source_keys(wanted, [""] * len(wanted)))
    found = [_as_pinned(key, r, want) for key, r in zip(found, records)]
    if sorted(found) != want:
        names = ", ".join(_written(s) for s in sources) or "nothing"
        raise UserError(
            f"dataset {dataset}: {folder} was prepared from {names}, not from its corpus "
            f"{' + '.join(corpus)}; pass a folder prepared from the corpus"
        )


def _as_pinned(key: tuple, record, wanted: list[tuple]) -> tuple:
    """A hub source's key (`_source_keys`) as pinned to the full commit sha the folder read it at (`record`:
    its meta.json entry; read unpinned from a mirror, the commit its download records verify), when the
    corpus pins that sha and not the folder's own way (unpinned, or a branch or tag that named it): the
    same files, as `data prepare` finds (`data.freshness.pins_held`); else `key` as it is."""
    from encoderlab.data.freshness import held_commit

    if key[0] != "hf" or key in wanted:
        return key
    commit = held_commit(record)  # a mirror's records are read only here, for a key not wanted as it is
    pinned = (*key[:5], commit, *key[6:])
    return pinned if commit and pinned in wanted else key


def _written(source: dict) -> str:
    """A recorded source in `--source`'s syntax, with the options that differ from the defaults."""
    from encoderlab.data.sources import SourceConfig

    default = SourceConfig(location=source["location"])
    options = [
        f"{k}={v}"
        for k, v in source.items()
        if k != "location" and v != getattr(default, k, v) and v is not None
    ]
    return source["location"] + (f"#{','.join(options)}" if options else "")


def check_tokenizer(meta: dict, tokenizer: str, dataset: str, folder: str | Path) -> None:
    """Refuse a prepared folder tokenized with another tokenizer than the dataset's (one line)."""
    from encoderlab.data.tokenizer import held_tokenizer

    # `study run` checks each folder before it writes and again in its prepare node, `study plan` as often
    held = held_tokenizer(tokenizer)
    if meta.get("recipe", {}).get("tokenizer_hash") != held.digest:
        # both places named (said neither): a hub id's folder is a cache the user cannot guess, and the
        # folder's own tokenizer is the one to compare it with
        raise UserError(
            f"dataset {dataset}: {folder} was tokenized with another tokenizer ({Path(folder) / 'tokenizer'}) "
            f"than {tokenizer} (read from {held.read_from}); prepare it again with --tokenizer {tokenizer}"
        )


def with_prepared(spec: StudySpec, prepared: tuple[str, ...], shown: str | None = None) -> StudySpec:
    """`spec` with each `NAME=DIR` dataset read from the prepared folder DIR (its `max_docs` and `stop` dropped:
    the folder holds what it holds, and the study guard counts it); see study/prepared.py.

    `shown`: what `encoderlab study show` takes to print `spec` as a file (a built-in study's name and scale,
    a study folder), None for a study file. A dataset whose tokenizer the study trains cannot read a folder
    prepared before it: the spec's own refusal says to name the folder's tokenizer, which a study file's
    author does in the file, while a built-in study has no file to edit (`_trained_tokenizer`)."""
    import dataclasses

    data = {d.name: d for d in spec.data}
    for item in prepared:
        name, eq, folder = item.partition("=")
        if not eq or not folder or name not in data:
            raise UserError(
                f"--prepared {item}: give NAME=DIR with NAME one of the study's datasets ({', '.join(data)})"
            )
        folder = str(Path(folder).resolve())
        if shown is not None and (data[name].tokenizer == "train" or data[name].tokenizer in data):
            raise _trained_tokenizer(data[name].tokenizer, name, folder, shown)
        data[name] = dataclasses.replace(data[name], prepared=folder, max_docs=None, stop=DEFAULT_STOP)
    return dataclasses.replace(spec, data=tuple(data.values())) if prepared else spec


def _trained_tokenizer(tokenizer: str, dataset: str, folder: str, shown: str) -> UserError:
    """The refusal of `--prepared` for a dataset whose tokenizer the study trains (`with_prepared`): how to
    make the study a file that names the folder's tokenizer. It said the study "names the tokenizer the folder
    was prepared with", which a built-in study's user had no way to do (found by the cluster-route hunt)."""
    trained = (
        "trains its own tokenizer"
        if tokenizer == "train"
        else f"reuses the tokenizer dataset {tokenizer} trains"
    )
    return UserError(
        f"dataset {dataset} {trained}, so it cannot read the prepared folder {folder}; export the study with "
        f"`encoderlab study show {shown} > my.yaml`, set dataset {dataset}'s tokenizer to {folder}/tokenizer (the "
        f"one the folder was prepared with) and run `encoderlab study run my.yaml --prepared {dataset}={typed(folder)}`"
    )
