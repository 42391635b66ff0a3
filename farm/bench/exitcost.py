"""The benchmark ``exitcost``: what a KVM guest exit costs on arm64, by farm's bare-metal program
``farm-exitcost`` (``images/baremetal/exitcost.c``) run as a KVM guest of QEMU on the target's Linux.

    benchmarks:
      - exitcost: {iterations: 1000}

The program is built on the lab host with the cross gcc (farm.images.baremetal: the same sources,
flags and compiler give the same bytes), written to the target through its shell (base64, a few KB),
and run as ``qemu-system-aarch64 -M virt,gic-version=3 -accel kvm -cpu host`` with a virtio-mmio
device for QEMU to answer; it times each exit ``iterations`` times by the virtual counter and powers
off. Its records (farm.measure.exitcost): ``ticks`` (counter ticks per exit) and ``time`` (ns) per
``test`` (hvc, timer-sysreg, gicd-read, mmio-qemu), with ``counter=cntvct`` and its frequency as
identity, so ``farm compare`` of two setups (host configurations: cores, pinning, a frequency) gives
their ratios. It needs KVM on the target (the EL2 twin: ``env/qemu-maaxboard-el2.yaml``) and QEMU in
its image (the registration's needs: the recipe gains it).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import shlex

import attrs

from ..errors import JobError
from ..images.needs import Needs
from ..measure import BenchmarkError, Measurement
from ..measure.exitcost import parse_exitcost
from .context import BenchContext
from .params import Params, param

PROGRAM = "farm-exitcost"
SOURCES = ("start.S", "runtime.c", "fdt.c", "exitcost.c")
LOAD_ADDR = 0x40080000  # QEMU virt puts a bare ELF's device tree at the start of RAM (0x40000000)
TARGET_PATH = "/tmp/farm-exitcost.elf"
CHUNK = 512  # base64 characters a shell line carries
MAX_ITERATIONS = 10_000_000
QEMU = ("qemu-system-arm", "/usr/bin/qemu-system-aarch64")


def _iterations(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ITERATIONS:
        raise JobError(f"{name}: {value!r}: expected a whole number of exits, 1-{MAX_ITERATIONS}")


@attrs.frozen(kw_only=True)
class ExitcostParams(Params):
    """``exitcost: {...}`` of a pipeline (see the module docstring)."""

    LABEL = "exitcost"

    iterations: int = param(1000, kind=int, run_length=True, check=_iterations, doc="exits per test")
    timeout: int | float = param(120, kind=(int, float), run_length=True, doc="seconds the guest may take")

    def needs(self) -> Needs:
        return Needs(packages=(QEMU[0],), files=(QEMU[1],))


def guest_command(iterations: int, path: str = TARGET_PATH) -> str:
    """The target's command: the program as a KVM guest of QEMU, its console on stdout (pure)."""
    return " ".join(["qemu-system-aarch64", "-M", "virt,gic-version=3", "-accel", "kvm", "-cpu", "host", "-m", "64M",
                     "-nographic", "-nodefaults", "-serial", "stdio", "-kernel", shlex.quote(path), "-append",
                     f"iterations={int(iterations)}", "-netdev", "user,id=n", "-device", "virtio-net-device,netdev=n",
                     "-global", "virtio-mmio.force-legacy=false"])


@functools.cache
def program_elf() -> bytes:
    """farm-exitcost's ELF, built with the cross gcc once per process: every boot of a run runs the same bytes
    (two builds differ: the ELF's symbol table names gcc's temporary object of start.S)."""
    from ..images.baremetal import program

    return program(PROGRAM, *SOURCES, load_addr=LOAD_ADDR).compile("arm64")[0]


def run_exitcost(ctx: BenchContext, params: ExitcostParams) -> list[Measurement]:
    """Write the program to the target, run it under KVM, read its console."""
    if ctx.booted.arch != "arm64":
        raise JobError("exitcost: farm-exitcost is an arm64 program (x86's exit costs: farm import vmexit)")
    elf = program_elf()
    # built here, not in an image: run.json's programs says which bytes ran (as its images' manifests do)
    ctx.program_built(PROGRAM, {"sha256": hashlib.sha256(elf).hexdigest(), "size": len(elf), "arch": "arm64",
                                "load_addr": f"{LOAD_ADDR:#x}", "sources": list(SOURCES), "path": TARGET_PATH})
    text = base64.b64encode(elf).decode()
    ctx.run(f"rm -f {TARGET_PATH}.b64", tool=PROGRAM)
    for i in range(0, len(text), CHUNK):
        ctx.run(f"echo {text[i:i + CHUNK]} >> {TARGET_PATH}.b64", tool=PROGRAM)
    ctx.run(f"base64 -d {TARGET_PATH}.b64 > {TARGET_PATH} && rm {TARGET_PATH}.b64", tool=PROGRAM)
    ctx.run("[ -c /dev/kvm ] || { echo 'no /dev/kvm: the target has no KVM (the EL2 twin does)'; exit 1; }",
            tool="kvm")
    output = ctx.run(f"timeout {float(params.timeout):g} {guest_command(params.iterations)} 2>&1", tool=PROGRAM,
                     timeout=float(params.timeout) + 30)
    try:
        return parse_exitcost("\n".join(output))
    except Exception as exc:
        from ..errors import ParseError

        if isinstance(exc, ParseError):
            raise BenchmarkError(PROGRAM, f"{exc}: {' | '.join(output[-3:])}") from None
        raise
