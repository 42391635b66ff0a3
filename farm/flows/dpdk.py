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

Everything is checked when the pipeline file is read (:class:`DpdkSettings`, read by farm.schema.read;
errors name file:line: field): the app, PMD and
binding are ones farm knows and fit together, the lcores are a list EAL takes with a forwarding lcore,
the hugepages a count. What only the booted target can tell (the PCI device exists and binds, the kernel
gave the pages, the PMD's library is in the image, EAL probed the port) is checked by the flow, each a
:class:`farm.boot.dpdk.DpdkError` with the console kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from ..guest.spec import GuestSpec
from ..schema import Invalid, WrongType, seconds, setting
from . import FlowType

if TYPE_CHECKING:  # the flows themselves (labgrid) load when a run makes one, not when a file is read
    from ..boot.dpdk import DpdkFlow
    from ..boot.flow import FlowSetup

NAME = "dpdk"
#: the echo apps: name -> the records' ``responder`` param (what answers the sweep)
APPS = {"testpmd-5tswap": "dpdk-testpmd-5tswap"}
#: PMD -> (how its port is named: "pci" or "vdev", the bindings it works with)
PMDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "net_virtio": ("pci", ("uio_pci_generic", "vfio-pci")),
    "net_af_packet": ("vdev", ("none",)),
    "net_enetfec": ("vdev", ("none",)),
}
BINDINGS = ("uio_pci_generic", "vfio-pci", "none")
MAX_LCORE = 127
MAX_HUGEPAGES = 65536
MAX_TIMEOUT = 3600.0
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_IFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_LCORE_ITEM = re.compile(r"(\d+)(?:-(\d+))?")


def _lcores(value: Any) -> tuple[int, ...]:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise Invalid(f"{value!r}: expected EAL's lcore list, e.g. 0-1")
    try:
        return parse_lcores(str(value))
    except ValueError as exc:
        raise Invalid(str(exc)) from None


_lcores.schema = {"anyOf": [{"type": "string", "pattern": r"^[0-9, -]+$"}, {"type": "integer"}]}  # type: ignore[attr-defined]


def _hugepages(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType("an integer", value)
    if not 1 <= value <= MAX_HUGEPAGES:
        raise Invalid(f"{value!r}: expected a number of 2 MiB pages, 1-{MAX_HUGEPAGES} (EAL needs hugepages)")
    return value


_hugepages.schema = {"type": "integer", "minimum": 1, "maximum": MAX_HUGEPAGES}  # type: ignore[attr-defined]


def _known(what: str, known: Any) -> Any:
    def check(value: str) -> str | None:
        return None if value in known else f"unknown {what} {value!r} (known: {', '.join(known)})"
    check.choices = tuple(known)  # type: ignore[attr-defined]
    return check


@attrs.frozen
class DpdkSettings:
    """A setup's ``dpdk`` settings (see the module docstring)."""

    SHAPE = "the DPDK echo's settings, e.g. {lcores: 0-1, hugepages: 64, pmd: net_virtio}"

    app: str = setting("testpmd-5tswap", check=_known("echo app", APPS), schema={"enum": list(APPS)},
                       doc="the echo: testpmd-5tswap (dpdk-testpmd --forward-mode=5tswap)")
    lcores: tuple[int, ...] = setting((0, 1), parse=_lcores,
                                      doc="EAL's -l: the first is testpmd's main lcore, the others forward (busy-poll)")
    hugepages: int = setting(64, parse=_hugepages, doc="2 MiB pages reserved (nr_hugepages) and mounted for EAL")
    pmd: str = setting("net_virtio", check=_known("PMD", PMDS), schema={"enum": list(PMDS)},
                       doc="the poll-mode driver that must probe the port")
    #: None: the PMD's first binding
    binding: str = setting(None, check=_known("binding", BINDINGS), schema={"enum": list(BINDINGS)},
                           doc="how the NIC is handed to DPDK: uio_pci_generic, vfio-pci, or none (a vdev PMD); "
                               "default: the PMD's first")
    port: str = setting("auto", doc="the NIC: auto (the one holding the boot's address), a PCI address, or for a "
                                    "vdev PMD an interface name")
    ready_timeout: float = setting(120.0, parse=seconds(MAX_TIMEOUT),
                                   doc="seconds for EAL to probe the port and testpmd to start forwarding")
    #: "DPDK on QEMU/KVM": the echo in a Linux guest under QEMU/KVM on the target (farm.guest.spec), its NIC
    #: a virtio-net-pci; None: on the target's own Linux ("DPDK on pure Linux")
    guest: GuestSpec | None = setting(None, doc="the echo in a guest on the target (the guest setup's fields; "
                                              "network: user)")

    def __attrs_post_init__(self) -> None:
        if self.binding is None:
            object.__setattr__(self, "binding", PMDS[self.pmd][1][0])  # frozen: attrs' own way

    @property
    def responder(self) -> str:
        """The ``responder`` param of the records the sweeps against it make."""
        return APPS[self.app]

    @property
    def forwarding_lcores(self) -> tuple[int, ...]:
        """The lcores that busy-poll the port (all but testpmd's main lcore, the first)."""
        return self.lcores[1:]

    @property
    def lcore_list(self) -> str:
        """The lcores as EAL's ``-l`` takes them."""
        return ",".join(str(c) for c in self.lcores)

    @property
    def vdev(self) -> bool:
        return PMDS[self.pmd][0] == "vdev"

    def describe(self) -> dict[str, Any]:
        return {"app": self.app, "responder": self.responder, "lcores": list(self.lcores),
                "hugepages": self.hugepages, "pmd": self.pmd, "binding": self.binding, "port": self.port,
                "ready_timeout": self.ready_timeout, "guest": self.guest.to_json() if self.guest else None}

    def validate(self, given: Any) -> None:
        """The fields together (farm.schema.read calls it after each field's own check)."""
        kind, bindings = PMDS[self.pmd]
        if self.binding not in bindings:
            raise Invalid(f"{self.binding!r} does not fit the PMD {self.pmd} (it takes: {', '.join(bindings)})",
                          key="binding")
        if self.port != "auto":
            if kind == "pci" and not PCI_ADDRESS.fullmatch(self.port):
                raise Invalid(f"{self.port!r}: expected auto or a PCI address such as 0000:00:01.0 (the PMD "
                              f"{self.pmd} takes a PCI device)", key="port")
            if kind == "vdev" and not _IFACE.fullmatch(self.port):
                raise Invalid(f"{self.port!r}: expected auto or an interface name such as eth0 (the PMD {self.pmd} "
                              "runs on a kernel interface)", key="port")
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


DPDK_FLOW = FlowType(NAME, dpdk_flow, key=NAME, settings=DpdkSettings, describe=DpdkSettings.describe)
