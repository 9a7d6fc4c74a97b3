"""A round that torchrun restarts (`--max-restarts`) forms its group on keys of its own (the launch review of
2026-12-07; `train/rendezvous.py`).

torchrun's agent serves one store for all its rounds, and every round's group wrote its keys under the same
prefix: the restarted ranks read the dead ranks' gloo addresses and waited in gloo's connect until its timeout
(checked by hand: two CPU ranks, rank 1 SIGKILLed after a checkpoint, `--max-restarts 1`; the restarted round
hung, and finished with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, where the agent shares no store). Here two rounds of
two ranks meet on one agent store, as threads; what one round's group writes is not seen by the next.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import torch.distributed as dist

from encoderlab.train import rendezvous


def _round(agent: dist.TCPStore, first: int | None = None) -> dict[int, dist.Store]:
    """Each rank's group store for one round of two ranks on `agent`; `first`, if given, comes first and has
    arrived under the round token it read before the other rank starts."""
    stores: dict[int, dist.Store] = {}
    before = agent.get(rendezvous.ROUND).decode() if agent.check([rendezvous.ROUND]) else None
    arrivals = f"{rendezvous.ROUND}/{before}/arrivals"
    came = agent.add(arrivals, 0)

    def rank(r: int) -> None:
        launch = rendezvous.Launch(r, 2, "127.0.0.1", agent.port, agent_store=True)
        stores[r] = rendezvous.group_store(rendezvous.meet(launch, rendezvous.Joining(launch)))

    order = [first, 1 - first] if first is not None else [0, 1]
    threads = [threading.Thread(target=rank, args=(r,), daemon=True) for r in order]
    threads[0].start()
    if first == 1 and before is not None:  # rank 1 read the dead round's token and arrived under it
        while agent.add(arrivals, 0) == came:
            time.sleep(0.01)
    threads[1].start()
    for thread in threads:
        thread.join(60)
    assert sorted(stores) == [0, 1], "a rank of the round never met the other"
    return stores


def test_a_restarted_round_reads_no_group_key_of_the_round_before(monkeypatch):
    monkeypatch.setattr(rendezvous, "RECHECK", timedelta(seconds=0.2))  # 5 s in a run
    agent = dist.TCPStore("127.0.0.1", 0, 1, is_master=True, timeout=timedelta(seconds=30))
    monkeypatch.setattr(rendezvous, "JOIN_TIMEOUT", timedelta(seconds=30))
    first = _round(agent)
    first[1].set("0//cpu:gloo/rank_1", "the address of a rank that then died")  # as gloo's join writes it
    # one round's ranks share their keys: read through the other rank's connection with a wait, since a
    # TCPStore client's `set` does not wait for the server, so a `check` on another connection may come first
    first[0].wait(["0//cpu:gloo/rank_1"], timedelta(seconds=30))
    assert first[0].get("0//cpu:gloo/rank_1") == b"the address of a rank that then died"
    for restart in (0, 1):  # rank 0 first; then rank 1 first, reading the last round's token
        again = _round(agent, first=restart)
        assert not again[0].check(["0//cpu:gloo/rank_1"])  # was: the dead rank's address, gloo's hang
        again[1].set("0//cpu:gloo/rank_1", f"restart {restart}")
        assert again[0].get("0//cpu:gloo/rank_1") == f"restart {restart}".encode()
