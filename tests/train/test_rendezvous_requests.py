"""Rank 0's store answers a few requests per peer while the ranks meet, however long the peers take to come
(the launch review of 2026-12-07; `train/rendezvous.py`).

Rank 0 checked every peer's WORLD_SIZE key each 50 ms until all had come: N*20 requests a second on its store
from rank 0 alone, for as long as the slowest rank took to start (minutes, where a node's imports are slow). It
now blocks in the store's wait for the next peer to come. Here the peers come only once rank 0 blocks in a wait
or has made `PATIENCE` requests, so the old polling made at least that many; the count is of requests, not time.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from tests.train.helpers import free_ports

from encoderlab.train import rendezvous

PEERS = 3
PATIENCE = 100
"""Requests after which the peers come anyway (the old code polled until they did)."""


class _Counted:
    """Rank 0's store, counting the requests made through it, that lets the peers start (`arrive`) once rank 0
    blocks in a wait longer than a moment, or once `PATIENCE` requests have been made."""

    def __init__(self, store, arrive):
        self.store, self.arrive, self.requests = store, arrive, 0

    def __getattr__(self, name):
        call = getattr(self.store, name)

        def counted(*args):
            self.requests += 1
            blocking = name == "wait" and len(args) > 1 and args[1] > timedelta(seconds=1)
            if blocking or self.requests >= PATIENCE:
                self.arrive()
            return call(*args)

        return counted


def _launch(rank: int, port: int, world_size: int = PEERS + 1) -> rendezvous.Launch:
    return rendezvous.Launch(rank=rank, world_size=world_size, host="127.0.0.1", port=port, agent_store=False)


def _peers(port: int, sizes: dict[int, int], said: list) -> threading.Thread:
    def come() -> None:
        for rank, size in sizes.items():
            launch = _launch(rank, port, size)
            try:
                rendezvous.meet(launch, rendezvous.Joining(launch))
            except rendezvous.WorldSizeDiffers as exc:
                said.append(str(exc))

    return threading.Thread(target=come, daemon=True)


def _rank_zero(monkeypatch, sizes: dict[int, int]) -> tuple[_Counted, threading.Thread, list]:
    monkeypatch.setattr(rendezvous, "_POLL_S", 0.0, raising=False)  # the old code's poll, made quick here
    port = free_ports(1)[0]
    zero = _launch(0, port)
    served = rendezvous._store(zero, rendezvous.Joining(zero))
    served.set(zero.key(0), str(zero.world_size))
    said: list = []
    peers = _peers(port, sizes, said)
    started = []

    def arrive() -> None:
        if not started:
            started.append(peers.start())

    return _Counted(served, arrive), peers, said


def test_rank_zero_waits_for_its_peers_in_a_few_requests_each_not_in_polls(monkeypatch):
    store, peers, said = _rank_zero(monkeypatch, {rank: PEERS + 1 for rank in range(1, PEERS + 1)})
    rendezvous._peers_agree(store, _launch(0, 0))
    peers.join(30)
    assert not peers.is_alive() and said == []
    assert store.requests <= 3 * PEERS, store.requests  # was: every peer's key each poll until all had come


def test_rank_zero_still_refuses_the_first_peer_whose_world_size_differs(monkeypatch):
    store, peers, said = _rank_zero(monkeypatch, {1: PEERS + 1, 2: PEERS + 2})
    with pytest.raises(rendezvous.WorldSizeDiffers) as refused:
        rendezvous._peers_agree(store, _launch(0, 0))
    peers.join(30)
    assert str(refused.value).startswith(f"rank 0 was started with WORLD_SIZE={PEERS + 1} but rank 2 with")
    assert said == [str(rendezvous.WorldSizeDiffers(_launch(2, 0, PEERS + 2), 0, str(PEERS + 1)))]
