"""How the ranks of a launch meet before the process group forms, and the one line each says when they cannot.

Design
  * torch's env:// start (what `dist.init_process_group` does by default) creates rank 0's TCPStore on
    MASTER_PORT and connects the other ranks to it, then gloo waits until every rank of WORLD_SIZE has come.
    Each process reads WORLD_SIZE for itself, so two that disagree (two hand-written commands) waited for a
    rank that would never come: the join's whole timeout (30 minutes), then a traceback. Here the store is made as torch makes it (`_store`), and before
    the group forms each rank writes its WORLD_SIZE under a key of its own (`Launch.key`): the other ranks
    read rank 0's and rank 0 reads each peer's as it comes, and a difference is refused at once, on both sides
    of it, naming both sizes (`WorldSizeDiffers`). Rank 0 learns who came from a counter each peer bumps
    (`ARRIVALS`), blocking in the store's wait for the next arrival: a few requests per peer on rank 0's store
    however long the peers take, where polling every peer's key made N*20 requests a second until all came. The group then forms on that store under the prefix the
    env:// start gives it (`group_store`: `init_process_group(store=...)` adds none of its own), and with the
    libuv choice that start reads (USE_LIBUV=0 opts out of libuv's store server, as under env://).
  * A rank number can come twice: a stranger process (another launch on the same MASTER_ADDR:MASTER_PORT, or a
    RANK given twice) joined the group as that rank, which hung or formed a corrupt group. Each peer claims its
    rank on a counter of its own (`Launch.claim`): a second claim is the duplicate, which refuses itself without
    writing its WORLD_SIZE over the first's but still arrives, so that rank 0, while it waits, sees that rank come
    twice and refuses too (`RankTakenTwice`), on the side whose log the user reads. Trade-off: a duplicate coming
    after rank 0 stopped waiting is refused on its side only (rank 0's group has formed with the first, and the
    duplicate stays out of it); a duplicate coming first is taken as the rank, and the real one refuses itself; a
    peer restarted by hand while rank 0 still waits counts as its own duplicate (the whole launch is started again).
  * A rank that is not rank 0 connects to whatever listens on MASTER_PORT. Where rank 0 could not listen
    there (the port taken: rank 0's `master-port-taken` line), that is another job: a plain socket never
    answers the TCPStore client (torch 2.13 waits past the store's own timeout), another job's store answers
    but never holds this run's rank 0 key. Those ranks waited for the join's timeout or for good. Rank 0's store
    is up and holds its key within moments of accepting a connection, so once something accepts, the rank gives
    it `ANSWER_S` to show rank 0 (`Joining`), and then says in one line what it found (`NotRankZero`).
    Until something accepts, it waits as before: a rank 0 started later is normal (and a host it cannot reach
    is the store's own connection error, as under env://).
  * Under torchrun the store is its agent's (TORCHELASTIC_USE_AGENT_STORE), up before any rank starts: the agent
    must answer within `ANSWER_S`, and WORLD_SIZE is not exchanged. torchrun gives every rank of a round the
    WORLD_SIZE its agents agreed on, and the agent's store outlives its restarts while nothing a rank can read
    names the round: TORCHELASTIC_RESTART_COUNT is each node's own count (an agent restarted for a new or
    restarted peer node does not add to it), so keys per restart left ranks of one round reading another
    round's keys, or waiting for the join's timeout for keys written under another count.
    The group's own keys had the same fault: gloo read each rank's address from the last round's keys (the dead
    ranks'), so a round restarted by `--max-restarts` waited in gloo's connect until its timeout (torch's env://
    start too, since the agent's store outlives its rounds: TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 avoided it). So
    each round's keys lie under a token its rank 0 draws (`_this_round`): rank 0 writes it, each peer arrives
    under the token it reads and waits for rank 0's welcome there; a peer that read a dead round's token (this
    round's rank 0 not yet come) hears none and reads the token again. Trade-off: a few store requests per peer
    every `RECHECK` while this round's rank 0 is late, in exchange for a round known to every rank alike.
  * Trade-off: a rank 0 too loaded to write one key within `ANSWER_S` of opening its store would be taken for a
    stranger; a minute is far beyond what that takes, and far below the 30 minutes it replaces.
  * The waits run on `distributed._join_group`'s joining thread: its main thread enforces `Joining`'s deadline
    in its polls (the blocked C++ call cannot be interrupted; the thread is abandoned with the process), so
    SIGTERM and Ctrl-C stop a waiting rank as before.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from torch.distributed import DistNetworkError, DistStoreError, PrefixStore, Store, TCPStore
from torch.distributed.constants import default_pg_timeout

from encoderlab.errors import UserError

ANSWER_S = 60.0
"""Seconds that what accepted a rank's connection on MASTER_PORT has to show this run's rank 0 (module docstring)."""

JOIN_TIMEOUT: timedelta = default_pg_timeout
"""How long ranks wait for each other to come (torch's default for the group, which the env:// start used)."""

ROUND = "encoderlab/launch/round"
"""Under torchrun's agent store: the token of the latest round's rank 0; each round's keys lie under it."""

RECHECK = timedelta(seconds=5)
"""How long a peer under torchrun's agent store waits for a welcome before it reads `ROUND` again."""

ARRIVALS = "encoderlab/launch/arrivals"
"""The store's counter of peers come so far (`store.add`): the n-th names its rank under `Launch.arrival(n)`."""


@dataclass(frozen=True)
class Launch:
    """This process's part of the launch, as torchrun's variables say (checked by `launchenv.check_launcher_env`)."""

    rank: int
    world_size: int
    host: str
    port: int
    agent_store: bool
    """True under torchrun: its agent serves the store, and every rank is a client of it."""

    @classmethod
    def from_env(cls) -> Launch:
        env = os.environ
        return cls(
            rank=int(env["RANK"]),
            world_size=int(env["WORLD_SIZE"]),
            host=env["MASTER_ADDR"],
            port=int(env["MASTER_PORT"]),
            agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE")
            == str(True),  # as torch's env:// start reads it
        )

    def key(self, rank: int) -> str:
        return f"encoderlab/launch/world_size/{rank}"

    def claim(self, rank: int) -> str:
        """The counter each peer bumps for its rank: above 1, that rank number was taken twice (`RankTakenTwice`)."""
        return f"encoderlab/launch/claims/{rank}"

    def arrival(self, number: int) -> str:
        """The key naming the rank that came `number`th (1, 2, ...) to rank 0's store (`_peers_agree`)."""
        return f"encoderlab/launch/arrival/{number}"


class Joining:
    """How far the joining thread has got, read by the main thread's polls: `overdue` once what accepted this
    rank's connection has not shown rank 0 within `ANSWER_S`."""

    def __init__(self, launch: Launch):
        self.launch = launch
        self._deadline: float | None = None

    def expect_answer(self) -> None:
        self._deadline = time.monotonic() + ANSWER_S

    def answered(self) -> None:
        self._deadline = None

    def overdue(self) -> NotRankZero | None:
        deadline = self._deadline
        if deadline is None or time.monotonic() < deadline:
            return None
        return NotRankZero(self.launch)


class NotRankZero(UserError):
    """What listens on MASTER_PORT is not this run's rank 0 (nor torchrun's store) (module docstring)."""

    def __init__(self, launch: Launch):
        super().__init__(
            f"rank {launch.rank} cannot join the process group: what listens on MASTER_PORT={launch.port} on "
            f"{launch.host} gave no sign of this run's rank 0 in {ANSWER_S:g} s (another job holds that port, or "
            "rank 0 could not start there); give each job a free MASTER_PORT and each process its own RANK "
            "(RANK=$SLURM_PROCID), or launch with torchrun (it sets them)"
        )


class WorldSizeDiffers(UserError):
    """Two ranks of one launch started with different WORLD_SIZE (module docstring)."""

    def __init__(self, launch: Launch, other: int, theirs: str):
        super().__init__(
            f"rank {launch.rank} was started with WORLD_SIZE={launch.world_size} but rank {other} with "
            f"WORLD_SIZE={theirs}; start every process of the run with the same WORLD_SIZE (torchrun sets it "
            "from --nnodes and --nproc-per-node), then launch them again"
        )


class RankTakenTwice(UserError):
    """Two processes came to one launch's store as the same rank (module docstring): said by rank 0 (`by_zero`)
    and by the one that came second."""

    def __init__(self, launch: Launch, rank: int, *, by_zero: bool):
        where = f"MASTER_ADDR={launch.host} MASTER_PORT={launch.port}"
        said = (
            f"rank 0 heard from rank {rank} twice on {where}"
            if by_zero
            else f"rank {rank} cannot join the process group: another process started with RANK={rank} came first "
            f"to this run's rank 0 on {where}"
        )
        super().__init__(
            f"{said} (two launches on one MASTER_ADDR:MASTER_PORT, or RANK={rank} given to two processes); give each "
            "job a free MASTER_PORT and each process its own RANK (RANK=$SLURM_PROCID), or launch with torchrun "
            "(it sets them), then launch again"
        )


def meet(launch: Launch, joining: Joining) -> Store:
    """The launch's store, once this rank and the ranks it reads agree on WORLD_SIZE (module docstring)."""
    store = _store(launch, joining)
    if launch.agent_store:  # torchrun gave every rank the same WORLD_SIZE (module docstring)
        return PrefixStore(f"{ROUND}/{_this_round(store, launch)}", store)
    if launch.rank == 0:
        store.set(launch.key(0), str(launch.world_size))
        _peers_agree(store, launch)
    else:
        taken = store.add(launch.claim(launch.rank), 1) > 1
        if not taken:  # a duplicate leaves the first's WORLD_SIZE as it is
            store.set(launch.key(launch.rank), str(launch.world_size))
        # after its key, which rank 0 reads once this names it; a duplicate arrives too, for rank 0 to see
        store.set(launch.arrival(store.add(ARRIVALS, 1)), str(launch.rank))
        if taken:
            raise RankTakenTwice(launch, launch.rank, by_zero=False)
        # rank 0's own store holds it at once
        theirs = store.get(launch.key(0)).decode()
        joining.answered()
        if theirs != str(launch.world_size):
            raise WorldSizeDiffers(launch, 0, theirs)
    return store


def _store(launch: Launch, joining: Joining) -> TCPStore:
    """The TCPStore torch's env:// start makes (rank 0 serves it unless torchrun's agent does), with the wait for
    what listens on MASTER_PORT split from the wait for its answer, which `joining` bounds."""
    if launch.rank == 0 and not launch.agent_store:
        return TCPStore(
            launch.host,
            launch.port,
            launch.world_size,
            is_master=True,
            timeout=JOIN_TIMEOUT,
            wait_for_workers=False,  # rank 0 checks each peer as it comes instead (`_peers_agree`)
            multi_tenant=True,
            use_libuv=os.environ.get("USE_LIBUV", "1") == "1",  # as the env:// start reads it
        )
    if _wait_until_listening(
        launch
    ):  # else nothing accepted: no stranger to name, the store's error says why
        joining.expect_answer()
    store = TCPStore(launch.host, launch.port, launch.world_size, is_master=False, timeout=JOIN_TIMEOUT)
    if launch.agent_store:
        joining.answered()  # torchrun's store answered; rank 0 may come later
    return store


def _this_round(store: Store, launch: Launch) -> str:
    """Under torchrun's agent store: the token of this round, the same on each of its ranks (module docstring).
    Rank 0 draws it and welcomes each peer that arrives under it; a peer that read an earlier round's token
    (its rank 0 dead, this round's not yet come) hears no welcome and reads the token again each `RECHECK`."""
    if launch.rank == 0:
        token = uuid.uuid4().hex
        store.set(ROUND, token)
        waiting, arrived = set(range(1, launch.world_size)), 0
        deadline = time.monotonic() + JOIN_TIMEOUT.total_seconds()
        while waiting:  # past the join's timeout, the store's own error names the arrival not come
            arrived += 1
            key = f"{ROUND}/{token}/arrival/{arrived}"
            store.wait([key], timedelta(seconds=max(deadline - time.monotonic(), 0.001)))
            rank = int(store.get(key))
            if rank in waiting:  # a peer that read the token again arrives again
                waiting.discard(rank)
                store.set(f"{ROUND}/{token}/welcome/{arrived}", "")
        return token
    token, deadline = "", time.monotonic() + JOIN_TIMEOUT.total_seconds()
    while True:
        seen = store.get(ROUND).decode()  # some round's rank 0 wrote it (else the store's timeout)
        # welcomed by its arrival's number: a dead round's rank 0 welcomed only earlier ones
        if seen != token:
            token, arrived = seen, store.add(f"{ROUND}/{seen}/arrivals", 1)
            store.set(f"{ROUND}/{token}/arrival/{arrived}", str(launch.rank))
        left = timedelta(seconds=max(deadline - time.monotonic(), 0.001))
        try:
            store.wait([f"{ROUND}/{token}/welcome/{arrived}"], min(RECHECK, left))
            return token
        except DistStoreError:
            if left <= RECHECK:
                raise  # the join's timeout: the store's own error, naming the welcome not come


def group_store(store: Store) -> Store:
    """`store` under the prefix the env:// start gives the default group's keys, apart from other users of a
    multi-tenant store (torchrun's agent's keys, this module's)."""
    return PrefixStore("default_pg", store)


def _wait_until_listening(launch: Launch) -> bool:
    """True once something accepts a connection on MASTER_PORT; False once the join's timeout has passed, or at
    another network error (an unknown host, no route), both left to the store's own connection as torch's were:
    `ANSWER_S` is not armed for them, which took an unreachable MASTER_ADDR for another job on its port."""
    deadline = time.monotonic() + JOIN_TIMEOUT.total_seconds()
    while time.monotonic() < deadline:
        try:
            socket.create_connection((launch.host, launch.port), timeout=1).close()
            return True
        except (ConnectionRefusedError, TimeoutError):
            time.sleep(0.2)  # rank 0 not started yet
        except OSError:
            return False
    return False


def _peers_agree(store: Store, launch: Launch) -> None:
    """Rank 0: read each peer's WORLD_SIZE as it comes, refusing the first that differs; past the join's timeout,
    the store's own wait says which never came (torch's timeout error, as the group's start raised).
    Each wait blocks in the store for the next arrival (`Launch.arrival`), so rank 0's store answers a few
    requests per peer however long the peers take (a poll of every peer's key each 50 ms made N*20 a second)."""
    waiting = {rank: launch.key(rank) for rank in range(1, launch.world_size)}
    came: set[int] = set()
    deadline = time.monotonic() + JOIN_TIMEOUT.total_seconds()
    arrived = 0
    while waiting:
        arrived += 1
        left = deadline - time.monotonic()
        try:
            store.wait([launch.arrival(arrived)], timedelta(seconds=max(left, 0.001)))
        except DistStoreError:
            break  # past the join's timeout: said below, naming the ranks that never came
        rank = int(store.get(launch.arrival(arrived)))
        if rank in came:
            raise RankTakenTwice(launch, rank, by_zero=True)
        if rank not in waiting:
            continue  # out of range (a stranger of another WORLD_SIZE): gloo's join says so, as before
        came.add(rank)
        theirs = store.get(waiting.pop(rank)).decode()
        if theirs != str(launch.world_size):
            raise WorldSizeDiffers(launch, rank, theirs)
    if waiting:
        store.wait(list(waiting.values()), timedelta(milliseconds=1))


def port_taken(exc: BaseException) -> UserError | None:
    """The one line for rank 0 unable to listen on MASTER_PORT (EADDRINUSE), else None. A launch that exports
    torchrun's variables itself (docs/scaling.md, SLURM) with a port another job on the node holds, or with RANK=0
    in two processes of one node (RANK=$SLURM_LOCALID for $SLURM_PROCID), was torch's DistNetworkError traceback."""
    if not (isinstance(exc, DistNetworkError) and "EADDRINUSE" in str(exc)):
        return None
    port, host = os.environ.get("MASTER_PORT"), os.environ.get("MASTER_ADDR")
    return UserError(
        f"rank 0 cannot start the process group: MASTER_PORT={port} on {host} is in use (another job, or another "
        "process started with RANK=0); give each job a free MASTER_PORT and each process its own RANK "
        "(RANK=$SLURM_PROCID), or launch with torchrun (it sets them)"
    )
