"""A setup's ``dpdk`` settings: what farm.boot.dpdk runs, as farm.flows.dpdk reads them from a pipeline file
(the reader, its checks and the fields' documentation are there). Here, below both, so that the boot code
never imports the flows' floor."""

from __future__ import annotations

import re
from typing import Any

import attrs

#: the echo apps: name -> the records' ``responder`` param (what answers the sweep)
APPS = {"testpmd-5tswap": "dpdk-testpmd-5tswap"}
#: PMD -> (how its port is named: "pci" or "vdev", the bindings it works with)
PMDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "net_virtio": ("pci", ("uio_pci_generic", "vfio-pci")),
    "net_af_packet": ("vdev", ("none",)),
    "net_enetfec": ("vdev", ("none",)),
}
#: a PCI device's address as sysfs and EAL name it
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


@attrs.frozen
class DpdkSettings:
    """A setup's ``dpdk`` settings (farm.flows.dpdk's docstring says what each field means)."""

    app: str = "testpmd-5tswap"
    lcores: tuple[int, ...] = (0, 1)
    hugepages: int = 64
    pmd: str = "net_virtio"
    binding: str = "uio_pci_generic"
    port: str = "auto"
    ready_timeout: float = 120.0
    #: "DPDK on QEMU/KVM": the echo in a Linux guest under QEMU/KVM on the target (farm.guest.spec), its NIC
    #: a virtio-net-pci; None: on the target's own Linux ("DPDK on pure Linux")
    guest: Any = None

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
