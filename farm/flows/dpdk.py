"""The flow ``dpdk``: the lab's "DPDK on pure Linux". The target boots as the netboot flow boots it, then
hands its NIC to DPDK, and a DPDK echo on it answers the sweeps (farm.boot.dpdk does the work).

    setups:
      - name: dpdk
        image: ../images/maaxboard-dpdk.yaml   # DPDK's programs, PMDs and the binding's modules
        dpdk:
          app: testpmd-5tswap      # the echo: dpdk-testpmd --forward-mode=5tswap (swaps MAC, IP and UDP ports)
          lcores: 0-1              # EAL's -l: the first is testpmd's main lcore, the others forward (busy-poll)
          hugepages: 64            # 2 MiB pages reserved (nr_hugepages) and mounted (hugetlbfs) for EAL
          pmd: net_virtio          # the poll-mode driver that must probe the port (net_virtio, net_af_packet,
                                   #   net_enetfec)
          binding: uio_pci_generic # how the NIC is handed to DPDK: uio_pci_generic, vfio-pci, or none (a vdev
                                   #   PMD: net_af_packet keeps the kernel's driver, net_enetfec NXP's module)
          port: auto               # the NIC: auto (the one holding the boot's address), a PCI address
                                   #   (0000:00:01.0), or for a vdev PMD an interface name (eth0)
          ready_timeout: 120       # seconds for EAL to probe the port and testpmd to start forwarding
          guest: {vcpus: 2, memory: 1G}   # "DPDK on QEMU/KVM": the echo in a guest on the target (the guest
                                   #   setup's fields, farm.guest.spec; network: user), its NIC a virtio-net-pci

Everything is checked when the pipeline file is read (:class:`DpdkSetupSettings`, read by farm.schema.read;
errors name file:line: field): the app, PMD and
binding are ones farm knows and fit together, the lcores are a list EAL takes with a forwarding lcore,
the hugepages a count. What only the booted target can tell (the PCI device exists and binds, the kernel
gave the pages, the PMD's library is in the image, EAL probed the port) is checked by the flow, each a
:class:`farm.boot.dpdk.DpdkError` with the console kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..boot.dpdk_settings import (APPS, BINDINGS, MAX_HUGEPAGES, MAX_LCORE, MAX_TIMEOUT, PCI_ADDRESS,  # noqa: F401
                                  PMDS, DpdkSettings, parse_lcores)
from ..guest.spec import GuestSpec
from ..schema import Invalid, setting
from . import FlowType

if TYPE_CHECKING:  # the flows themselves (labgrid) load when a run makes one, not when a file is read
    from ..boot.dpdk import DpdkFlow
    from ..boot.flow import FlowSetup

NAME = "dpdk"


@attrs.frozen
class DpdkSetupSettings(DpdkSettings):
    """A setup's ``dpdk`` settings as the pipeline file gives them: the echo's (farm.boot.dpdk_settings), and the
    guest it may run in, which farm.boot does not know (farm.guest builds on it)."""

    #: "DPDK on QEMU/KVM": the echo in a Linux guest under QEMU/KVM on the target (farm.guest.spec), its NIC
    #: a virtio-net-pci; None: on the target's own Linux ("DPDK on pure Linux")
    guest: GuestSpec | None = setting(None, doc="the echo in a guest on the target (the guest setup's fields; "
                                              "network: user)")

    def validate(self, given: Any) -> None:
        """The fields together, the guest's too (farm.schema.read calls it after each field's own check)."""
        super().validate(given)
        kind = PMDS[self.pmd][0]
        if self.guest is not None:
            if self.guest.network != "user":
                raise Invalid("a DPDK guest takes network: user (its NIC is DPDK's; the host forwards the sweep's "
                              "ports into it)", key="guest")
            if kind != "pci":
                raise Invalid(f"in a guest the PMD is net_virtio (the guest's NIC is a virtio-net-pci), not {self.pmd}",
                              key="pmd")
            if max(self.lcores) >= self.guest.vcpus:
                raise Invalid(f"core {max(self.lcores)}: the guest has {self.guest.vcpus} vCPUs (guest.vcpus)",
                              key="lcores")


GUEST_KIND = "netboot+guest+dpdk"
#: the guest's NIC when DPDK takes it (DPDK has no virtio-mmio PMD, farm's guests' default on arm64)
GUEST_NIC = "virtio-net-pci,disable-legacy=on,romfile="


def dpdk_flow(settings: DpdkSetupSettings, setup: "FlowSetup") -> "DpdkFlow":
    """The flow of a setup with ``dpdk:``: the netboot flow, a twin's NIC as DPDK needs it; with
    ``guest:``, the guest flow on the netbooted host, the guest's NIC a virtio-net-pci. Composed here, where
    both layers may be imported: farm.guest builds on farm.boot, so farm.boot.dpdk never imports it."""
    from ..boot.dpdk import TWIN_NIC, DpdkFlow
    from ..boot.flow import NetbootFlow

    if settings.guest is not None:
        from ..guest.flow import GuestFlow

        spec = attrs.evolve(settings.guest, nic=GUEST_NIC)
        host = NetbootFlow(pin_khz=setup.cpu_frequency_khz, cpus=setup.cpus)
        return DpdkFlow(settings, GuestFlow(spec, setup.ports, host=host), kind=GUEST_KIND)
    return DpdkFlow(settings, NetbootFlow(pin_khz=setup.cpu_frequency_khz, cpus=setup.cpus, twin_nic=TWIN_NIC))


def lcores_problem(settings: DpdkSetupSettings, cpus: int | None) -> tuple[str, str] | None:
    """An lcore the setup's ``cpus`` has no core for (EAL numbers them from 0; without ``cpus``, the board's, which
    the pipeline file does not know). Said when the file is read, not by EAL after the build and the boot. With
    ``guest:`` the lcores are the guest's vCPUs, which its settings check themselves (DpdkSetupSettings)."""
    if settings.guest is not None or cpus is None or not (beyond := [c for c in settings.lcores if c >= cpus]):
        return None
    return ("lcores", f"lcore{'s' * (len(beyond) > 1)} {', '.join(map(str, beyond))} on {cpus} core"
            f"{'s' * (cpus != 1)} (the setup's cpus: {cpus}; EAL numbers them 0-{cpus - 1})")


DPDK_FLOW = FlowType(NAME, dpdk_flow, key=NAME, settings=DpdkSetupSettings, describe=DpdkSetupSettings.describe,
                     cores_problem=lcores_problem)
