"""How the ranks of a launch meet before the process group forms, and the one line each says when they cannot.

Design
  * torch's env:// start (what `dist.init_process_group` does by default) creates rank 0's TCPStore on
    MASTER_PORT and connects the other ranks to it, then gloo waits until every rank of WORLD_SIZE has come.
    Each process reads WORLD_SIZE for itself, so two that disagree (two hand-written commands) waited for a
    rank that would never come: the join's whole timeout (30 minutes), then a traceback. Here the store is made as torch makes it (`_store`), and before
    the group forms each rank writes its WORLD_SIZE under a key of its own (`Launch.key`): the other ranks
    read rank 0's and rank 0 reads each peer's as it comes, and a difference is refused at once, on both sides
    of it, naming both sizes (`WorldSizeDiffers`). Rank 0 learns who came from the arrivals (`ARRIVALS`),
    blocking in the store's wait for the next one: a few requests per peer on rank 0's store however long the
    peers take, where polling every peer's key made N*20 requests a second until all came. The group then forms on that store under the prefix the
    env:// start gives it (`group_store`: `init_process_group(store=...)` adds none of its own), and with the
    libuv choice that start reads (USE_LIBUV=0 opts out of libuv's store server, as under env://).
  * A rank number can come twice: a stranger process (another launch on the same MASTER_ADDR:MASTER_PORT, or a
    RANK given twice) joined the group as that rank, which hung or formed a corrupt group. Each peer claims its
    rank on a counter of its own (`Launch.claim`): a second claim is the duplicate, which refuses itself without
    writing its WORLD_SIZE over the first's but still arrives, saying its claim's count, so that rank 0, while it
    waits, refuses too (`RankTakenTwice`), on the side whose log the user reads; also where the first claimer was
    killed before it arrived (rank 0 took the duplicate's arrival for the rank's, then waited for a WORLD_SIZE key
    nobody wrote: the store's timeout). Trade-off: a duplicate coming after rank 0 stopped waiting is refused on
    its side only (rank 0's group has formed with the first; the duplicate writes nothing the group reads, and
    stays out of it); a duplicate claiming first is taken as the rank, and the real one is refused as the
    duplicate; a peer restarted by hand while rank 0 still waits counts as its own duplicate (the whole launch is
    started again).
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
  * An arrival is a number from a counter (`store.add`) and the slot of that number, naming the rank. A peer that
    died between counting and filling its slot (SIGKILL, the OOM killer) left rank 0 waiting on that slot for
    the join's timeout, deaf to every arrival after it, and then forming the group with the dead rank, whose
    WORLD_SIZE key it found. So a peer fills its slot only if it is still empty (`compare_set`, one request)
    and then cancels every empty slot below its own (`_arrive`): rank 0 waits on a slot only while no later
    arrival is filled, and takes as come only ranks whose slot it read. A live peer overtaken between its two
    requests finds its slot cancelled and counts again. Trade-off: three requests more per peer (the slot below,
    and each slot set again to wake rank 0's wait on torch's legacy store server, `_fill`), against a wait of the
    join's timeout (30 minutes) and then gloo's; a hole stays only where the peer above it died too, between its
    fill and its walk down.
  * Both waits for the peers, for WORLD_SIZE and under torchrun's agent store for the round, arrive and read
    the arrivals alike (`_arrive`, `_arrivals`); what rank 0 checks of each arrival differs and stays with each:
    a WORLD_SIZE and a rank come twice (`_peers_agree`), or a welcome for a rank of this round (`_this_round`).
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
from collections.abc import Iterator
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

ARRIVALS = "encoderlab/launch"
"""Where the peers of a launch without torchrun's agent store arrive (`_arrive`): the counter `ARRIVALS/arrivals`,
the n-th arrival's slot `ARRIVALS/arrival/n`, which names its rank."""

CANCELLED = "-"
"""What a slot holds, followed by the canceller's own number, once a later arrival cancelled it (`_arrive`)."""


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
        claims = store.add(launch.claim(launch.rank), 1)
        if claims == 1:  # a duplicate leaves the first's WORLD_SIZE as it is
            store.set(launch.key(launch.rank), str(launch.world_size))
        # after its key, which rank 0 reads once this names it; a duplicate arrives too, saying it is one, for
        # rank 0 to refuse even where the first claimer never arrives (killed while the ranks meet)
        _arrive(store, ARRIVALS, f"{launch.rank} {claims}")
        if claims > 1:
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
    deadline = time.monotonic() + JOIN_TIMEOUT.total_seconds()
    if launch.rank == 0:
        token = uuid.uuid4().hex
        store.set(ROUND, token)
        waiting, arrivals = set(range(1, launch.world_size)), _arrivals(store, f"{ROUND}/{token}", deadline)
        while waiting:  # past the join's timeout, the store's own error names the arrival not come
            number, said = next(arrivals)
            if int(said) in waiting:  # a peer that read the token again arrives again
                waiting.discard(int(said))
                store.set(f"{ROUND}/{token}/welcome/{number}", "")
        return token
    token = ""
    while True:
        seen = store.get(ROUND).decode()  # some round's rank 0 wrote it (else the store's timeout)
        # welcomed by its arrival's number: a dead round's rank 0 welcomed only earlier ones
        if seen != token:
            token, number = seen, _arrive(store, f"{ROUND}/{seen}", str(launch.rank))
        left = timedelta(seconds=max(deadline - time.monotonic(), 0.001))
        try:
            store.wait([f"{ROUND}/{token}/welcome/{number}"], min(RECHECK, left))
            return token
        except DistStoreError:
            if left <= RECHECK:
                raise  # the join's timeout: the store's own error, naming the welcome not come


def _arrive(store: Store, where: str, said: str) -> int:
    """A peer's arrival under `where`: its number, whose slot holds `said` (module docstring). The slot is filled
    in the request that checks it empty, and every empty slot below it is then cancelled, so a slot whose peer
    died between its count and its fill holds rank 0 back from no arrival after it; a live peer whose slot was
    cancelled so (counted just before a later one filled) counts again."""
    while True:
        number = store.add(f"{where}/arrivals", 1)
        if _fill(store, f"{where}/arrival/{number}", said) == said:
            break
    mark = f"{CANCELLED}{number}"  # its own, so that it knows which slots it cancelled itself
    # down to the first slot it did not cancel: filled, or cancelled by a later arrival that goes on below it
    for below in range(number - 1, 0, -1):
        if _fill(store, f"{where}/arrival/{below}", mark) != mark:
            break
    return number


def _fill(store: Store, slot: str, value: str) -> str:
    """`value` into `slot` if it is empty (`compare_set`), and what the slot then holds, for good. Set again to
    that: torch's legacy store server (USE_LIBUV=0) wakes no wait on a `compare_set`, and a wait on the slot is
    rank 0's (`_arrivals`); a peer that filled it and died before this is woken for by the next one's walk."""
    held = store.compare_set(slot, "", value).decode()
    store.set(slot, held)  # the value it already holds: only the wake is new
    return held


def _arrivals(store: Store, where: str, deadline: float) -> Iterator[tuple[int, str]]:
    """Rank 0: each arrival under `where` (`_arrive`), its number and what it said, in the order they came,
    blocking in the store's wait for the next: a few requests per arrival however long the peers take (a poll
    of every peer's key each 50 ms made N*20 a second). Past `deadline`, the store's own wait error."""
    number = 0
    while True:
        number += 1
        slot = f"{where}/arrival/{number}"
        store.wait([slot], timedelta(seconds=max(deadline - time.monotonic(), 0.001)))
        said = store.get(slot).decode()
        if not said.startswith(CANCELLED):
            yield number, said


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
    """Rank 0: read each peer's WORLD_SIZE as it arrives (`_arrivals`), refusing the first that differs; past the
    join's timeout, a timeout error of the store's kind names the ranks that never arrived (torch's error, as the
    group's start raised), even where one wrote its WORLD_SIZE before it died."""
    waiting = set(range(1, launch.world_size))
    arrivals = _arrivals(store, ARRIVALS, time.monotonic() + JOIN_TIMEOUT.total_seconds())
    while waiting:
        try:
            rank, claims = (int(part) for part in next(arrivals)[1].split())
        except DistStoreError as late:
            never = ", ".join(str(rank) for rank in sorted(waiting))
            raise DistStoreError(
                f"rank 0 waited {JOIN_TIMEOUT} for its peers on MASTER_ADDR={launch.host} "
                f"MASTER_PORT={launch.port}: rank{'s' if len(waiting) > 1 else ''} {never} never came"
            ) from late
        if claims > 1 and 0 < rank < launch.world_size:  # claimed second, whether or not the first arrived
            raise RankTakenTwice(launch, rank, by_zero=True)
        if rank not in waiting:
            continue  # out of range (a stranger of another WORLD_SIZE): gloo's join says so, as before
        waiting.discard(rank)
        theirs = store.get(launch.key(rank)).decode()  # written before it arrived
        if theirs != str(launch.world_size):
            raise WorldSizeDiffers(launch, rank, theirs)


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
