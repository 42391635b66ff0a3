"""The network suite: iperf3 between the lab host (client) and the target (server)."""

from __future__ import annotations

import subprocess
from typing import Any, Mapping

from ..results.record import Measurement
from . import BenchmarkError
from . import iperf3
from .context import BenchContext

IPERF3_PORT = 5201

# poll until the daemon listens (no fixed sleep): port 5201 is 0x1451, state 0A is LISTEN
_WAIT_LISTEN = ("i=0; while [ $i -lt 100 ]; do "
                "grep -qi ':1451 0\\{8,32\\}:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && exit 0; "
                "i=$((i+1)); usleep 20000; done; exit 1")


def start_iperf3_server(ctx: BenchContext) -> None:
    ctx.run(f"pidof iperf3 >/dev/null || iperf3 -s -D -p {IPERF3_PORT}", tool="iperf3")
    ctx.run(_WAIT_LISTEN, timeout=10, tool="iperf3")


def run_iperf3(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """One iperf3 run, host -> target (or target -> host with ``reverse: true``)."""
    protocol = params.get("protocol", "tcp")
    duration = params.get("duration", 3)
    protos = ("tcp", "udp") if protocol == "udp" else ("tcp",)
    start_iperf3_server(ctx)
    host, port = ctx.reach(IPERF3_PORT, protos)
    argv = iperf3.client_command(host, port, duration=duration, protocol=protocol,
                                 bitrate=params.get("bitrate"), length=params.get("length"),
                                 reverse=bool(params.get("reverse", False)), omit=params.get("omit", 0))
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=float(duration) + 60)
    except subprocess.TimeoutExpired:
        raise BenchmarkError("iperf3", f"client did not finish within {float(duration) + 60:.0f} s") from None
    if not proc.stdout.strip():
        raise BenchmarkError("iperf3", f"client printed nothing (exit {proc.returncode}): {proc.stderr.strip()}")
    recorded = {"protocol": protocol, "duration": duration, "direction": "target-to-host" if params.get("reverse") else "host-to-target"}
    for key in ("bitrate", "length"):
        if params.get(key) is not None:
            recorded[key] = params[key]
    return iperf3.parse_json(proc.stdout, params=recorded)
