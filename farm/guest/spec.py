"""A setup's guest (``setups: [{name: kvm-guest, guest: {...}}]``), every value checked when the file is read.

    guest:
      image: ../images/maaxboard-bench.yaml   # the guest's recipe; default: the setup's own (bare) image
      vcpus: 2                                # -smp
      memory: 512M                            # -m (MiB as a number, or 512M / 2G)
      cpu: host                               # -cpu; under tcg a model (default there: max)
      accel: kvm                              # kvm (default, required on the host) or tcg (an explicit opt-in)
      pin: [2, 3]                             # host core of each vCPU thread (taskset), one per vCPU
      rt: {policy: fifo, priority: 50, cpus: [1]}   # the target-side benchmark servers under chrt/taskset
      bootargs: [maxcpus=2]                   # the guest kernel's extra arguments
      ports: [8000]                           # host ports forwarded into the guest besides the benchmarks'
      network: user                           # user (QEMU's user network, hostfwd; default) or tap (a bridge
                                              # on the host with vhost-net: the guest on the board's network)
      boot_timeout: 120                       # seconds from QEMU's start to the guest's FARM-READY
      extra_args: [-overcommit, mem-lock=on]  # more QEMU arguments, passed as they are

Values end up on the target's shell (QEMU's command line is typed there), so each is checked for what
it may hold (declared with farm.schema, read by farm.schema.read when the pipeline file is); errors name
``file:line: setups[i].guest.field``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import attrs

from ..config import Node
from ..schema import Invalid, each, number, setting, whole
from ..values import bootarg_problem, number_problem
from .channel import CPU_PORTS

MAX_VCPUS = 64
MIN_MEMORY_MB = 64  # Debian's arm64 kernel and a farm initrd need about this much to reach FARM-READY
MAX_MEMORY_MB = 1 << 20  # 1 TiB
MAX_HOST_CPU = 1023
MAX_BOOT_TIMEOUT = 3600.0
MAX_PORT = 65535
_CPU_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # host, max, cortex-a53, Skylake-Client-v4
_MEMORY = re.compile(r"(\d+)\s*([MG])i?B?", re.IGNORECASE)
#: a QEMU argument farm types on the host's shell (quoted there too): no spaces, quotes or shell syntax
_QEMU_ARG = re.compile(r"[A-Za-z0-9_.,:=/+@%-]{1,256}")
#: options farm sets itself; given again in extra_args they would contradict what is recorded (QEMU takes
#: the last of two: run.json's topology would be false). ``-readconfig`` and ``-set`` set any of them
#: from a file or by group; ``-no-kvm`` and ``-kvm`` are old spellings of the accelerator, ``-numa``
#: places the vCPUs
OWN_OPTIONS = frozenset({"-M", "-machine", "-cpu", "-enable-kvm", "-accel", "-smp", "-m", "-kernel", "-initrd",
                         "-append", "-netdev", "-nic", "-serial", "-nographic", "-name", "-device", "-monitor",
                         "-readconfig", "-set", "-no-kvm", "-kvm", "-numa"})


#: options that open a monitor or a debugger (on any address they are given: the board's network) or undo
#: farm's ``-no-reboot`` (``-action reboot=reset``): a guest's QEMU is farm's, run as farm runs it
UNSAFE_OPTIONS = {"-qmp": "opens a QEMU monitor", "-qmp-pretty": "opens a QEMU monitor", "-mon": "opens a QEMU monitor",
                  "-gdb": "opens a debugger's port", "-s": "opens a debugger's port (-gdb tcp::1234)",
                  "-action": "changes what a reset or a shutdown does (farm runs the guest with -no-reboot)",
                  "-no-reboot": "farm sets it itself", "-daemonize": "leaves the guest running unseen"}


def qemu_option(arg: str) -> str | None:
    """The QEMU option ``arg`` is, as QEMU reads it (``--smp`` is ``-smp``: QEMU drops one leading
    dash of two), or None when it is a value, not an option."""
    if len(arg) < 2 or not arg.startswith("-") or arg == "--":
        return None
    return arg[1:] if arg.startswith("--") else arg


def _memory(value: object) -> int:
    """MiB as a number, or ``512M`` / ``2G``."""
    if isinstance(value, str):
        match = _MEMORY.fullmatch(value.strip())
        if not match:
            raise Invalid(f"{value!r}: expected MiB as a number, or e.g. 512M, 2G")
        value = int(match.group(1)) * (1024 if match.group(2).upper() == "G" else 1)
    if (problem := number_problem(value, MIN_MEMORY_MB, MAX_MEMORY_MB, whole=True, unit="MiB")):
        raise Invalid(problem)
    return int(value)  # type: ignore[call-overload]


_memory.schema = {"anyOf": [{"type": "integer", "minimum": MIN_MEMORY_MB, "maximum": MAX_MEMORY_MB},  # type: ignore[attr-defined]
                            {"type": "string", "pattern": r"^\d+\s*[MGmg]i?[Bb]?$"}]}


def _cores(value: object) -> tuple[int, ...]:
    """Host cores: a non-empty list of CPU numbers, each once."""
    if not isinstance(value, list):
        raise Invalid(f"expected a list, got {type(value).__name__} {value!r}")
    if not value:
        raise Invalid("an empty list: give host cores, or leave the field out")
    for i, core in enumerate(value):
        if (problem := number_problem(core, 0, MAX_HOST_CPU, whole=True)):
            raise Invalid(f"item {i}: {problem} (a host CPU number)")
    if len(set(value)) != len(value):
        raise Invalid(f"a host core is given twice: {value}")
    return tuple(int(c) for c in value)


_cores.schema = {"type": "array", "minItems": 1, "uniqueItems": True,  # type: ignore[attr-defined]
                 "items": {"type": "integer", "minimum": 0, "maximum": MAX_HOST_CPU}}


def _ports(value: object) -> tuple[int, ...]:
    """Host ports forwarded into the guest: each a port, once, none a CPU channel's."""
    if not isinstance(value, list):
        raise Invalid(f"expected a list, got {type(value).__name__} {value!r}")
    ports: list[int] = []
    for i, port in enumerate(value):
        if (problem := number_problem(port, 1, MAX_PORT, whole=True)):
            raise Invalid(f"item {i}: {problem} (a TCP/UDP port)")
        if port in ports:
            raise Invalid(f"item {i}: port {port} is given twice")
        if port in CPU_PORTS:
            raise Invalid(f"item {i}: port {port} is a CPU channel's (farm.guest.channel: the host's "
                          f"{CPU_PORTS[0]}, the guest's {CPU_PORTS[1]})")
        ports.append(int(port))
    return tuple(ports)


_ports.schema = {"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": 1, "maximum": MAX_PORT}}  # type: ignore[attr-defined]


def _extra_args(value: object) -> tuple[str, ...]:
    """More QEMU arguments: each a word farm may type on the host's shell, none an option farm sets."""
    if not isinstance(value, list):
        raise Invalid(f"expected a list, got {type(value).__name__} {value!r}")
    for i, arg in enumerate(value):
        if not isinstance(arg, str) or not _QEMU_ARG.fullmatch(arg):
            raise Invalid(f"item {i} {arg!r}: a QEMU argument is letters, digits and _ . , : = / + @ % - (no "
                          "spaces, quotes or shell syntax)")
        option = qemu_option(arg)
        if option in OWN_OPTIONS:
            said = f" ({arg} is {option} to QEMU)" if option != arg else ""
            raise Invalid(f"item {i} {arg!r}: farm sets {option} itself{said} (use the guest's own fields: vcpus, "
                          "memory, cpu, accel; run.json records what they say)")
        if option in UNSAFE_OPTIONS:
            said = f" ({arg} is {option} to QEMU)" if option != arg else ""
            raise Invalid(f"item {i} {arg!r}: {option} {UNSAFE_OPTIONS[option]}{said}: not among a guest's extra "
                          "arguments")
    return tuple(value)


_extra_args.schema = {"type": "array", "items": {"type": "string", "pattern": "^" + _QEMU_ARG.pattern + "$"}}  # type: ignore[attr-defined]


def _cpu_model(value: str) -> str | None:
    return None if _CPU_MODEL.fullmatch(value) else f"{value!r} is not a QEMU CPU model name (letters, digits and . _ -)"


def _recipe_found(path: Path) -> str | None:
    return None if path.is_file() else f"guest recipe {path} not found"


@attrs.frozen
class RtPolicy:
    """The real-time policy of the target-side benchmark servers: ``chrt -r|-f PRIORITY taskset -c CPUS``."""

    policy: Literal["rr", "fifo"] = setting(doc="SCHED_RR or SCHED_FIFO (chrt -r / -f)", hint="chrt -r / -f")
    priority: int = setting(doc="the real-time priority, 1-99",
                            parse=whole(1, 99, unit="(chrt's real-time priorities)"))
    cpus: tuple[int, ...] | None = setting(None, parse=_cores, doc="the host cores they run on (taskset)")

    def prefix(self) -> list[str]:
        """The command words that run a server under this policy (util-linux's chrt and taskset)."""
        words = ["chrt", "-r" if self.policy == "rr" else "-f", str(self.priority)]
        if self.cpus:
            words += ["taskset", "-c", ",".join(map(str, self.cpus))]
        return words


@attrs.frozen
class GuestSpec:
    """A setup's Linux guest under QEMU/KVM on the netbooted target (docs/guest.md)."""

    SHAPE = "a mapping like {vcpus: 1, memory: 512M}"

    image: Path | None = setting(None, relative=True, check=_recipe_found,
                                 doc="the guest's recipe; default: the setup's own (bare) image")
    vcpus: int = setting(1, parse=whole(1, MAX_VCPUS, unit="vCPUs"), doc="vCPUs (-smp)")
    memory_mb: int = setting(512, key="memory", parse=_memory, doc="-m: MiB as a number, or e.g. 512M, 2G")
    #: None: ``host`` under kvm, ``max`` under tcg
    cpu: str = setting(None, check=_cpu_model, doc="-cpu; under tcg a model (default: host, under tcg max)")
    accel: Literal["kvm", "tcg"] = setting("kvm", hint="tcg: software emulation, an explicit opt-in",
                                           doc="kvm (required on the host) or tcg (an explicit opt-in, recorded)")
    pin: tuple[int, ...] | None = setting(None, parse=_cores, doc="the host core of each vCPU thread (taskset)")
    rt: RtPolicy | None = setting(None, doc="the target-side benchmark servers under chrt/taskset")
    bootargs: tuple[str, ...] = setting((), check=each(bootarg_problem), doc="the guest kernel's extra arguments")
    ports: tuple[int, ...] = setting((), parse=_ports, doc="host ports forwarded into the guest besides the benchmarks'")
    boot_timeout: float = setting(120.0, check=number(0, MAX_BOOT_TIMEOUT, low_open=True, unit="s"),
                                  doc="seconds from QEMU's start to the guest's FARM-READY")
    extra_args: tuple[str, ...] = setting((), parse=_extra_args, doc="more QEMU arguments, passed as they are")
    network: Literal["user", "tap"] = setting(
        "user", hint="user: QEMU's user network, the default; tap: a bridge on the host with vhost-net",
        doc="user (QEMU's user network, hostfwd) or tap (a bridge on the host with vhost-net: the guest on the "
            "board's network)")
    #: the guest's NIC as this QEMU device (its netdev added), instead of the architecture's default: a flow's
    #: (the DPDK flow's virtio-net-pci; not a pipeline field: DPDK has no virtio-mmio PMD)
    nic: str | None = setting(None, read=False)

    def __attrs_post_init__(self) -> None:
        if self.cpu is None:
            object.__setattr__(self, "cpu", "host" if self.accel == "kvm" else "max")  # frozen: attrs' own way

    def validate(self, given: dict) -> None:
        """The fields together (farm.schema.read calls it after each field's own check)."""
        if self.cpu == "host" and self.accel == "tcg":
            raise Invalid("'host' needs accel: kvm; under tcg name a model (max, cortex-a53, ...)", key="cpu")
        if self.pin is not None and len(self.pin) != self.vcpus:
            raise Invalid(f"{len(self.pin)} host cores for {self.vcpus} vCPUs: give one core per vCPU", key="pin")
        if self.network == "tap" and self.ports:
            raise Invalid("forwards are for network: user; a tap guest has an address of its own on the board's "
                          "network, every port of it reached there", key="ports")

    def to_json(self) -> dict:
        return {"image": str(self.image) if self.image else None, "vcpus": self.vcpus, "memory_mb": self.memory_mb,
                "cpu": self.cpu, "accel": self.accel, "pin": list(self.pin) if self.pin else None,
                "rt": attrs.asdict(self.rt) if self.rt else None, "bootargs": list(self.bootargs),
                "ports": list(self.ports), "boot_timeout": self.boot_timeout, "extra_args": list(self.extra_args),
                "network": self.network, **({"nic": self.nic} if self.nic else {})}


def guest_of(setup: Node, key: str = "guest") -> GuestSpec | None:
    """A setup's ``guest:`` (None when it has none), read and checked (farm.schema.read); relative paths
    are relative to the pipeline file's folder."""
    from ..schema.read import structure

    if setup.get(key) is None:
        return None
    node = setup[key]
    if not isinstance(node, Node):
        raise setup.error(key, f"expected {GuestSpec.SHAPE}, got {node!r}")
    return structure(node, GuestSpec)
