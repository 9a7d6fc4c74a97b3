"""A rank number taken by two processes of one launch is refused in one line (`rendezvous.RankTakenTwice`).

Without torchrun's agent store, a stranger (another launch on the same MASTER_ADDR:MASTER_PORT, or a RANK given
to two processes) arriving with a rank number already in use went unnoticed: rank 0 skipped its second arrival
and waited for the rank that never came (the join's timeout, 30 minutes), or the group formed with the stranger
in it. Here rank 0 serves a real TCPStore in this process and the peers meet it from a thread; every rank of the
launch comes after the duplicate, so that the old code ends (rank 0 not refusing) rather than hangs.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import torch.distributed as dist
from tests.train.helpers import free_ports

from encoderlab.train import rendezvous

FIX = (
    "(two launches on one MASTER_ADDR:MASTER_PORT, or RANK=1 given to two processes); give each job a free "
    "MASTER_PORT and each process its own RANK (RANK=$SLURM_PROCID), or launch with torchrun (it sets them), "
    "then launch again"
)


def _launch(rank: int, port: int, world_size: int) -> rendezvous.Launch:
    return rendezvous.Launch(rank=rank, world_size=world_size, host="127.0.0.1", port=port, agent_store=False)


def _meet(launch: rendezvous.Launch, said: list) -> None:
    try:
        rendezvous.meet(launch, rendezvous.Joining(launch))
        said.append(None)
    except rendezvous.RankTakenTwice as exc:
        said.append(str(exc))


@pytest.fixture
def zero():
    """Rank 0 of a launch of 3 processes, its store served here."""
    launch = _launch(0, free_ports(1)[0], 3)
    store = rendezvous._store(launch, rendezvous.Joining(launch))
    store.set(launch.key(0), str(launch.world_size))
    return launch, store


def test_a_rank_that_comes_twice_while_rank_zero_waits_is_refused_by_rank_zero_and_the_duplicate(zero):
    launch, store = zero
    said: list = []
    peers = threading.Thread(
        target=lambda: [_meet(_launch(r, launch.port, 3), said) for r in (1, 1, 2)], daemon=True
    )
    peers.start()
    with pytest.raises(rendezvous.UserError) as refused:
        rendezvous._peers_agree(store, launch)
    peers.join(30)
    where = f"MASTER_ADDR=127.0.0.1 MASTER_PORT={launch.port}"
    assert str(refused.value) == f"rank 0 heard from rank 1 twice on {where} {FIX}"
    assert said == [
        None,  # the first to come is taken as rank 1
        f"rank 1 cannot join the process group: another process started with RANK=1 came first to this run's "
        f"rank 0 on {where} {FIX}",
        None,  # rank 2, which the old code's rank 0 waited for and formed the group with
    ]


@pytest.mark.parametrize("size", [3, 4])  # RANK=1 given twice in one launch; a stranger of another launch
def test_a_duplicate_that_comes_after_rank_zero_stopped_waiting_refuses_itself_and_leaves_the_first_key(
    zero, size
):
    launch, store = zero
    said: list = []
    peers = threading.Thread(
        target=lambda: [_meet(_launch(r, launch.port, 3), said) for r in (1, 2)], daemon=True
    )
    peers.start()
    rendezvous._peers_agree(store, launch)
    peers.join(30)
    assert said == [None, None]
    _meet(_launch(1, launch.port, size), said)  # the same WORLD_SIZE was joined without a word
    assert said[-1].startswith("rank 1 cannot join the process group: another process started with RANK=1")
    assert store.get(launch.key(1)) == b"3"  # the first's WORLD_SIZE, not the stranger's


def test_a_duplicate_that_comes_after_the_group_formed_changes_no_key_the_group_reads(zero):
    """The stranger that comes late is refused on its side only; what it writes on rank 0's store (its claim's
    and its arrival's counts, its own arrival) is nothing the formed group or its meeting reads again."""
    launch, store = zero
    stores = {0: store}

    def peer(rank: int) -> None:
        mine = _launch(rank, launch.port, 3)
        stores[rank] = rendezvous.meet(mine, rendezvous.Joining(mine))

    def form(rank: int, groups: dict) -> None:
        group = rendezvous.group_store(stores[rank])
        groups[rank] = dist.ProcessGroupGloo(group, rank, 3, timedelta(seconds=30))

    _together([lambda: rendezvous._peers_agree(store, launch), lambda: peer(1), lambda: peer(2)])
    groups: dict = {}
    _together([lambda rank=rank: form(rank, groups) for rank in range(3)])
    before = _held(store)
    assert sorted(groups) == [0, 1, 2] and any(key.startswith("default_pg/") for key in before)
    said: list = []
    _meet(_launch(1, launch.port, 3), said)
    assert said[0].startswith("rank 1 cannot join the process group: another process started with RANK=1")
    after = _held(store)
    changed = {key for key in before if after[key] != before[key]}
    assert changed == {launch.claim(1), f"{rendezvous.ARRIVALS}/arrivals"}  # counts nobody reads again
    assert [key for key in after if key not in before] == [f"{rendezvous.ARRIVALS}/arrival/3"]


def _together(calls: list) -> None:
    threads = [threading.Thread(target=call, daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)


def _held(store) -> dict[str, bytes]:
    keys = store.list_keys()
    return dict(zip(keys, store.multi_get(keys), strict=True))
