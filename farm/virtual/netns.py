"""Network namespaces as the machines of a virtual lab: each has its own address on one bridge.

    bridge  fmb<id>  10.A.B.1/24 (this machine: the coordinator, the CI runners' jobs)
      ├── veth ── netns <id>-h1   10.A.B.11   a lab host (exporter, ser2net's stand-in, pdudaemon, sshd)
      ├── veth ── netns <id>-b12  10.A.B.112  a board (its shell, its benchmark ports)
      └── veth ── netns <id>-g1   10.A.B.201  a load generator (sshd)

A namespace's link can be cut (``down``) and restored, as a lab host whose switch port died; what
runs in it keeps running. Everything here is iproute2 (``ip netns``, ``ip link``), as root.
Interface names are at most 15 characters (the kernel's IFNAMSIZ).
"""

from __future__ import annotations

import ipaddress
import subprocess
from typing import Iterable

from ..errors import InfrastructureError

PREFIX = 24


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise InfrastructureError(f"ip {' '.join(args)}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return proc


def in_netns(netns: str | None, argv: list[str]) -> list[str]:
    """``argv`` run inside ``netns`` (as is when None)."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


def used_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks of this machine's addresses and routes."""
    found = []
    for line in ip("-4", "-o", "addr", "show").stdout.splitlines() + ip("-4", "route", "show").stdout.splitlines():
        for word in line.split():
            try:
                found.append(ipaddress.ip_network(word, strict=False))
            except ValueError:
                continue
    return found


def free_subnet(candidates: Iterable[str] | None = None) -> ipaddress.IPv4Network:
    """A /24 of 10.0.0.0/8 no address or route of this machine is in (the virtual lab's)."""
    used = used_networks()
    for text in candidates or (f"10.{a}.{b}.0/24" for a in range(213, 254) for b in range(0, 250, 7)):
        net = ipaddress.ip_network(text)
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise InfrastructureError("no free 10.x.y.0/24 for a virtual lab's network")


def add_bridge(name: str, address: str) -> None:
    ip("link", "add", name, "type", "bridge")
    ip("addr", "add", f"{address}/{PREFIX}", "dev", name)
    ip("link", "set", name, "up")


def add_netns(netns: str, veth: str, bridge: str, address: str) -> None:
    """A namespace with loopback and one interface ``eth0`` at ``address``, its peer ``veth`` on ``bridge``."""
    ip("netns", "add", netns)
    ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
    ip("link", "set", veth, "master", bridge, "up")
    ip("-n", netns, "addr", "add", f"{address}/{PREFIX}", "dev", "eth0")
    ip("-n", netns, "link", "set", "eth0", "up")
    ip("-n", netns, "link", "set", "lo", "up")


def set_link(veth: str, up: bool) -> None:
    """Cut (``up=False``) or restore a namespace's link, from the bridge's side."""
    ip("link", "set", veth, "up" if up else "down")


def delete(netns: Iterable[str], bridges: Iterable[str]) -> None:
    """Remove namespaces (their veth pairs go with them) and bridges; ones already gone are fine."""
    for name in netns:
        ip("netns", "del", name, check=False)
    for name in bridges:
        ip("link", "del", name, check=False)


def names() -> set[str]:
    return {line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()}
