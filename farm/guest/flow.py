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

The shell is the guest's, so its /proc/stat is the guest's vCPUs (``cpu_scope="vcpus"``); the board's
cores are read through a second channel, a CPU server the host's shell starts before QEMU takes the
console, and the guest's vCPUs through the same server in the guest (farm.guest.channel): both are
the booted target's ``cpu_channels``, read with no console round trip.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

import attrs

from ..boot.facts import read_facts
from ..boot.flow import BootRequest, FlowSetup, NetbootFlow
from ..boot.session import LinuxTarget
from ..images.host import guest_files
from ..images.request import ImageRequest
from ..errors import JobError
from ..images.needs import Needs
from .channel import BOARD_CPU_PORT, CPU_PORTS, GUEST_CPU_PORT, CpuChannel, server_command
from .command import BRIDGE, GUEST_MAC, GUEST_NET, TAP, TAP_MODULES, guest_forwards, parse_tap, tap_setup
from .spec import GuestSpec
from .start import GuestSetupError, start_guest, stop_guest


@attrs.frozen
class GuestFlow:
    spec: GuestSpec
    #: the target ports the run's benchmarks need (their registrations' ``ports``), forwarded into the guest
    ports: tuple[int, ...] = ()
    host: NetbootFlow = NetbootFlow()
    kind: str = "netboot+guest"

    def images(self, image: ImageRequest) -> ImageRequest:
        """The host image of the setup's recipe, carrying the guest's image: the guest's own recipe, else
        the setup's image (the run's ``--image`` too); the benchmarks' needs go to the guest's, a tap
        network's kernel modules (bridge, tun, vhost_net) to the host's."""
        guest = ImageRequest(recipe=self.spec.image, needs=image.needs) if self.spec.image else image
        host_needs = Needs(modules=TAP_MODULES) if self.spec.network == "tap" else Needs()
        return ImageRequest(recipe=image.recipe, carries=guest, needs=host_needs)

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[LinuxTarget]:
        kernel, initrd = guest_files(request.image.manifest)  # not a host image: a JobError before booting
        with self.host.boot(request) as host:
            host_facts = read_facts(host.shell)
            console = host.target.get_driver("ConsoleProtocol")
            network, forwards = self._network(host.shell)
            # the board's CPU server, while the host's shell is still the host's (farm.guest.channel)
            start_cpu_server(host.shell, BOARD_CPU_PORT, "host")
            t0 = time.monotonic()
            info = start_guest(host.shell, console, self.spec, kernel, initrd, forwards, arch=request.env.arch)
            tap = self.spec.network == "tap"
            if tap:  # the guest's own address on the board's network (its DHCP lease), where it is reached
                network["guest_address"] = read_facts(host.shell).address
            guest_seconds = round(time.monotonic() - t0, 3)
            channels = {"board": CpuChannel("board", host_facts.address, BOARD_CPU_PORT),
                        "vcpus": CpuChannel("vcpus", network["guest_address"] if tap else host_facts.address,
                                            GUEST_CPU_PORT)}
            guest = request.image.manifest.get("guest", {})
            topology = {
                "flow": self.kind,
                "host": {"image": request.image.name, "image_key": request.image.manifest.get("key"),
                         "kernel": host_facts.kernel, "cpus": host_facts.cpus, "address": host_facts.address,
                         "boot_seconds": round(host.boot_seconds, 3)},
                "guest": {**info.to_json(), "image": guest.get("name"), "image_key": guest.get("key"),
                          "artifacts": guest.get("artifacts"), "spec": self.spec.to_json(), "network": network},
                # the CPUs the benchmarks' CPU figures are of, and how each is read (records: cores=<scope>)
                "cpu_channels": {scope: channel.to_json() for scope, channel in channels.items()},
            }
            try:
                start_cpu_server(host.shell, GUEST_CPU_PORT, "guest")  # the vCPUs' server, in the guest
                # a user-network guest is reached through its host's forwards, a tap guest at its own address
                yield attrs.evolve(host, topology=topology, reach_address=None if tap else host_facts.address,
                                   cpu_scope="vcpus", cpu_channels=channels,
                                   recorded={**host.recorded, "guest_seconds": guest_seconds})
            finally:
                with contextlib.suppress(Exception):  # the board is powered off next, whatever happened
                    stop_guest(host.shell, console)


    def _network(self, shell) -> tuple[dict, dict[int, int]]:
        """The guest's network on the host (run.json's topology) and the host ports forwarded into it:
        ``user``, the benchmarks' ports (identity forwards, QEMU's user network); ``tap``, a bridge of
        the host's NIC with the guest's tap on it (farm.guest.command.tap_setup), no forwards."""
        if self.spec.network != "tap":  # the guest's CPU server is reached as the benchmarks' ports are
            forwards = guest_forwards(tuple(dict.fromkeys([*self.ports, *self.spec.ports, GUEST_CPU_PORT])))
            return {"mode": "user", "net": GUEST_NET, "forwards": {str(k): v for k, v in forwards.items()}}, forwards
        out, _, _ = shell.run(tap_setup(), timeout=30)
        try:
            made = parse_tap(out)
        except ValueError as exc:
            raise GuestSetupError(f"network: tap: the host could not put its NIC on a bridge: {exc}") from None
        if self.spec.accel == "kvm" and not made["vhost"]:
            raise GuestSetupError("network: tap: the host has no /dev/vhost-net (the vhost_net module): build the "
                                  "host image again (its recipe gains the tap network's modules)")
        return {"mode": "tap", "bridge": BRIDGE, "tap": TAP, "guest_mac": GUEST_MAC, "vhost": made["vhost"]
                and self.spec.accel == "kvm", "host_nic": made["dev"], "host_address": made["address"],
                "gateway": made["gateway"]}, {}


def start_cpu_server(shell, port: int, where: str) -> None:
    """The CPU server of farm.guest.channel on ``shell`` (the host's, or the guest's once it is ready);
    a :class:`GuestSetupError` when it never listens (an image without busybox's nc)."""
    out, _, code = shell.run(server_command(port), timeout=30)
    if code != 0:
        shown = " | ".join(line for line in out[-3:] if line.strip())
        raise GuestSetupError(f"the {where}'s CPU server (busybox nc -ll -p {port}) does not listen"
                              + (f": {shown}" if shown else ""))


def guest_flow(spec: GuestSpec, setup: FlowSetup) -> GuestFlow:
    """The flow of a setup with ``guest:`` (farm.flows): its host pinned at the setup's frequency. A
    benchmark's port that a CPU channel takes (farm.guest.channel.CPU_PORTS) is a JobError."""
    if (taken := sorted(set(setup.ports) & set(CPU_PORTS))):
        raise JobError(f"a benchmark of the run listens on port {taken[0]}, which a guest setup's CPU channel takes "
                       f"(farm.guest.channel: {BOARD_CPU_PORT} on the host, {GUEST_CPU_PORT} in the guest): "
                       "give it another port")
    return GuestFlow(spec, setup.ports, host=NetbootFlow(pin_khz=setup.cpu_frequency_khz, cpus=setup.cpus))
