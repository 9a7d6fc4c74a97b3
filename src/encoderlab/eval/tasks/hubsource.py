"""What a hub dataset source is: a `HubSource` (repository, config, revision, data files), where it is read
from (`hub_path`: the hub id, or its mirror folder), and the refusal of a config it does not have.

A source names a dataset repository, its config, and, for repositories that are dataset scripts (which
`datasets` >= 4 refuses to run, and which we would not run unasked anyway), the revision and file globs of
the repository's parquet export (`parquet_export`). Reading it is `hub.load_hub`'s; this module imports no
other `hub*` module, so that each of them (`hubcomplete`, `hubcommits`, `huboffline`, `hubexport`,
`hubsnapshot`) can name the type without an import cycle through the loader.

EncodEval's `LOCAL_DATASET_DIR` reads a mirror from `DIR/<name>`; we keep the owner in the path
(`DIR/<owner>/<name>`), since two sources here share a name (`hgissbkh/msmarco-pairs` would not, but
`BeIR/nq` and a future `*/nq` would).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from encoderlab.data.hub import dataset_location

PARQUET_EXPORT = "refs/convert/parquet"
CARD_FILES = ("README.md", ".huggingface.yaml")
"""A dataset repo's files that `datasets` reads, besides its data files, to resolve its configs."""


def export_files(config: str, splits: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Globs of a parquet export's files of `config` (`*`: the repository's only config), in either
    layout the converter has written: `<config>/<split>/0000.parquet` (current) and
    `<config>/<name>-<split>[-00000-of-0000N].parquet` (2023)."""
    layouts = ("{c}/{s}/*.parquet", "{c}/*-{s}.parquet", "{c}/*-{s}-[0-9]*.parquet")
    return tuple((s, layout.format(c=config, s=s)) for s in splits for layout in layouts)


@dataclass(frozen=True)
class HubSource:
    """Where one hub dataset (config) is read from."""

    repo: str
    """`owner/name` on the hub."""
    config: str | None = None
    """The config (`name=` of `load_dataset`); None for a repository's only one, and when
    `data_files` pick the files (a parquet export's config is then a folder in the globs)."""
    revision: str | None = None
    """A branch or commit; `refs/convert/parquet` for a script repository's parquet export."""
    data_files: tuple[tuple[str, str], ...] = ()
    """(split, glob) pairs relative to the repository root (a split may repeat, for several
    globs); empty to let the repository's card (README `configs`) or its file names decide."""
    export_config: str | None = None
    """The config of a parquet export whose files `data_files` are (`parquet_export`; `*`: the export's
    only one), which a refusal names: the globs are ours, not what a task file passes."""

    def describe(self) -> str:
        if self.export_config is not None:
            of = "" if self.export_config == "*" else f"config {self.export_config} of "
            where = f"{self.repo} ({of}its parquet export)"
        else:
            picked = f" (files {self.data_files[0][1]}, ...)" if self.data_files else ""
            where = self.repo + (f" (config {self.config})" if self.config else picked)
        return where + (f" at {self.revision}" if self.revision else "")


def parquet_export(
    repo: str, config: str, splits: tuple[str, ...], revision: str = PARQUET_EXPORT
) -> HubSource:
    """The splits `splits` of `config` (`*`: the only one) of `repo`'s parquet export, at its branch or
    one of its commits (`revision`): the built-in tasks' exports and a task file's (`hubexport.export_source`)."""
    return HubSource(repo, revision=revision, data_files=export_files(config, splits), export_config=config)


def hub_path(source: HubSource) -> str:
    """The hub id, or the mirror folder under $ENCODERLAB_HUB_DATA (checked to exist; the one
    resolver of hub ids, `encoderlab.data.hub`, shared with `data prepare`)."""
    return dataset_location(source.repo, source.revision)


CONFIGS = re.compile(
    r"^(?:Config name is missing|BuilderConfig .* not found)\b.*?(?:configs|Available): \[(.*?)\]", re.S
)
"""`datasets`' refusal of a missing or unknown config, and the configs it lists (on a later line)."""


def config_problem(exc: BaseException, source: HubSource) -> str | None:
    """A config left out or not the dataset's, as the configs it has and the field naming one: it was
    "Config name is missing.; check the mirror's files" (the mirror was fine; the list was on the lines cut)."""
    listed = CONFIGS.match(str(exc)) if isinstance(exc, ValueError) else None
    if listed is None:
        return None
    return configs_named([n.strip(" '\"") for n in listed.group(1).split(",")], source.config)


def configs_named(configs: list[str], config: str | None) -> str:
    """The refusal's clause of a config left out (`config` None) or not among a dataset's `configs`: a
    `datasets` config (`config_problem`) or a parquet export's folder (`hubexport.export_source`)."""
    which = f"no config {config!r}" if config else "none was named"
    return f"it has configs {', '.join(configs)}, and {which}; name one (a task file's data.config)"
