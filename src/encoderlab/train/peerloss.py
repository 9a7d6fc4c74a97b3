"""A peer rank's death mid-run, said in one line by the ranks it leaves behind.

Design
  * Under gloo a rank that dies (SIGKILL, the OOM killer, a crash) closes its sockets, and each rank waiting on
    it in a collective gets a RuntimeError from gloo's TCP transport: "Read error [ADDR]:PORT: Connection reset
    by peer" (or "Connection closed by peer", or a write's "Broken pipe"), raised by the collective itself or,
    inside DDP's backward, wrapped by the comm hook's future ("Got the following error when running the
    callback: RuntimeError: ..."). `pretrain` printed it as a traceback above torchrun's summary, which read as
    a bug of encoderlab's rather than as "another rank died; resume".
  * `lost_peer` recognises exactly that and nothing more: a RuntimeError raised by gloo's transport (its text
    names gloo's source file, `_GLOO`) holding one of gloo's words for a connection its peer closed (`GONE`), in
    a process among several ranks. The words alone are not gloo's: c10d's TCPStore and NCCL's sockets say them
    too, and a line saying "gloo:" under NCCL (docs/scaling.md: a traceback and torchrun's summary) misled.
    Anything else keeps its traceback: a bug, a refusal (a `UserError` already), and gloo's timeout too, whose peer is hung rather than known to be dead.
    Trade-off: a bug of ours that raised a RuntimeError quoting those words would be taken for a peer's death;
    none does, and the original stays chained as the line's cause (`raise ... from`).
  * Which rank died is not in gloo's message, only its address. With two ranks it is the other one; with more,
    the line names the address and leaves the rank to torchrun's summary (which names the rank that failed
    first, and that rank's log says why).
  * NCCL: a dead peer ends the others through NCCL's watchdog (its timeout), which aborts the process; no Python
    exception reaches here, and torchrun's summary is what there is (docs/scaling.md).
  * Said once per node (by LOCAL_RANK 0), as an interruption is: every rank of a node may lose the same peer, and
    each printing it made one line per GPU. But the rank that died may be that LOCAL_RANK 0 (`_says_it`): then
    nobody on its node said a word (seen with two ranks on one node, rank 0 killed: rank 1 exited 1 in silence).
    So with two ranks the survivor always says it (it is the only one left), and with more, LOCAL_RANK 1 says it
    too where the dead peer's address is this host's: gloo's address for a rank is that of the interface
    GLOO_SOCKET_IFNAME names where it is set (an address the host's name need not resolve to), else the one
    its name resolves to, so both count (`_on_this_host`). Trade-off: another local rank's death on a node whose
    LOCAL_RANK 0 lives is then said twice there, against never where LOCAL_RANK 0 died.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import struct
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.launchenv import first_on_its_node
from encoderlab.model.runlayout import checkpoint_dir, complete_checkpoints
from encoderlab.train.distributed import World

GONE = ("Connection reset by peer", "Connection closed by peer", "Broken pipe")
"""gloo's words for a connection that its peer closed (gloo/transport/tcp/pair.cc, through torch 2.13)."""

_GLOO = "gloo/transport/"
"""Where gloo's transport errors come from, as their text names the source file ("[.../gloo/transport/tcp/pair.cc:553]
Connection closed by peer [127.0.0.1]:6555", torch 2.x's bundled gloo; DDP's comm hook keeps it in its wrapper)."""

_SIOCGIFADDR = 0x8915
"""Linux's ioctl for an interface's IPv4 address (linux/sockios.h)."""

_ADDRESS = re.compile(r"\[([0-9A-Fa-f.:]+)\]:\d+")
"""The peer's address in gloo's message ("[10.0.0.2]:43210"); the source file's "[.../pair.cc:537]" has slashes."""


class PeerLost(UserError):
    """A rank stopped because another rank of its run died mid-run: exit 1, as a rank stopped by another's
    failed write (docs/errors.md), not 2 (nothing in the input was wrong)."""

    exit_code = 1


def lost_peer(error: BaseException, world: World, run_dir: Path | None) -> PeerLost | None:
    """The one line for `error` when it is a collective's failure because a peer rank died (module docstring),
    naming that rank where it is known and the checkpoint a `--resume` continues from; None for anything else."""
    if world.world_size < 2 or not isinstance(error, RuntimeError):
        return None
    text = str(error)
    if _GLOO not in text:
        return None
    said = next((words for words in GONE if words in text), None)
    if said is None:
        return None
    address = _ADDRESS.search(text)
    who = (
        f"rank {1 - world.rank}"
        if world.world_size == 2
        else f"the rank at {address.group(1)}"
        if address
        else "another rank"
    )
    lost = PeerLost(
        f"{who} stopped mid-run (gloo: {said}), so rank {world.rank} on {socket.gethostname()} cannot go on; "
        "that rank's own log and torchrun's summary say why; rerun the same torchrun command with --resume to "
        f"continue {_from_where(run_dir)}"
    )
    lost.quiet = not _says_it(world, address.group(1) if address else None)
    return lost


def _says_it(world: World, address: str | None) -> bool:
    """Whether this rank prints the line (module docstring): each node's first process, the sole survivor of two
    ranks, and LOCAL_RANK 1 where the dead peer was on this host (so maybe its LOCAL_RANK 0)."""
    if first_on_its_node() or world.world_size == 2:
        return True
    return world.local_rank == 1 and address is not None and _on_this_host(address)


def _on_this_host(address: str) -> bool:
    """Whether `address` is this host's: a loopback address, one its name resolves to (where gloo binds by
    default), or that of an interface GLOO_SOCKET_IFNAME names (where gloo binds then: an address the name need
    not resolve to, so a LOCAL_RANK 0 killed there went unsaid)."""
    if address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1"):
        return True
    names = [name for name in os.environ.get("GLOO_SOCKET_IFNAME", "").split(",") if name]
    if address in {_ipv4_of(name) for name in names}:
        return True
    try:
        return address in socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        return False


def _ipv4_of(interface: str) -> str | None:
    """The IPv4 address of this host's `interface` (Linux's SIOCGIFADDR), or None where it has none.
    Trade-off: an interface gloo reaches over IPv6 alone is not matched; its LOCAL_RANK 0 says the line."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            asked = struct.pack("256s", interface.encode()[:15])
            return socket.inet_ntoa(fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, asked)[20:24])
    except OSError:
        return None


def _from_where(run_dir: Path | None) -> str:
    """Where a `--resume` continues: the run's last complete checkpoint, or its start when there is none."""
    done = complete_checkpoints(run_dir) if run_dir is not None and run_dir.is_dir() else []
    if not done:
        return "(no checkpoint was written yet, so it starts again from step 0)"
    return f"from its last complete checkpoint, step {done[-1]} ({checkpoint_dir(run_dir, done[-1])})"
