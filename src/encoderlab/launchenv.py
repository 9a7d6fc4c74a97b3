"""The environment `torchrun` describes a process's place in, read and checked in one place, without torch.

Design
  * `torchrun` (or SLURM through it) sets WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR and MASTER_PORT in every
    process it starts; a process started otherwise has none of them, or strays exported for another tool.
    Everything that asks "was this process started among others, and which is it" reads them here:
    `train.distributed.join_world` (which refuses an inconsistent set before joining) and `cli`, which says an
    argument error or an interrupt once per node and must not import torch to do so (`encoderlab --help`
    stays light).
  * WORLD_SIZE is parsed once (`parsed_world_size`): a value naming no number of processes (empty, not an
    integer, 0 or below) is refused by `pretrain` (`env_world_size`) and, where nothing may be refused (the
    printing of another error), read as a process run alone (`first_on_its_node`). The cli once had a
    parser of its own, which took WORLD_SIZE=-1 for a torchrun launch and muted such a process's lines.
  * SLURM's own variables (SLURM_PROCID, SLURM_STEP_NUM_TASKS) are not read as a world: `srun -n 8
    encoderlab pretrain ...` without torchrun is refused (`check_not_srun_tasks`), not joined. Some
    frameworks read them (PyTorch Lightning's SLURMEnvironment); the process group's env:// start then still
    needs MASTER_ADDR and MASTER_PORT, which SLURM does not set and which such a reader makes up (the first
    host of the node list, a port of its choosing). The documented launch is one torchrun per node under
    srun (docs/scaling.md), or torchrun's variables exported from SLURM's by the job script, both of which
    this module reads as any torchrun launch. Without the refusal each task trained the whole run alone,
    every one on the same GPU, into the same run folder: one won its lock, the others were refused after
    building everything, and srun's exit status was 2 for a run that trained on one process.
  * The environment a command's own Python children start in (`children_without_working_folder`): a
    process `multiprocessing` spawns (prepare's and the tokenizer's workers, a study's nodes, its resource
    tracker) starts as `python -c ...`, which puts the working folder first on its path, so a
    `multiprocessing/` (or any module it imports first) in the folder a command runs from was imported in
    place of the standard one: its code ran. The `encoderlab` script itself never had the folder on its
    path. `PYTHONSAFEPATH=1` (Python 3.11+) keeps it off the children's too, for the command's length only:
    a notebook's or a test's own subprocesses afterwards start as they did.
  * Python 3.10, which has no such switch, is not supported (it reached its end of life in October 2026;
    pyproject's `requires-python` says >= 3.11): a guard there would have to rewrite `multiprocessing`'s
    internal command lines. encoderlab's own subprocesses run in folders of their own (the assets'
    clients, `bench data`'s measurements).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from encoderlab.errors import UserError


def parsed_world_size() -> int | None:
    """WORLD_SIZE as a number of processes: 1 when unset; None when it names none (empty, not an integer,
    0 or below), which no launcher sets."""
    try:
        size = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return None
    return size if size >= 1 else None


def env_world_size() -> int:
    """WORLD_SIZE as torchrun (or SLURM through torchrun) sets it; 1 when not launched by it. 0 or less (no
    launcher sets it) ran one process without a word, as if it were unset; it is refused like a non-integer."""
    size = parsed_world_size()
    if size is None:
        raise UserError(
            f"WORLD_SIZE={os.environ['WORLD_SIZE']!r} is not a whole number of processes (1 or more); launch "
            "with torchrun, or unset WORLD_SIZE to run one process"
        )
    return size


def first_on_its_node() -> bool:
    """False for the second and later processes `torchrun` starts on a node (LOCAL_RANK 1, 2, ...):
    a Ctrl-C or a scheduler's SIGTERM reaches every one of them, and each printed the interrupted line.
    Each node's first process still says it, as its log is the node's own. A process torchrun did not start
    (WORLD_SIZE unset or 1, or one naming no number of processes, which no launcher sets) is its node's only
    one, whatever a stray LOCAL_RANK says: it said nothing of an argument error or an interrupt (`pretrain`
    then refuses that LOCAL_RANK or WORLD_SIZE, `check_one_process_env`, `env_world_size`). Never refuses:
    it decides who says another error. Several srun tasks without torchrun (`check_not_srun_tasks`) say it by
    task 0 alone, as that refusal: srun gathers their stderr into one stream, and each printed it."""
    size = parsed_world_size()
    if size is not None and size > 1:
        return os.environ.get("LOCAL_RANK", "0") in ("", "0")
    return first_srun_task()


LAUNCHER_ENV = ("RANK", "MASTER_ADDR", "MASTER_PORT")
"""What `torchrun` sets beside WORLD_SIZE, and the process group's env:// start reads."""


def check_launcher_env() -> None:
    """Refuse WORLD_SIZE > 1 without the rest of torchrun's environment (an sbatch script that exports
    WORLD_SIZE for another tool, a process started by hand): the process group's start raised a
    ValueError traceback ("environment variable RANK expected, but not set"), and so it did for a
    RANK or MASTER_PORT that is no integer, while a RANK past WORLD_SIZE waited for its peers for
    the join's whole timeout (30 minutes)."""
    missing = [name for name in LAUNCHER_ENV if not os.environ.get(name)]
    if missing:
        raise UserError(
            f"WORLD_SIZE={os.environ['WORLD_SIZE']} is set but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not; launch with torchrun (it sets them all), or unset "
            "WORLD_SIZE to run one process"
        )
    world, bad = env_world_size(), []
    for name, low, high in (("RANK", 0, world - 1), ("LOCAL_RANK", 0, world - 1), ("MASTER_PORT", 1, 65535)):
        value = os.environ.get(name, "0" if name == "LOCAL_RANK" else "")
        if not (value.isdigit() and low <= int(value) <= high):  # a ValueError traceback, or a join hung
            bad.append(f"{name}={value!r} (an integer from {low} to {high})")
    if bad:
        raise UserError(
            f"with WORLD_SIZE={world}, {'; '.join(bad)}; launch with torchrun (it sets them), or unset "
            "WORLD_SIZE to run one process"
        )


def env_rank() -> int:
    """RANK as torchrun sets it: who prints, once the group is gone. 0 in a process torchrun did not start
    (WORLD_SIZE unset or 1), which is the one rank whatever a stray RANK says: that process trained as rank 0
    (`join_world` gives it `World()`) while a RANK=1 left in its environment muted its `--dry-run`, its notes and
    its summary and made it skip rank 0's check of a moved start model (`join_world` now refuses that RANK)."""
    if env_world_size() <= 1:
        return 0
    return int(os.environ.get("RANK", "0") or 0)


ONE_PROCESS_ENV = ("RANK", "LOCAL_RANK")
"""What torchrun sets per process; in a process it did not start, anything but 0 is a stray."""


def check_one_process_env() -> None:
    """Refuse RANK or LOCAL_RANK other than 0 without WORLD_SIZE above 1 (exported for another tool, or a rank's
    command started by hand without the rest): the process ran alone as rank 0 of one, while every line that
    only rank 0 says (`env_rank`) went unsaid, and RANK=x was a ValueError traceback after the run had trained.
    The mirror of `check_launcher_env`'s WORLD_SIZE without RANK."""
    stray = [name for name in ONE_PROCESS_ENV if os.environ.get(name, "0").strip() not in ("", "0")]
    if stray:
        world = os.environ.get("WORLD_SIZE", "")
        said = ", ".join(f"{name}={os.environ[name]}" for name in stray)
        raise UserError(
            f"{said} {'is' if len(stray) == 1 else 'are'} set but "
            f"{f'WORLD_SIZE={world}' if world.strip() else 'WORLD_SIZE is not'}; launch with torchrun (it sets "
            f"them all), or unset {' and '.join(stray)} to run one process"
        )


SRUN_TASKS = "SLURM_STEP_NUM_TASKS"
"""What srun sets in each task it starts: how many it started in this job step (the batch script itself, run
once, has none; SLURM_NTASKS is the allocation's, set there too)."""


def check_not_srun_tasks() -> None:
    """Refuse a process that srun started as one of several tasks without torchrun's variables (module docstring):
    each task would train the whole run alone into the same --out. Said by task 0 alone: srun gathers every
    task's stderr into one stream. Called where a process runs alone (WORLD_SIZE unset or 1)."""
    tasks = srun_tasks()
    if tasks <= 1:
        return
    world = os.environ.get("WORLD_SIZE", "")
    error = UserError(
        f"srun started {tasks} tasks of this command ({SRUN_TASKS}={tasks}) but "
        f"{f'WORLD_SIZE={world}' if world.strip() else 'WORLD_SIZE is not set'}, so each would train the whole "
        "run alone into the same --out; under srun run one task per node that starts torchrun (docs/scaling.md), "
        "or a single task (srun --ntasks=1)"
    )
    error.quiet = not first_srun_task()
    raise error


def srun_tasks() -> int:
    """How many tasks srun started of this command (`SRUN_TASKS`); 1 outside srun (or a value that is no count)."""
    tasks = os.environ.get(SRUN_TASKS, "").strip()
    return int(tasks) if tasks.isdigit() and int(tasks) > 1 else 1


def first_srun_task() -> bool:
    """False for the tasks after the first that srun started of this command (SLURM_PROCID 1, 2, ...); True for a
    process srun started alone or did not start."""
    return srun_tasks() == 1 or os.environ.get("SLURM_PROCID", "0").strip() in ("", "0")


RESTARTS = "TORCHELASTIC_RESTART_COUNT"
"""How many times torchrun has restarted the ranks (`--max-restarts`): 0 in its first start, unset without it."""


def elastic_restart() -> int:
    """How many times torchrun restarted this command (0: its first start, or no torchrun; a value that is no
    count reads as 0, as this only words a refusal). A restart runs the command with the same arguments, so one
    without --resume cannot continue the run its first start wrote."""
    value = os.environ.get(RESTARTS, "").strip()
    return int(value) if value.isdigit() else 0


def env_nodes(world_size: int) -> int | None:
    """How many nodes a torchrun launch of `world_size` processes spans: WORLD_SIZE over LOCAL_WORLD_SIZE (the
    processes torchrun started on this node); None where that is unset or does not divide (nodes started with
    different --nproc-per-node), which only words a lock's holder, so a guess is never said."""
    local = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
    if not (local.isdigit() and int(local) >= 1 and world_size % int(local) == 0):
        return None
    return world_size // int(local)


SAFE_PATH = "PYTHONSAFEPATH"


@contextlib.contextmanager
def children_without_working_folder() -> Iterator[None]:
    """Python processes started inside the block do not put the working folder (or their script's folder)
    first on their path (module docstring). A `PYTHONSAFEPATH` the user set, even empty (off), is theirs."""
    if SAFE_PATH in os.environ:
        yield
        return
    os.environ[SAFE_PATH] = "1"
    try:
        yield
    finally:
        os.environ.pop(SAFE_PATH, None)
