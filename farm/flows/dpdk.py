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

Everything is checked when the pipeline file is read (errors name file:line: field): the app, PMD and
binding are ones farm knows and fit together, the lcores are a list EAL takes with a forwarding lcore,
the hugepages a count. What only the booted target can tell (the PCI device exists and binds, the kernel
gave the pages, the PMD's library is in the image, EAL probed the port) is checked by the flow, each a
:class:`farm.boot.dpdk.DpdkError` with the console kept.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..boot.dpdk_settings import APPS, PCI_ADDRESS, PMDS, DpdkSettings
from ..config import Node, field, reject_unknown
from . import FlowType

if TYPE_CHECKING:  # the flows themselves (labgrid) load when a run makes one, not when a file is read
    from ..boot.dpdk import DpdkFlow
    from ..boot.flow import FlowSetup

NAME = "dpdk"
BINDINGS = ("uio_pci_generic", "vfio-pci", "none")
MAX_LCORE = 127
MAX_HUGEPAGES = 65536
MAX_TIMEOUT = 3600.0
_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_LCORE_ITEM = re.compile(r"(\d+)(?:-(\d+))?")


def parse_lcores(text: str) -> tuple[int, ...]:
    """EAL's lcore list (``0-1``, ``0,2``, ``0,2-3``) as the cores, in order, each once; ValueError says why."""
    cores: list[int] = []
    for item in str(text).split(","):
        match = _LCORE_ITEM.fullmatch(item.strip())
        if not match:
            raise ValueError(f"{item.strip()!r} is not a core or a range of cores (e.g. 0-1 or 0,2)")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError(f"{item.strip()!r}: the range runs backwards")
        if last > MAX_LCORE:
            raise ValueError(f"{item.strip()!r}: cores are 0-{MAX_LCORE}")
        for core in range(first, last + 1):
            if core in cores:
                raise ValueError(f"core {core} is given twice")
            cores.append(core)
    if len(cores) < 2:
        raise ValueError("testpmd needs a main lcore and at least one forwarding lcore (e.g. 0-1)")
    return tuple(cores)


def read_settings(setup: Node, key: str, base: Path) -> DpdkSettings:
    """The ``dpdk`` settings of a setup of a pipeline file (errors name file:line: field)."""
    node = setup.get(key)
    if node is None or node == {}:
        return DpdkSettings()
    if not isinstance(node, Node):
        raise setup.error(key, "expected the DPDK echo's settings, e.g. {lcores: 0-1, hugepages: 64, pmd: net_virtio}")
    reject_unknown(node, {"app", "lcores", "hugepages", "pmd", "binding", "port", "ready_timeout", "guest"})
    app = field(node, "app", str, "testpmd-5tswap")
    if app not in APPS:
        raise node.error("app", f"unknown echo app {app!r} (known: {', '.join(APPS)})")
    lcores_value = node.get("lcores", "0-1")
    if isinstance(lcores_value, bool) or not isinstance(lcores_value, (str, int)):
        raise node.error("lcores", f"{lcores_value!r}: expected EAL's lcore list, e.g. 0-1")
    try:
        lcores = parse_lcores(str(lcores_value))
    except ValueError as exc:
        raise node.error("lcores", str(exc)) from None
    hugepages = field(node, "hugepages", int, 64)
    if isinstance(hugepages, bool) or not 1 <= hugepages <= MAX_HUGEPAGES:
        raise node.error("hugepages", f"{hugepages!r}: expected a number of 2 MiB pages, 1-{MAX_HUGEPAGES} "
                                      "(EAL needs hugepages)")
    pmd = field(node, "pmd", str, "net_virtio")
    if pmd not in PMDS:
        raise node.error("pmd", f"unknown PMD {pmd!r} (known: {', '.join(PMDS)})")
    kind, bindings = PMDS[pmd]
    binding = field(node, "binding", str, bindings[0])
    if binding not in BINDINGS:
        raise node.error("binding", f"unknown binding {binding!r} (known: {', '.join(BINDINGS)})")
    if binding not in bindings:
        raise node.error("binding", f"{binding!r} does not fit the PMD {pmd} (it takes: {', '.join(bindings)})")
    port = field(node, "port", str, "auto")
    if port != "auto":
        if kind == "pci" and not PCI_ADDRESS.fullmatch(port):
            raise node.error("port", f"{port!r}: expected auto or a PCI address such as 0000:00:01.0 (the PMD "
                                     f"{pmd} takes a PCI device)")
        if kind == "vdev" and not _IFACE.fullmatch(port):
            raise node.error("port", f"{port!r}: expected auto or an interface name such as eth0 (the PMD {pmd} "
                                     "runs on a kernel interface)")
    timeout = field(node, "ready_timeout", (int, float), 120.0)
    if isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT:
        raise node.error("ready_timeout", f"{timeout!r}: expected seconds, > 0 and <= {MAX_TIMEOUT:g}")
    guest = None
    if node.get("guest") is not None:
        from ..guest.spec import guest_of

        guest = guest_of(node, base, "guest")
        if guest.network != "user":
            raise node.error("guest", "a DPDK guest takes network: user (its NIC is DPDK's; the host forwards the "
                                      "sweep's ports into it)")
        if kind != "pci":
            raise node.error("pmd", f"in a guest the PMD is net_virtio (the guest's NIC is a virtio-net-pci), not {pmd}")
        if max(lcores) >= guest.vcpus:
            raise node.error("lcores", f"core {max(lcores)}: the guest has {guest.vcpus} vCPUs (guest.vcpus)")
    return DpdkSettings(app=app, lcores=lcores, hugepages=hugepages, pmd=pmd, binding=binding, port=port,
                        ready_timeout=float(timeout), guest=guest)


GUEST_KIND = "netboot+guest+dpdk"
#: the guest's NIC when DPDK takes it (DPDK has no virtio-mmio PMD, farm's guests' default on arm64)
GUEST_NIC = "virtio-net-pci,disable-legacy=on,romfile="


def dpdk_flow(settings: DpdkSettings, setup: "FlowSetup") -> "DpdkFlow":
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


DPDK_FLOW = FlowType(NAME, dpdk_flow, key=NAME, read=read_settings, describe=DpdkSettings.describe)
