"""Under GLOO_SOCKET_IFNAME, a rank that died on this node is known for this node's (the launch review of
2026-12-07; `train/peerloss.py`).

gloo's message names the dead peer's address on the interface gloo uses, which GLOO_SOCKET_IFNAME picks, and that
address need not be one the host's name resolves to (here the name resolves to loopback alone, as on hosts whose
/etc/hosts names 127.0.0.1). LOCAL_RANK 1 then did not take the dead peer for its own node's LOCAL_RANK 0, and
nobody on the node said the line (checked by hand: three CPU ranks under torchrun, GLOO_SOCKET_IFNAME=eth0, rank
0 SIGKILLed: the two survivors exited 1 without a word).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from encoderlab.train import peerloss
from encoderlab.train.distributed import World

GONE = "[../gloo/transport/tcp/pair.cc:537] Read error [{}]:4321: Connection reset by peer"


def _an_interface() -> tuple[str, str]:
    """A non-loopback interface of this host and its IPv4 address, as `ip` lists them."""
    if shutil.which("ip") is None:
        pytest.skip("no `ip` to list this host's interfaces")
    listed = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    for line in listed.splitlines():  # "2: eth0    inet 192.0.2.2/24 brd ... scope global eth0 ..."
        fields = line.split()
        if fields[1] != "lo" and "inet" in fields:
            return fields[1], fields[fields.index("inet") + 1].partition("/")[0]
    pytest.skip("this host has no non-loopback IPv4 interface")


def test_local_rank_one_says_it_where_the_dead_peer_had_this_hosts_gloo_interface_address(monkeypatch):
    interface, address = _an_interface()
    monkeypatch.setattr(peerloss.socket, "gethostbyname_ex", lambda name: (name, [], ["127.0.0.1"]))
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    gone, world = RuntimeError(GONE.format(address)), World(rank=1, world_size=8, local_rank=1)
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    assert lost_peer_quiet(gone, world)  # gloo bound where the name resolves: not this address
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", f"no-such-interface,{interface}")
    assert not lost_peer_quiet(gone, world)  # was: quiet, and nobody on the node said it


def lost_peer_quiet(error: RuntimeError, world: World) -> bool:
    lost = peerloss.lost_peer(error, world, None)
    assert lost is not None
    return lost.quiet
