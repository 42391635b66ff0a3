"""How the lab host reaches a port on the target.

A real board has its own address on the lab network. A QEMU twin sits behind user-mode networking,
so farm asks QEMU (over QMP) to forward a free port of 127.0.0.1 to the twin's address. A board in a
lab may also sit behind a forward the lab set up (the twins of ``farm lab up`` do): the lab's exporter
then exports a ``NetworkService`` named ``port-<N>`` saying where port N of the board is reached.
"""

from __future__ import annotations

import socket

from labgrid import Target
from labgrid.driver import QEMUDriver
from labgrid.resource import NetworkService


def free_port(proto: str = "tcp") -> int:
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def qemu_driver(target: Target) -> QEMUDriver | None:
    for driver in target.drivers:
        if isinstance(driver, QEMUDriver):
            return driver
    return None


def lab_forward(target: Target, port: int) -> tuple[str, int] | None:
    """Where the lab forwards ``port`` of the target (TCP and UDP), if it exports such a forward."""
    for resource in target.resources:
        if isinstance(resource, NetworkService) and resource.name == f"port-{port}":
            return resource.address, resource.port
    return None


def reach(target: Target, target_address: str, port: int, protos: tuple[str, ...] = ("tcp",)) -> tuple[str, int]:
    """(host, port) on which the lab host reaches ``port`` of the target, for each protocol in ``protos``."""
    forward = lab_forward(target, port)
    if forward is not None:
        return forward
    qemu = qemu_driver(target)
    if qemu is None:
        return target_address, port
    host_port = free_port()
    for proto in protos:
        qemu.add_port_forward(proto, "127.0.0.1", host_port, target_address, port)
    return "127.0.0.1", host_port
