"""The boards a virtual lab can hold: each model's QEMU machine and the tags its places get.

A virtual board is the model's QEMU twin (see env/qemu-maaxboard.yaml), wired the way a lab host
wires a real board: serial on a TCP socket, power through QMP, TFTP from the lab host's root, and
the ports benchmarks use forwarded from 127.0.0.1 (the lab network of a QEMU user-mode NIC).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from ..errors import JobError
from ..schema import Invalid, between, got, setting
from ..values import name_problem


@attrs.frozen
class BoardModel:
    name: str
    qemu_bin: str
    machine: tuple[str, ...]  # machine, CPU, memory, firmware: what makes it this board's twin
    tags: dict[str, str]
    cpus: int = 4             # the board's cores; a lab may give its twins fewer (farm lab up --cpus)
    forwarded_ports: tuple[int, ...] = (5201, 11111)  # target ports benchmarks use: iperf3, sockperf

    def tags_for(self, cpus: int) -> dict[str, str]:
        """The place's tags for a twin of ``cpus`` vCPUs: ``cores`` says what the twin has."""
        return {**self.tags, "cores": str(cpus)}


MODELS: dict[str, BoardModel] = {
    "maaxboard": BoardModel(
        name="maaxboard",
        qemu_bin="qemu-system-aarch64",
        machine=("-machine", "virt", "-cpu", "cortex-a53", "-m", "1G",
                 "-bios", "/usr/lib/u-boot/qemu_arm64/u-boot.bin"),
        tags={"board": "maaxboard", "arch": "aarch64", "lab": "virtual"},
        cpus=4,
    ),
}

_COUNT = re.compile(r"^([a-z][a-z0-9_-]*)=([0-9]+)$")


def parse_board_counts(specs: list[str]) -> dict[str, int]:
    """``["maaxboard=2"]`` -> ``{"maaxboard": 2}``; unknown models and bad counts are job errors."""
    counts: dict[str, int] = {}
    for spec in specs:
        for item in filter(None, spec.split(",")):
            match = _COUNT.match(item.strip())
            if not match:
                raise JobError(f"--boards {item!r}: expected MODEL=COUNT, e.g. maaxboard=2")
            model, count = match.group(1), int(match.group(2))
            if model not in MODELS:
                raise JobError(f"--boards {item!r}: unknown board model '{model}' (known: {', '.join(MODELS)})")
            if not 1 <= count <= 16:
                raise JobError(f"--boards {item!r}: count must be 1..16")
            counts[model] = counts.get(model, 0) + count
    return counts or {"maaxboard": 1}


MAX_CPUS = 8


def check_cpus(cpus: int | None) -> int | None:
    """``farm lab up --cpus N``: vCPUs of every twin (fewer than the board's, so that boards in parallel fit
    on the host's cores and a benchmark of two measures farm's coordination, not TCG's share of the host)."""
    if cpus is not None and not 1 <= cpus <= MAX_CPUS:
        raise JobError(f"--cpus {cpus}: expected 1..{MAX_CPUS} vCPUs per board")
    return cpus


PORT = between(1, 65535, "a TCP port")


def _forwards(value: Any) -> dict[int, int]:
    """lab.json's ``{"5201": 40003}`` (JSON's keys are text) as ports."""
    if not isinstance(value, dict):
        raise Invalid(f"expected a mapping of target port to port, got {got(value)}")
    ports = {}
    for key, port in value.items():
        target = int(key) if isinstance(key, str) and key.isdigit() else None
        if target is None or PORT(target) or isinstance(port, bool) or not isinstance(port, int) or PORT(port):
            raise Invalid(f"{key!r}: {port!r}: expected a target port and the port on 127.0.0.1 it is forwarded from")
        ports[target] = port
    return ports


_forwards.schema = {"type": "object", "additionalProperties": {"type": "integer"}}  # type: ignore[attr-defined]


@attrs.frozen
class VirtualBoard:
    """One board of a virtual lab: its place, its QEMU's endpoints, its PDU outlet (lab.json's ``boards``)."""

    place: str = setting(doc="its place, also the exporter's group name, e.g. maaxboard-1",
                         check=lambda v: name_problem(v, "place name"))
    model: str = setting(doc="its board model", choices=tuple(MODELS))
    outlet: int = setting(doc="its outlet on the lab's PDU", check=between(1, 64))
    serial_port: int = setting(doc="QEMU's serial, a TCP server on 127.0.0.1", check=PORT)
    qmp_socket: str = setting(doc="QEMU's QMP socket (power), in the lab's directory")
    forwards: dict[int, int] = setting(parse=_forwards, doc="target port -> port on 127.0.0.1 (TCP and UDP)")
    cpus: int = setting(attrs.Factory(lambda board: MODELS[board.model].cpus, takes_self=True),
                        check=between(1, 64), doc="the twin's vCPUs (-smp); default its model's")

    def as_dict(self) -> dict:
        return {**attrs.asdict(self), "forwards": {str(k): v for k, v in self.forwards.items()}}

    @property
    def tags(self) -> dict[str, str]:
        return MODELS[self.model].tags_for(self.cpus)


def qemu_argv(board: VirtualBoard, tftp_root: Path, accel: str = "tcg") -> list[str]:
    """The QEMU command of a board: paused until powered on, serial and QMP on sockets that stay."""
    model = MODELS[board.model]
    nic = f"user,model=virtio-net-pci,tftp={tftp_root}"
    for target_port, host_port in sorted(board.forwards.items()):
        nic += f",hostfwd=tcp:127.0.0.1:{host_port}-:{target_port},hostfwd=udp:127.0.0.1:{host_port}-:{target_port}"
    return [
        model.qemu_bin, "-name", board.place, *model.machine, "-smp", str(board.cpus), "-accel", accel,
        "-nodefaults", "-display", "none",
        "-nic", nic,
        "-serial", f"tcp:127.0.0.1:{board.serial_port},server=on,wait=off",
        "-qmp", f"unix:{board.qmp_socket},server=on,wait=off",
        "-S",  # power is off until pdudaemon says "on" (QMP cont)
    ]
