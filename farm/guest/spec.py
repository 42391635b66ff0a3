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
it may hold; errors name ``file:line: setups[i].guest.field``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import attrs

from ..config import Node, field, reject_unknown
from ..values import bootarg_problem, number_problem
from .channel import CPU_PORTS

ACCELS = ("kvm", "tcg")
#: the guest's network: QEMU's user network (slirp: NAT, host ports forwarded into the guest), or a tap
#: on a bridge of the host's NIC (vhost-net: the guest has an address of its own on the board's network)
NETWORKS = ("user", "tap")
RT_POLICIES = ("rr", "fifo")
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


def qemu_option(arg: str) -> str | None:
    """The QEMU option ``arg`` is, as QEMU reads it (``--smp`` is ``-smp``: QEMU drops one leading
    dash of two), or None when it is a value, not an option."""
    if len(arg) < 2 or not arg.startswith("-") or arg == "--":
        return None
    return arg[1:] if arg.startswith("--") else arg
FIELDS = ("image", "vcpus", "memory", "cpu", "accel", "pin", "rt", "bootargs", "ports", "boot_timeout",
          "extra_args", "network")


@attrs.frozen
class RtPolicy:
    """The real-time policy of the target-side benchmark servers: ``chrt -r|-f PRIORITY taskset -c CPUS``."""

    policy: Literal["rr", "fifo"]
    priority: int
    cpus: tuple[int, ...] | None = None

    def prefix(self) -> list[str]:
        """The command words that run a server under this policy (util-linux's chrt and taskset)."""
        words = ["chrt", "-r" if self.policy == "rr" else "-f", str(self.priority)]
        if self.cpus:
            words += ["taskset", "-c", ",".join(map(str, self.cpus))]
        return words


@attrs.frozen
class GuestSpec:
    image: Path | None = None  # a guest recipe; None: the setup's own bare image
    vcpus: int = 1
    memory_mb: int = 512
    cpu: str = "host"
    accel: Literal["kvm", "tcg"] = "kvm"  # tcg only as an explicit opt-in, recorded
    pin: tuple[int, ...] | None = None  # host core of vCPU i's thread
    rt: RtPolicy | None = None
    bootargs: tuple[str, ...] = ()
    ports: tuple[int, ...] = ()  # extra host ports forwarded into the guest (identity)
    boot_timeout: float = 120.0
    extra_args: tuple[str, ...] = ()
    network: Literal["user", "tap"] = "user"
    #: the guest's NIC as this QEMU device (its netdev added), instead of the architecture's default: a flow's
    #: (the DPDK flow's virtio-net-pci; not a pipeline field: DPDK has no virtio-mmio PMD)
    nic: str | None = None

    def to_json(self) -> dict:
        return {"image": str(self.image) if self.image else None, "vcpus": self.vcpus, "memory_mb": self.memory_mb,
                "cpu": self.cpu, "accel": self.accel, "pin": list(self.pin) if self.pin else None,
                "rt": attrs.asdict(self.rt) if self.rt else None, "bootargs": list(self.bootargs),
                "ports": list(self.ports), "boot_timeout": self.boot_timeout, "extra_args": list(self.extra_args),
                "network": self.network, **({"nic": self.nic} if self.nic else {})}


def load_guest(node: Node, base: Path) -> GuestSpec:
    """The ``guest:`` mapping of a setup; relative paths are relative to ``base`` (the pipeline's folder)."""
    reject_unknown(node, FIELDS)
    image = field(node, "image", str, None)
    image_path = None
    if image is not None:
        image_path = Path(image) if Path(image).is_absolute() else base / image
        if not image_path.is_file():
            raise node.error("image", f"guest recipe {image_path} not found")
    vcpus = _whole(node, "vcpus", 1, 1, MAX_VCPUS, "vCPUs")
    memory_mb = _memory(node)
    accel = field(node, "accel", str, "kvm")
    if accel not in ACCELS:
        raise node.error("accel", f"{accel!r}: expected kvm or tcg (tcg: software emulation, an explicit opt-in)")
    cpu = field(node, "cpu", str, None)
    if cpu is None:
        cpu = "host" if accel == "kvm" else "max"
    elif not _CPU_MODEL.fullmatch(cpu):
        raise node.error("cpu", f"{cpu!r} is not a QEMU CPU model name (letters, digits and . _ -)")
    elif cpu == "host" and accel == "tcg":
        raise node.error("cpu", "'host' needs accel: kvm; under tcg name a model (max, cortex-a53, ...)")
    pin = _cores(node, "pin")
    if pin is not None and len(pin) != vcpus:
        raise node.error("pin", f"{len(pin)} host cores for {vcpus} vCPUs: give one core per vCPU")
    bootargs = []
    for i, arg in enumerate(field(node, "bootargs", list, None) or []):
        if (problem := bootarg_problem(arg)):
            raise node.error("bootargs", f"item {i}: {problem}")
        bootargs.append(arg)
    ports = []
    for i, port in enumerate(field(node, "ports", list, None) or []):
        if (problem := number_problem(port, 1, MAX_PORT, whole=True)):
            raise node.error("ports", f"item {i}: {problem} (a TCP/UDP port)")
        if port in ports:
            raise node.error("ports", f"item {i}: port {port} is given twice")
        if port in CPU_PORTS:
            raise node.error("ports", f"item {i}: port {port} is a CPU channel's (farm.guest.channel: the host's "
                                      f"{CPU_PORTS[0]}, the guest's {CPU_PORTS[1]})")
        ports.append(int(port))
    boot_timeout = field(node, "boot_timeout", float, 120.0)
    if (problem := number_problem(boot_timeout, 0, MAX_BOOT_TIMEOUT, low_open=True, unit="s")):
        raise node.error("boot_timeout", problem)
    extra = []
    for i, arg in enumerate(field(node, "extra_args", list, None) or []):
        if not isinstance(arg, str) or not _QEMU_ARG.fullmatch(arg):
            raise node.error("extra_args", f"item {i} {arg!r}: a QEMU argument is letters, digits and "
                                           "_ . , : = / + @ % - (no spaces, quotes or shell syntax)")
        option = qemu_option(arg)
        if option in OWN_OPTIONS:
            said = f" ({arg} is {option} to QEMU)" if option != arg else ""
            raise node.error("extra_args", f"item {i} {arg!r}: farm sets {option} itself{said} (use the guest's "
                                           "own fields: vcpus, memory, cpu, accel; run.json records what they say)")
        extra.append(arg)
    network = field(node, "network", str, "user")
    if network not in NETWORKS:
        raise node.error("network", f"{network!r}: expected user (QEMU's user network, the default) or tap "
                                    "(a bridge on the host with vhost-net)")
    if network == "tap" and ports:
        raise node.error("ports", "forwards are for network: user; a tap guest has an address of its own on the "
                                  "board's network, every port of it reached there")
    return GuestSpec(image=image_path, vcpus=vcpus, memory_mb=memory_mb, cpu=cpu, accel=accel,  # type: ignore[arg-type]
                     pin=pin, rt=_rt(node), bootargs=tuple(bootargs), ports=tuple(ports),
                     boot_timeout=boot_timeout, extra_args=tuple(extra), network=network)  # type: ignore[arg-type]


def guest_of(setup: Node, base: Path, key: str = "guest") -> GuestSpec | None:
    """A setup's ``guest:`` (None when it has none); a guest that is not a mapping is refused."""
    if setup.get(key) is None:
        return None
    node = setup[key]
    if not isinstance(node, Node):
        raise setup.error(key, f"expected a mapping like {{vcpus: 1, memory: 512M}}, got {node!r}")
    return load_guest(node, base)


def _whole(node: Node, key: str, default: int, low: int, high: int, unit: str) -> int:
    value = node.get(key, default)
    if value is None:
        return default
    if (problem := number_problem(value, low, high, whole=True, unit=unit)):
        raise node.error(key, problem)
    return int(value)


def _memory(node: Node) -> int:
    value = node.get("memory")
    if value is None:
        return 512
    if isinstance(value, str):
        match = _MEMORY.fullmatch(value.strip())
        if not match:
            raise node.error("memory", f"{value!r}: expected MiB as a number, or e.g. 512M, 2G")
        value = int(match.group(1)) * (1024 if match.group(2).upper() == "G" else 1)
    if (problem := number_problem(value, MIN_MEMORY_MB, MAX_MEMORY_MB, whole=True, unit="MiB")):
        raise node.error("memory", problem)
    return int(value)


def _cores(node: Node, key: str) -> tuple[int, ...] | None:
    value = field(node, key, list, None)
    if value is None:
        return None
    if not value:
        raise node.error(key, "an empty list: give host cores, or leave the field out")
    for i, core in enumerate(value):
        if (problem := number_problem(core, 0, MAX_HOST_CPU, whole=True)):
            raise node.error(key, f"item {i}: {problem} (a host CPU number)")
    if len(set(value)) != len(value):
        raise node.error(key, f"a host core is given twice: {value}")
    return tuple(int(c) for c in value)


def _rt(node: Node) -> RtPolicy | None:
    rt = field(node, "rt", Node, None)
    if rt is None:
        return None
    reject_unknown(rt, ("policy", "priority", "cpus"))
    policy = field(rt, "policy", str, None)
    if policy is None:
        raise rt.error(None, f"missing required field '{rt.field('policy')}' (rr or fifo)")
    if policy not in RT_POLICIES:
        raise rt.error("policy", f"{policy!r}: expected rr or fifo (chrt -r / -f)")
    if rt.get("priority") is None:
        raise rt.error(None, f"missing required field '{rt.field('priority')}' (1-99)")
    priority = _whole(rt, "priority", 0, 1, 99, "(chrt's real-time priorities)")
    return RtPolicy(policy, priority, _cores(rt, "cpus"))  # type: ignore[arg-type]

