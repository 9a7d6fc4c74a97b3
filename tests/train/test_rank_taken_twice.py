"""A rank number taken by two processes of one launch is refused in one line (`rendezvous.RankTakenTwice`).

Without torchrun's agent store, a stranger (another launch on the same MASTER_ADDR:MASTER_PORT, or a RANK given
to two processes) arriving with a rank number already in use went unnoticed: rank 0 skipped its second arrival
and waited for the rank that never came (the join's timeout, 30 minutes), or the group formed with the stranger
in it. Here rank 0 serves a real TCPStore in this process and the peers meet it from a thread; every rank of the
launch comes after the duplicate, so that the old code ends (rank 0 not refusing) rather than hangs.
"""

from __future__ import annotations

import threading

import pytest
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
