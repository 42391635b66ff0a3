"""The flow ``system``: a system image the lab brings (or one of farm's bare-metal programs), booted by
U-Boot as it is, with no shell afterwards (farm.boot.system does the booting).

    setups:
      - name: client-vm
        system:
          path: ../build/client-vm/loader.img   # a file, a directory with a system manifest.json, or a
                                                # recipe of farm's bare-metal programs (images/standin.yaml)
          boot: go                               # bootm | bootelf | go (default: the env file's system_boot,
          load_addr: 0x50000000                  #   else what the image offers first); a raw binary's address
          ready: 'ready to serve'                # the console line that says the system is up (a regex)
          address: 'client0 has address (?P<address>[0-9.]+)'   # where its services are (a regex, or an IPv4)
          fatal: ['halting', 'cap fault']        # lines that end the boot or a benchmark as a failure
          stats:                                 # console lines that become records (farm.measure.console)
            - pattern: '(?P<component>\\w+) utilisation (?P<utilisation>[0-9.]+)'
              units: {utilisation: percent}

Everything is checked when the pipeline file is read (errors name file:line: field): the regexes
compile, the address pattern has its ``address`` group; the path is checked when the image is made
(the build stage, before any boot: farm reproduce boots the archived image, not the path). Without ``path``, the setup
boots the run's ``--image`` of a system image (``farm run --image loader.img``). The targets of this
flow have no shell, only a network and a console (``FlowType.gives``): a benchmark that needs a shell is
refused when the file is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..boot.system_settings import SystemSettings, is_ipv4
from ..boot.target import ConsoleTarget, ServedTarget
from ..config import Node, field, reject_unknown, require, string_list
from ..errors import JobError
from ..images.image import SYSTEM, SYSTEM_BOOTS
from ..measure.console import stats_pattern
from . import FlowType

NAME = "system"
MAX_TIMEOUT = 86400.0
#: U-Boot addresses as the env file and pipeline give them: a number or one of U-Boot's variables
_ADDR = re.compile(r"0x[0-9a-fA-F]{1,16}|\$\{[a-z_]+\}")


def _regex(node: Node, key: str, value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise node.error(key, f"{value!r} is not a regular expression: {exc}") from None
    return value


def read_settings(setup: Node, key: str, base: Path) -> SystemSettings:
    """The ``system`` settings of a setup of a pipeline file (``base``: the file's directory)."""
    from ..images.system import parse_address

    node = setup.get(key)
    if not isinstance(node, Node):
        raise setup.error(key, "expected the system image's settings, e.g. {path: build/loader.img, ready: 'ready'}")
    reject_unknown(node, {"path", "boot", "load_addr", "stage_addr", "ready", "ready_timeout", "fatal", "address",
                          "stats", "name"})
    if setup.get("image") is not None:
        raise setup.error("image", "a setup of the flow system names its image in system.path")
    path = field(node, "path", str, None)
    resolved, path_where = None, ""
    if path is not None:
        resolved = Path(path).expanduser()
        resolved = resolved if resolved.is_absolute() else base / resolved
        # checked when the image is made (the build stage, before any boot), not here: farm reproduce reads
        # the archived pipeline file, away from its paths, and boots the archived image instead
        path_where = node.where("path")
    boot = field(node, "boot", str, None)
    if boot is not None and boot not in SYSTEM_BOOTS:
        raise node.error("boot", f"{boot!r}: expected one of {', '.join(SYSTEM_BOOTS)}")
    load_addr = None
    if node.get("load_addr") is not None:
        try:
            load_addr = parse_address(node["load_addr"], "load_addr")
        except JobError as exc:
            raise node.error("load_addr", str(exc)) from None
    stage_addr = field(node, "stage_addr", str, None)
    if stage_addr is not None and not _ADDR.fullmatch(stage_addr):
        raise node.error("stage_addr", f"{stage_addr!r}: expected an address (0x44000000) or a U-Boot variable "
                                       "(${kernel_addr_r})")
    ready = _regex(node, "ready", require(node, "ready", str))
    if not ready:
        raise node.error("ready", "the console line that says the system is up is needed (a regular expression)")
    timeout = field(node, "ready_timeout", (int, float), 120.0)
    if isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT:
        raise node.error("ready_timeout", f"{timeout!r}: expected seconds, > 0 and <= {MAX_TIMEOUT:g}")
    fatal = tuple(_regex(node, "fatal", f) for f in string_list(node, "fatal"))
    address = field(node, "address", str, None)
    if address is not None and not is_ipv4(address):
        try:
            compiled = re.compile(address)
        except re.error as exc:
            raise node.error("address", f"{address!r} is neither an IPv4 address nor a regular expression: {exc}") from None
        if "address" not in compiled.groupindex:
            raise node.error("address", f"{address!r}: a pattern needs the group (?P<address>...) that holds the "
                                        "address (or give the address itself)")
    stats = []
    for i, item in enumerate(field(node, "stats", list, None) or []):
        if not isinstance(item, Node):
            raise node.error("stats", f"item {i}: expected {{pattern: REGEX, units: {{GROUP: UNIT}}}}")
        reject_unknown(item, {"pattern", "units", "metric"})
        units = field(item, "units", Node, None) or {}
        try:
            stats.append(stats_pattern(require(item, "pattern", str), dict(units), field(item, "metric", str, "")))
        except JobError as exc:
            raise node.error("stats", f"item {i}: {exc}") from None
    name = field(node, "name", str, None)
    return SystemSettings(ready=ready, path=resolved, boot=boot, load_addr=load_addr, stage_addr=stage_addr,
                          ready_timeout=float(timeout), fatal=fatal, address=address, stats=tuple(stats), name=name,
                          path_where=path_where)


def _make(settings: SystemSettings, setup: Any) -> Any:
    from ..boot.system import SystemFlow

    return SystemFlow(settings, setup)


def given_load_addr(settings: SystemSettings) -> int | None:
    """A setup without ``path`` boots the run's ``--image``: a raw binary of it loads at ``load_addr``."""
    return settings.load_addr if settings.path is None else None


SYSTEM_FLOW = FlowType(NAME, _make, key=NAME, read=read_settings, describe=SystemSettings.describe,
                       gives=(ServedTarget, ConsoleTarget), image_kind=SYSTEM, given_load_addr=given_load_addr)
