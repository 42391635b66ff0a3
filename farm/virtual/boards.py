"""The boards a virtual lab can hold: each model's QEMU machine and the tags its places get.

A virtual board is the model's QEMU twin (see env/qemu-maaxboard.yaml), wired the way a lab host
wires a real board: serial on a TCP socket, power through QMP, TFTP from the lab host's root, and
the ports benchmarks use forwarded from 127.0.0.1 (the lab network of a QEMU user-mode NIC).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from ..errors import JobError


@attrs.frozen
class BoardModel:
    name: str
    qemu_bin: str
    machine: tuple[str, ...]  # machine, CPU, memory, firmware: what makes it this board's twin
    tags: dict[str, str]
    forwarded_ports: tuple[int, ...] = (5201, 11111)  # target ports benchmarks use: iperf3, sockperf


MODELS: dict[str, BoardModel] = {
    "maaxboard": BoardModel(
        name="maaxboard",
        qemu_bin="qemu-system-aarch64",
        machine=("-machine", "virt", "-cpu", "cortex-a53", "-smp", "4", "-m", "1G",
                 "-bios", "/usr/lib/u-boot/qemu_arm64/u-boot.bin"),
        tags={"board": "maaxboard", "arch": "aarch64", "cores": "4", "lab": "virtual"},
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


@attrs.frozen
class VirtualBoard:
    """One board of a virtual lab: its place, its QEMU's endpoints, its PDU outlet."""

    place: str             # also the exporter group name, e.g. maaxboard-1
    model: str
    outlet: int            # index on the lab's PDU
    serial_port: int       # QEMU's serial, a TCP server on 127.0.0.1
    qmp_socket: str
    forwards: dict[int, int]  # target port -> port on 127.0.0.1 (TCP and UDP)

    def as_dict(self) -> dict:
        return {**attrs.asdict(self), "forwards": {str(k): v for k, v in self.forwards.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> "VirtualBoard":
        return cls(data["place"], data["model"], int(data["outlet"]), int(data["serial_port"]), data["qmp_socket"],
                   {int(k): int(v) for k, v in data["forwards"].items()})


def qemu_argv(board: VirtualBoard, tftp_root: Path, accel: str = "tcg") -> list[str]:
    """The QEMU command of a board: paused until powered on, serial and QMP on sockets that stay."""
    model = MODELS[board.model]
    nic = f"user,model=virtio-net-pci,tftp={tftp_root}"
    for target_port, host_port in sorted(board.forwards.items()):
        nic += f",hostfwd=tcp:127.0.0.1:{host_port}-:{target_port},hostfwd=udp:127.0.0.1:{host_port}-:{target_port}"
    return [
        model.qemu_bin, "-name", board.place, *model.machine, "-accel", accel,
        "-nodefaults", "-display", "none",
        "-nic", nic,
        "-serial", f"tcp:127.0.0.1:{board.serial_port},server=on,wait=off",
        "-qmp", f"unix:{board.qmp_socket},server=on,wait=off",
        "-S",  # power is off until pdudaemon says "on" (QMP cont)
    ]
