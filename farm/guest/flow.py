"""The host-then-guest boot flow: the lab's "Linux guest under QEMU/KVM on the same board".

    power -> bootloader -> host Linux (the netboot flow, with the host image) -> QEMU on the host's
    console -> the guest's FARM-READY -> the benchmarks run in the guest, on the same console

A setup chooses it with ``guest: {...}`` (farm.guest.spec; registered in farm.flows). Its image is the
host image: the setup's recipe plus QEMU and the guest's kernel and initrd (farm.images.host), built
after the guest's image, which is the one the benchmarks run on (it gains what they need). The guest
is started by farm.guest.start. The load generator reaches the guest through the host: the host's
ports are forwarded into the guest (identity: host port P -> guest port P), so a benchmark reaches
port P at the *host's* address. The setup's CPU frequency is pinned on the host (its netboot flow)
before the guest starts. Leaving the block powers the guest off, then the board.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

import attrs

from ..boot.facts import read_facts
from ..boot.flow import BootRequest, FlowSetup, NetbootFlow
from ..boot.session import BootedTarget
from ..images.host import guest_files
from ..images.request import ImageRequest
from .command import guest_forwards
from .spec import GuestSpec
from .start import start_guest, stop_guest


@attrs.frozen
class GuestFlow:
    spec: GuestSpec
    #: the target ports the run's benchmarks need (their registrations' ``ports``), forwarded into the guest
    ports: tuple[int, ...] = ()
    host: NetbootFlow = NetbootFlow()
    kind: str = "netboot+guest"

    def images(self, image: ImageRequest) -> ImageRequest:
        """The host image of the setup's recipe, carrying the guest's image: the guest's own recipe, else
        the setup's image (the run's ``--image`` too); the benchmarks' needs go to the guest's."""
        guest = ImageRequest(recipe=self.spec.image, needs=image.needs) if self.spec.image else image
        return ImageRequest(recipe=image.recipe, carries=guest)

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[BootedTarget]:
        kernel, initrd = guest_files(request.image.manifest)  # not a host image: a JobError before booting
        with self.host.boot(request) as host:
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
                                   recorded={**host.recorded, "guest_seconds": round(time.monotonic() - t0, 3)})
            finally:
                with contextlib.suppress(Exception):  # the board is powered off next, whatever happened
                    stop_guest(host.shell, console)


def guest_flow(spec: GuestSpec, setup: FlowSetup) -> GuestFlow:
    """The flow of a setup with ``guest:`` (farm.flows): its host pinned at the setup's frequency."""
    return GuestFlow(spec, setup.ports, host=NetbootFlow(pin_khz=setup.cpu_frequency_khz, cpus=setup.cpus))
