"""A setup's ``system`` settings: what farm.boot.system boots, declared once (farm.schema) for the pipeline
file that gives them (farm.flows.system's docstring shows the fields in a setup). Here, below both, so that
the boot code never imports the flows' floor."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import attrs

from ..errors import JobError
from ..images.image import SYSTEM_BOOTS
from ..measure.console import StatsPattern, stats_pattern
from ..schema import Invalid, each, regex_problem, seconds, setting

MAX_TIMEOUT = 86400.0
#: U-Boot addresses as the env file and pipeline give them: a number or one of U-Boot's variables
_ADDR = re.compile(r"0x[0-9a-fA-F]{1,16}|\$\{[a-z_]+\}")


def _address(value: str) -> str | None:
    if is_ipv4(value):
        return None
    try:
        compiled = re.compile(value)
    except re.error as exc:
        return f"{value!r} is neither an IPv4 address nor a regular expression: {exc}"
    if (problem := regex_problem(value)):
        return problem
    if "address" not in compiled.groupindex:
        return (f"{value!r}: a pattern needs the group (?P<address>...) that holds the address (or give the "
                "address itself)")
    return None


def _ready(value: str) -> str | None:
    if not value:
        return "the console line that says the system is up is needed (a regular expression)"
    return regex_problem(value)


def _stage_addr(value: str) -> str | None:
    if _ADDR.fullmatch(value):
        return None
    return f"{value!r}: expected an address (0x44000000) or a U-Boot variable (${{kernel_addr_r}})"


def _load_addr(value: Any) -> int:
    from ..images.system import parse_address

    return parse_address(value, "load_addr")


_load_addr.schema = {"anyOf": [{"type": "integer", "minimum": 0},  # type: ignore[attr-defined]
                               {"type": "string", "pattern": "^(0[xX][0-9a-fA-F]+|[0-9]+)$"}]}


@attrs.frozen
class StatsSpec:
    """A console line that becomes records (farm.measure.console): its regex, and the unit of each value group."""

    pattern: str = setting(doc="a regex over a console line; each named group a value or a param")
    units: dict[str, str] = setting(factory=dict, doc="group -> its unit (ticks, percent, bytes, count)")
    metric: str = setting("", doc="the metric of a line only seen (a banner): counted under this name")


def _stats(value: Any) -> tuple[StatsPattern, ...]:
    from ..schema.read import read_as

    patterns = []
    for i, spec in enumerate(read_as(value, tuple[StatsSpec, ...])):
        try:
            patterns.append(stats_pattern(spec.pattern, spec.units, spec.metric))
        except JobError as exc:
            raise Invalid(f"item {i}: {exc}") from None
    return tuple(patterns)


@attrs.frozen
class SystemSettings:
    """A setup's ``system`` settings (see the module docstring)."""

    SHAPE = "the system image's settings, e.g. {path: build/loader.img, ready: 'ready'}"

    ready: str = setting(check=_ready, doc="the console line that says the system is up (a regex)")
    path: Path | None = setting(None, relative=True,
                                doc="a file, a directory with a system manifest.json, or a recipe of farm's "
                                    "bare-metal programs; without it, the run's --image")
    boot: str | None = setting(None, choices=tuple(SYSTEM_BOOTS),
                               doc="bootm, bootelf or go (default: the env file's system_boot, else what the image "
                                   "offers first)")
    load_addr: int | None = setting(None, parse=_load_addr, doc="where a raw binary loads (0x50000000)")
    stage_addr: str | None = setting(None, check=_stage_addr,
                                     doc="where the image is fetched to: an address or a U-Boot variable")
    ready_timeout: float = setting(120.0, parse=seconds(MAX_TIMEOUT), doc="seconds to the ready line")
    fatal: tuple[str, ...] = setting((), check=each(regex_problem),
                                     doc="lines (regexes) that end the boot or a benchmark as a failure")
    address: str | None = setting(None, check=_address,
                                  doc="where its services are: an IPv4 address, or a regex whose group "
                                      "(?P<address>...) finds it on the console")
    stats: tuple[StatsPattern, ...] = setting((), parse=_stats, schema={"type": "array", "items": {"$ref": "#/$defs/StatsSpec"}},
                                              doc="console lines that become records (farm.measure.console)")
    name: str | None = setting(None, doc="the system's name in run.json")
    #: where the pipeline file gives ``path`` (file:line: field), for the error when it is missing
    path_where: str = setting("", where_of="path", eq=False)

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

    @classmethod
    def __json_schema__(cls, schema_of: Any) -> dict[str, Any]:
        schema_of(StatsSpec)  # the items of ``stats`` (read by _stats)
        return schema_of._class(cls)


def is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True
