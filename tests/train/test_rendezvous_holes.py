"""A peer that dies just after counting its arrival does not stop rank 0 from reading the peers after it, nor
is it taken for a rank that came (`rendezvous._arrive`; the launch review of 2026-12-07).

A peer counted its arrival (`store.add`) and then, in a second request, wrote the key naming its rank under
that count. Dying between the two (SIGKILL, the OOM killer) left a count whose key never came: rank 0 waited on
it for the join's timeout, reading none of the arrivals after it (a WORLD_SIZE that differs was refused by the
peer only), and then, finding the dead peer's WORLD_SIZE key, went on to form the group with it (gloo's own
timeout after that). Here rank 0 serves a real TCPStore in this process and the peers meet it from a thread;
the dying peer is one whose store stops it right after that count. The join's timeout is shortened so that the
old code ends rather than waits half an hour; nothing here measures time.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from tests.train.helpers import free_ports

from encoderlab.train import rendezvous


class _Died(Exception):
    """The dying peer's end, right after the store counted its arrival."""


class _AfterCounting:
    """A peer's store that calls `then` once the peer has counted on `counter` (an `add` on a key ending so: its
    arrival, or its claim to its rank): to die there, or to let another peer arrive whole before it goes on."""

    def __init__(self, store, then, counter: str):
        self.store, self.then, self.counter = store, then, counter

    def __getattr__(self, name):
        call = getattr(self.store, name)

        def then_maybe(*args):
            done = call(*args)
            if name == "add" and self.counter in args[0] and self.then is not None:
                then, self.then = self.then, None
                then()
            return done

        return then_maybe


def _launch(rank: int, port: int, world_size: int = 3) -> rendezvous.Launch:
    return rendezvous.Launch(rank=rank, world_size=world_size, host="127.0.0.1", port=port, agent_store=False)


def _meet(launch: rendezvous.Launch, said: list) -> None:
    try:
        rendezvous.meet(launch, rendezvous.Joining(launch))
        said.append(None)
    except (_Died, rendezvous.UserError) as exc:
        said.append(type(exc).__name__)


def _die() -> None:
    raise _Died


def _peers(
    monkeypatch, port: int, sizes: list, then, counter: str = "/arrivals"
) -> tuple[threading.Thread, list]:
    """The peers `sizes` names ((rank, WORLD_SIZE) each) meet rank 0 in order from a thread, the first calling
    `then` right after counting on `counter` (`_AfterCounting`)."""
    made, said, first = rendezvous._store, [], []

    def store(launch, joining):
        if first:
            return made(launch, joining)
        first.append(launch)
        return _AfterCounting(made(launch, joining), then, counter)

    monkeypatch.setattr(rendezvous, "_store", store)

    def come() -> None:
        for rank, size in sizes:
            _meet(_launch(rank, port, size), said)

    return threading.Thread(target=come, daemon=True), said


@pytest.fixture
def zero(monkeypatch, request):
    """Rank 0 of a launch of 3 processes, its store served here (by libuv's server unless the test's parameter
    is USE_LIBUV=0: torch's legacy one, which wakes no wait on a `compare_set`), its join's timeout a few
    seconds."""
    monkeypatch.setenv("USE_LIBUV", getattr(request, "param", "1"))
    monkeypatch.setattr(rendezvous, "JOIN_TIMEOUT", timedelta(seconds=8))  # bounds the old code's wait
    launch = _launch(0, free_ports(1)[0])
    store = rendezvous._store(launch, rendezvous.Joining(launch))
    store.set(launch.key(0), str(launch.world_size))
    return launch, store


@pytest.mark.parametrize("zero", ["1", "0"], indirect=True, ids=["libuv", "legacy"])
def test_rank_zero_reads_the_arrivals_after_one_that_died_counted(zero, monkeypatch):
    launch, store = zero
    peers, said = _peers(monkeypatch, launch.port, [(1, 3), (2, 4)], _die)
    peers.start()
    with pytest.raises(rendezvous.WorldSizeDiffers) as refused:  # was: no word from rank 0 (the count's key)
        rendezvous._peers_agree(store, launch)
    peers.join(30)
    assert str(refused.value).startswith("rank 0 was started with WORLD_SIZE=3 but rank 2 with WORLD_SIZE=4")
    assert said == ["_Died", "WorldSizeDiffers"]


def test_rank_zero_does_not_form_the_group_with_a_peer_that_died_counted(zero, monkeypatch):
    launch, store = zero
    peers, said = _peers(monkeypatch, launch.port, [(1, 3), (2, 3)], _die)
    peers.start()
    peers.join(30)
    assert said == ["_Died", None]
    # every peer that came has arrived: rank 0's wait for the dead one needs no more than a second to end
    monkeypatch.setattr(rendezvous, "JOIN_TIMEOUT", timedelta(seconds=1))
    with pytest.raises(rendezvous.DistStoreError, match="rank 1 never came"):  # was: went on to the group
        rendezvous._peers_agree(store, launch)


@pytest.mark.parametrize("zero", ["1", "0"], indirect=True, ids=["libuv", "legacy"])
def test_a_live_peer_whose_counted_arrival_a_later_one_passed_arrives_again(zero, monkeypatch):
    launch, store = zero
    second: list = []
    peers, said = _peers(monkeypatch, launch.port, [(1, 3)], lambda: _meet(_launch(2, launch.port), second))
    peers.start()
    rendezvous._peers_agree(store, launch)
    peers.join(30)
    assert said == [None] and second == [None]
    # rank 2 filled its arrival first and cancelled rank 1's, which rank 1 then counted again
    assert store.get(f"{rendezvous.ARRIVALS}/arrival/1").startswith(rendezvous.CANCELLED.encode())


def test_rank_zero_refuses_a_rank_claimed_again_after_its_first_claimer_died_before_arriving(
    zero, monkeypatch
):
    launch, store = zero
    peers, said = _peers(monkeypatch, launch.port, [(1, 3), (1, 3), (2, 3)], _die, counter="/claims/")
    peers.start()
    with pytest.raises(rendezvous.RankTakenTwice) as refused:  # was: the group formed without a rank 1
        rendezvous._peers_agree(store, launch)
    peers.join(30)
    assert str(refused.value).startswith("rank 0 heard from rank 1 twice on")
    assert said == ["_Died", "RankTakenTwice", None]
