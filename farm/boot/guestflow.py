"""The host-then-guest boot flow: the lab's "Linux guest under QEMU/KVM on the same board".

    power -> bootloader -> host Linux (the netboot flow, with the host image) -> QEMU on the host's
    console -> the guest's FARM-READY -> the benchmarks run in the guest, on the same console

The host image is the setup's recipe plus QEMU and the guest's kernel and initrd (farm.images.host);
the guest is started by farm.guest.start. The load generator reaches the guest through the host: the
host's ports are forwarded into the guest (identity: host port P -> guest port P), so a benchmark
reaches port P at the *host's* address. Leaving the block powers the guest off, then the board.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

import attrs

from ..guest.command import guest_forwards
from ..guest.spec import GuestSpec
from ..guest.start import start_guest, stop_guest
from ..images.host import guest_files
from .facts import pin_frequency, read_facts
from .flow import BootRequest, NetbootFlow
from .session import BootedTarget


@attrs.frozen
class GuestFlow:
    spec: GuestSpec
    #: the target ports the run's benchmarks need (their registrations' ``ports``), forwarded into the guest
    ports: tuple[int, ...] = ()
    host_cpu_khz: int | None = None  # the setup's CPU frequency, pinned on the host before the guest starts
    host: NetbootFlow = NetbootFlow()
    kind: str = "netboot+guest"

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[BootedTarget]:
        kernel, initrd = guest_files(request.image.manifest)  # not a host image: a JobError before booting
        with self.host.boot(request) as host:
            if self.host_cpu_khz:
                pin_frequency(host.shell, host.name, self.host_cpu_khz)
            host_facts = read_facts(host.shell)
            console = host.target.get_driver("ConsoleProtocol")
            forwards = guest_forwards(tuple(dict.fromkeys([*self.ports, *self.spec.ports])))
            t0 = time.monotonic()
            info = start_guest(host.shell, console, self.spec, kernel, initrd, forwards, arch=request.env.arch)
            guest = request.image.manifest.get("guest", {})
            topology = {
                "flow": self.kind,
                "host": {"image": request.image.name, "image_key": request.image.manifest.get("key"),
                         "kernel": host_facts.kernel, "cpus": host_facts.cpus, "address": host_facts.address,
                         "boot_seconds": round(host.boot_seconds, 3)},
                "guest": {**info.to_json(), "image": guest.get("name"), "image_key": guest.get("key"),
                          "artifacts": guest.get("artifacts"), "spec": self.spec.to_json()},
            }
            try:
                yield attrs.evolve(host, topology=topology, reach_address=host_facts.address,
                                   guest_seconds=time.monotonic() - t0)
            finally:
                with contextlib.suppress(Exception):  # the board is powered off next, whatever happened
                    stop_guest(host.shell, console)
