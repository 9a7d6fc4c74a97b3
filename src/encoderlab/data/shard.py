"""Which slice of a corpus one prepare worker reads: `Shard(index, count)`, and where it comes from.

At 100B tokens one machine is not enough, so `data prepare --shard I/N` tokenizes only the I-th of N
contiguous slices of its source's files (hub data files, or local files in sorted order), and
`data merge` concatenates the N partial folders in shard order into one prepared folder. Each file
belongs to exactly one slice, so every document is read exactly once across workers, and the
merged bytes are those of a one-worker prepare (tests/data/test_merge.py).

The launcher is the cluster's own: a SLURM job array (`--shard auto` reads SLURM_ARRAY_TASK_ID,
SLURM_ARRAY_TASK_MIN, _STEP and _COUNT), torchrun or any launcher that sets RANK and
WORLD_SIZE, or an explicit `--shard I/N` from a shell loop. encoderlab schedules nothing.
Trade-off: the unit of work is a whole file, so N should not exceed the number of files (a worker
with no file writes an empty part), and slices are balanced by file count, not by bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from encoderlab.errors import UserError


@dataclass(frozen=True)
class Shard:
    """Worker `index` of `count`: reads the index-th of count contiguous slices of the files."""

    index: int
    count: int

    def __post_init__(self):
        if not (self.count >= 1 and 0 <= self.index < self.count):
            raise UserError(
                f"shard {self.index}/{self.count} is out of range; use I/N with 0 <= I < N (e.g. --shard 0/8)"
            )

    def select_in(self, files: range) -> range:
        """This worker's slice of the file indices `files` (a source's files, or a span of them)."""
        mine = self.select(len(files))
        return files[mine.start : mine.stop]

    def select(self, n_files: int) -> range:
        """The indices of the files this worker reads out of `n_files`."""
        return range(self.index * n_files // self.count, (self.index + 1) * n_files // self.count)

    @property
    def name(self) -> str:
        """The folder name of this worker's part, e.g. `00003-of-00008`."""
        return f"{self.index:05d}-of-{self.count:05d}"


def _int(env: Mapping[str, str], key: str) -> int:
    try:
        return int(env[key])
    except ValueError:
        raise UserError(
            f"{key}={env[key]!r} is not an integer; fix the launcher or pass --shard I/N"
        ) from None


def shard_from_env(env: Mapping[str, str] | None = None) -> Shard:
    """The shard a SLURM array task or a torchrun process is (see the module docstring)."""
    env = os.environ if env is None else env
    if "SLURM_ARRAY_TASK_ID" in env and "SLURM_ARRAY_TASK_COUNT" in env:
        first = _int(env, "SLURM_ARRAY_TASK_MIN") if "SLURM_ARRAY_TASK_MIN" in env else 0
        step = _int(env, "SLURM_ARRAY_TASK_STEP") if "SLURM_ARRAY_TASK_STEP" in env else 1
        index = (_int(env, "SLURM_ARRAY_TASK_ID") - first) // max(step, 1)
        return Shard(index, _int(env, "SLURM_ARRAY_TASK_COUNT"))
    if "RANK" in env and "WORLD_SIZE" in env:
        return Shard(_int(env, "RANK"), _int(env, "WORLD_SIZE"))
    raise UserError(
        "--shard auto found neither a SLURM array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) nor "
        "RANK/WORLD_SIZE (torchrun); pass --shard I/N"
    )


def parse_shard(text: str | None, env: Mapping[str, str] | None = None) -> Shard | None:
    """`--shard`: None (the whole corpus), `auto` (from the environment) or `I/N`."""
    if text is None:
        return None
    if text == "auto":
        return shard_from_env(env)
    index, slash, count = text.partition("/")
    if not (slash and index.strip().isdigit() and count.strip().isdigit()):
        raise UserError(f"--shard {text!r} is not I/N (e.g. 0/8) or auto")
    return Shard(int(index), int(count))


def shard_dir(out: Path, shard: Shard) -> Path:
    """Where worker `shard` of a prepare into `out` writes its part: `OUT.shards/I-of-N`."""
    return Path(out).with_name(Path(out).name + ".shards") / shard.name


def merged_folder(part: Path) -> Path | None:
    """The folder a part of a sharded prepare (`OUT.shards/I-of-N`, `shard_dir`) is merged into: OUT,
    relative where `part` names its parts folder, else absolute (`--out I-of-N` given from inside it);
    None for a folder that lies in no `.shards` folder."""
    parts = Path(part).absolute().parent
    if not parts.name.endswith(".shards"):
        return None
    base = Path(part).parent if Path(part).parent.name == parts.name else parts
    return base.with_name(parts.name.removesuffix(".shards"))
