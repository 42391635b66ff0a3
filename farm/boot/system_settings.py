"""A setup's ``system`` settings: what farm.boot.system boots, as farm.flows.system reads them from a pipeline
file (the reader, its checks and the fields' documentation are there). Here, below both, so that the boot
code never imports the flows' floor."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import attrs

from ..measure.console import StatsPattern


@attrs.frozen
class SystemSettings:
    """A setup's ``system`` settings (farm.flows.system's docstring says what each field means)."""

    ready: str
    path: Path | None = None
    boot: str | None = None
    load_addr: int | None = None
    stage_addr: str | None = None
    ready_timeout: float = 120.0
    fatal: tuple[str, ...] = ()
    address: str | None = None
    stats: tuple[StatsPattern, ...] = ()
    name: str | None = None
    #: where the pipeline file gives ``path`` (file:line: field), for the error when it is missing
    path_where: str = attrs.field(default="", eq=False)

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None, "boot": self.boot,
                "load_addr": f"{self.load_addr:#x}" if self.load_addr is not None else None,
                "stage_addr": self.stage_addr, "ready": self.ready, "ready_timeout": self.ready_timeout,
                "fatal": list(self.fatal), "address": self.address, "stats": [p.describe() for p in self.stats],
                **({"name": self.name} if self.name else {})}

    @property
    def address_pattern(self) -> re.Pattern[str] | None:
        """The address as a console pattern (None: a fixed address, or none)."""
        if self.address is None or is_ipv4(self.address):
            return None
        return re.compile(self.address)


def is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True
