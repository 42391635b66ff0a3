"""A second channel to a guest's host: the board's CPU, read while the guest runs.

Once QEMU runs in the foreground of the host's shell, the console is the guest's: the host's
``/proc/stat`` can no longer be read there. So before the guest starts, the host's shell starts a
server of its CPU times::

    busybox nc -ll -p 1238 -e busybox grep ^cpu /proc/stat

``-ll`` keeps it listening; each TCP connection runs ``grep`` once, which writes the ``cpu`` lines of
``/proc/stat`` (the aggregate and one per core) to the connection and closes it. The lab host
reaches the host's port :data:`BOARD_CPU_PORT` as it reaches any port of the target
(farm.boot.network.reach: the lab's forward, or on a twin QEMU's); a read is one connect, no
console round trip, so it can be taken at a load window's edge under load. The same server runs in
the guest at :data:`GUEST_CPU_PORT` (forwarded from the host's port of that number on a user
network), so a guest's vCPUs are read the same way: reading the guest's /proc/stat over the console
at a window's edge under load took more than 60 s on the twin.

What is read (farm.measure.cpustat.parse_proc_stat_cores): ``{"cpu": total, "cpu0": ..., ...}`` of the
board's cores (``board``) or the guest's vCPUs (``vcpus``). A channel that does not answer, or
answers something else, is a :class:`CpuChannelError` naming the address and port: the benchmark
that needed it fails, the run goes on.
"""

from __future__ import annotations

import socket
from typing import Callable

import attrs

from ..errors import ParseError
from ..measure import BenchmarkError, cpustat

#: the host's CPU server (the board's cores), started on the host's shell before the guest's QEMU
BOARD_CPU_PORT = 1238
#: the guest's CPU server (its vCPUs), started on the guest's shell once it is ready
GUEST_CPU_PORT = 1239
#: ports the channels take: a guest's forwards (its benchmarks' ports, ``ports:``) may not use them
CPU_PORTS = (BOARD_CPU_PORT, GUEST_CPU_PORT)
#: what a connection returns, as the server runs it
READS = "grep ^cpu /proc/stat"
#: at most this much text from one read: a board with 1,000 cores writes ~70 kB
MAX_BYTES = 256 * 1024
TOOL = "cpu-channel"

Reach = Callable[[str, int], tuple[str, int]]


class CpuChannelError(BenchmarkError):
    """A CPU channel did not answer, or answered what is not /proc/stat's cpu lines."""

    def __init__(self, message: str) -> None:
        super().__init__(TOOL, message)

    def __reduce__(self):  # one argument, not BenchmarkError's two
        return (type(self), (self.message,))


def server_command(port: int) -> str:
    """The shell line that starts the CPU server on ``port`` in the background and waits (up to 2 s)
    until it listens (``/proc/net/tcp``'s state 0A); exit 1 when it never does."""
    if not 0 < port < 65536:
        raise ValueError(f"CPU channel port {port!r}: expected 1-65535")
    return (f"busybox nc -ll -p {port} -e busybox {READS} </dev/null >/dev/null 2>&1 & "
            f"i=0; while [ $i -lt 100 ]; do grep -qi ':{port:04X} 0\\{{8,32\\}}:0000 0A' /proc/net/tcp "
            f"/proc/net/tcp6 2>/dev/null && break; i=$((i+1)); usleep 20000; done; [ $i -lt 100 ]")


def parse_answer(text: str, where: str) -> dict[str, cpustat.CpuTimes]:
    """A channel's answer as per-core times; a :class:`CpuChannelError` naming ``where`` when it is
    empty or not /proc/stat's cpu lines (a forward with nothing behind it answers nothing)."""
    if not text.strip():
        raise CpuChannelError(f"{where} answered nothing (is its CPU server running? {READS!r} under "
                              "busybox nc -ll)")
    try:
        return cpustat.parse_proc_stat_cores(text)
    except ParseError as exc:
        raise CpuChannelError(f"{where}: {exc}") from None


def fetch(host: str, port: int, timeout: float, where: str) -> str:
    """One connection's text (until the server closes it)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            while (chunk := sock.recv(65536)):
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_BYTES:
                    raise CpuChannelError(f"{where} sent more than {MAX_BYTES} bytes: not /proc/stat's cpu lines")
    except OSError as exc:  # refused, reset, timed out
        raise CpuChannelError(f"{where} did not answer: {type(exc).__name__}: {exc}") from None
    return b"".join(chunks).decode("ascii", errors="replace")


@attrs.frozen
class CpuChannel:
    """The per-core times of one CPU (``board``: the host's cores; ``vcpus``: the guest's), read
    through a server at ``address``:``port`` of the target's network (what a benchmark's ``reach``
    gets). Called with ``reach(address, port) -> (host, port)`` (farm.bench.context.BenchContext.reach_at)."""

    scope: str
    address: str
    port: int
    timeout: float = 10.0

    @property
    def where(self) -> str:
        return f"the {self.scope} CPU channel ({self.address} port {self.port})"

    def __call__(self, reach: Reach) -> dict[str, cpustat.CpuTimes]:
        host, port = reach(self.address, self.port)
        return parse_answer(fetch(host, port, self.timeout, self.where), self.where)

    def to_json(self) -> dict:
        """run.json's topology entry: where it is and what it reads."""
        return {"scope": self.scope, "address": self.address, "port": self.port, "reads": READS,
                "server": f"busybox nc -ll -p {self.port} -e busybox {READS}"}
