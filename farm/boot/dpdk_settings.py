"""A setup's ``dpdk`` settings: what farm.boot.dpdk runs, declared once (farm.schema) for the pipeline file
that gives them; farm.flows.dpdk adds the guest a setup may run the echo in. Here, below both, so that the
boot code never imports the flows' floor."""

from __future__ import annotations

import re
from typing import Any

import attrs

from ..schema import Invalid, WrongType, seconds, setting

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
    """A setup's ``dpdk`` settings as the DPDK echo runs them (farm.flows.dpdk's docstring shows them in a
    pipeline file)."""

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
    #: "DPDK on QEMU/KVM": the echo in a Linux guest under QEMU/KVM on the target, its NIC a virtio-net-pci;
    #: None: on the target's own Linux ("DPDK on pure Linux"). Declared by the setup's settings
    #: (farm.flows.dpdk.DpdkSetupSettings), which know the guest's; the boot code never reads it
    guest: Any = attrs.field(default=None)

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
