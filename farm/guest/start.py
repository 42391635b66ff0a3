"""Start a guest under QEMU on a booted host's serial console, use its shell, stop it.

    info = start_guest(booted.shell, booted.shell.console, spec, "/guest/Image", "/guest/initrd.cpio.zst",
                       guest_forwards([5201]), [])
    booted.shell.run_check("uname -a")        # runs IN THE GUEST now
    stop_guest(booted.shell, booted.shell.console)   # the host's shell again

QEMU runs in the foreground of the host's console (``-nographic -serial mon:stdio``), so the guest's
console *is* the board's console: the console log holds host and guest, and the guest's shell (the same
image's ``/init``, the same prompt) is driven by the same FarmShellDriver once it is synced to it.

Failures, by class: no KVM on the host with ``accel: kvm`` is a setup error (:class:`GuestSetupError`,
a JobError: the setup asks for what the host cannot do), quoting the host's dmesg line; a guest kernel
that panics is a test failure (the image did not boot); QEMU exiting is infrastructure, with its lines.
"""

from __future__ import annotations

import re
import shlex
import time

import attrs
from pexpect import TIMEOUT

from ..boot.watch import BootFailure, excerpt
from ..errors import InfrastructureError, JobError
from ..lgcompat import unread_console_input
from .command import EXIT_LINE, PIN_FAILED, QEMU_BINARIES, parse_pins, qemu_command, start_line, typed_lines
from .spec import GuestSpec

READY = re.compile(rb"FARM-READY kernel=(\S+) cpus=(\d+)")
#: the guest dying while it boots: a test failure of the guest's image (as on the bare board)
GUEST_FATAL = (rb"Kernel panic - not syncing[^\r\n]*[\r\n]", rb"Attempted to kill init[^\r\n]*[\r\n]")  # the whole line
#: dmesg lines that say whether Linux can run KVM guests (arm64; x86 says "kvm: ..." lines)
KVM_DMESG = "started at EL|Hyp mode|HYP mode|kvm"
KVM_READY = re.compile(r"Hyp mode initialized|VHE mode initialized|kvm: (?!no hardware support|disabled)")
QUIT_SECONDS = 20.0
#: the host shell's labgrid ``run`` while the guest owns the console: should QEMU die, a command meant
#: for the guest reaches the host's shell, and must fail at once (exit 125) instead of running on the host
HOST_GUARD = ('run() { echo -n "$MARKER"; echo "farm: the guest\'s QEMU has exited: this is the host\'s shell"; '
              'echo "$MARKER 125"; }')
#: set in the guest's shell, so that stop_guest knows whose shell it talks to
GUEST_MARK = "export FARM_GUEST=yes"


class GuestSetupError(JobError):
    """The setup's guest cannot run on this host as asked (no KVM, no EL2, no QEMU in the host image)."""


class QemuExited(InfrastructureError):
    """The guest's QEMU ended (its lines in the message): the lab's failure, as a board's QEMU gone."""


@attrs.frozen
class HostCheck:
    kvm_device: bool
    dmesg: tuple[str, ...]  # the host's KVM/EL lines
    qemu_version: str
    cpus: int


@attrs.frozen
class GuestInfo:
    """What a run records of a guest (run.json's topology)."""

    command: tuple[str, ...]  # QEMU's argument vector
    line: str  # what was typed on the host's shell (with the pinning helper)
    qemu_version: str
    accel: str
    vcpus: int
    memory_mb: int
    pinning: dict[int, int]  # vCPU -> host core
    threads: dict[int, int]  # vCPU -> host thread id
    forwards: dict[int, int]  # host port -> guest port (tcp and udp)
    boot_seconds: float  # host ready (QEMU started) -> guest FARM-READY
    kernel: str  # the guest's uname -r
    cpus: int  # the guest's nproc
    host_dmesg: tuple[str, ...]

    def to_json(self) -> dict:
        return {"qemu_command": list(self.command), "qemu_command_line": shlex.join(self.command),
                "qemu_version": self.qemu_version, "accel": self.accel, "vcpus": self.vcpus,
                "memory_mb": self.memory_mb, "pinning": {str(k): v for k, v in sorted(self.pinning.items())},
                "threads": {str(k): v for k, v in sorted(self.threads.items())},
                "forwards": {str(k): v for k, v in sorted(self.forwards.items())},
                "boot_seconds": round(self.boot_seconds, 3), "kernel": self.kernel, "cpus": self.cpus,
                "host_dmesg": list(self.host_dmesg)}


def kvm_problem(check: HostCheck, arch: str = "arm64") -> str | None:
    """Why the host cannot run a KVM guest (quoting its dmesg), or None. On arm64 the hypervisor
    says it initialized; on x86 a working KVM may say nothing, and /dev/kvm is the sign."""
    kvm_lines = [line for line in check.dmesg if "kvm" in line.lower()]
    # Linux registers /dev/kvm only once KVM initialized; dmesg is the explanation (it may have wrapped)
    ready = arch != "arm64" or not kvm_lines or any(KVM_READY.search(line) for line in kvm_lines)
    if check.kvm_device and ready:
        return None
    said = "; ".join(repr(line) for line in check.dmesg) or "no line about EL2 or KVM"
    what = "no /dev/kvm" if not check.kvm_device else "KVM not initialized"
    fix = ("Linux must be entered at EL2 (docs/guest.md)" if arch == "arm64"
           else "VT-x/AMD-V must be on in the PC's firmware and kvm_intel/kvm_amd in the host kernel")
    return f"accel: kvm, but the host cannot run KVM guests ({what}); the host's dmesg: {said}. {fix}; accel: tcg emulates instead"


def pin_problem(pin: tuple[int, ...] | None, host_cpus: int) -> str | None:
    bad = [c for c in pin or () if c >= host_cpus]
    return f"pin: host core {bad[0]} does not exist (the host has {host_cpus} cores: 0-{host_cpus - 1})" if bad else None


def check_host(shell, arch: str, kernel: str, initrd: str) -> HostCheck:
    """The host's KVM device, its dmesg lines about EL2/KVM, its QEMU and the guest's files."""
    device = shell.run_check("if [ -c /dev/kvm ]; then echo present; else echo absent; fi")[-1] == "present"
    dmesg = tuple(line.split("] ", 1)[-1].strip() for line in shell.run(f"dmesg | grep -E {shlex.quote(KVM_DMESG)}")[0])
    binary = QEMU_BINARIES[arch]
    out, _, code = shell.run(f"{binary} --version")
    if code != 0:
        raise GuestSetupError(f"the host image has no {binary} (exit {code}: {' '.join(out)[:200]}): "
                              "boot the host image of the setup (farm.images.build(recipe, guest=...))")
    for path in (kernel, initrd):
        if shell.run(f"test -f {shlex.quote(path)}")[2] != 0:
            raise GuestSetupError(f"the guest's {path} is not on the host (not a host image of this guest?)")
    cpus = int(shell.run_check("grep -c ^processor /proc/cpuinfo")[-1])
    return HostCheck(device, dmesg, out[0].strip() if out else "", cpus)


def start_guest(shell, console, spec: GuestSpec, guest_kernel: str, guest_initrd: str,
                forwards: dict[int, int], bootargs=(), arch: str = "arm64") -> GuestInfo:
    """Start the guest on the host's console and sync ``shell`` to the guest's shell."""
    host = check_host(shell, arch, guest_kernel, guest_initrd)
    if spec.accel == "kvm" and (problem := kvm_problem(host, arch)):
        raise GuestSetupError(problem)
    if (problem := pin_problem(spec.pin, host.cpus)):
        raise GuestSetupError(problem)
    command = qemu_command(spec, guest_kernel, guest_initrd, forwards, bootargs, arch)
    line = start_line(command, spec.pin, spec.vcpus)
    writes, typed = typed_lines(line)
    for write in writes:
        shell.run_check(write)
    shell.release_console()  # from now on the console is QEMU's (and then the guest's)
    console.sendline(HOST_GUARD)
    console.expect(shell.prompt, timeout=10)
    t0 = time.monotonic()
    console.sendline(typed)
    try:
        match, seen = _await_guest(console, spec, typed)
    except QemuExited:
        _back_to_host(shell, console, running=False)
        raise
    except Exception:  # not on Ctrl-C/SIGTERM: the flow powers the board off at once, nothing to wait for
        _back_to_host(shell, console)
        raise
    boot_seconds = time.monotonic() - t0
    pins = parse_pins(seen)
    if spec.pin and len(pins) != spec.vcpus:
        _back_to_host(shell, console)
        raise InfrastructureError(f"pinned {len(pins)} of {spec.vcpus} vCPU threads (QEMU's threads not found)")
    use_guest_shell(shell, mark=GUEST_MARK)
    return GuestInfo(command=tuple(command), line=line, qemu_version=host.qemu_version, accel=spec.accel,
                     vcpus=spec.vcpus, memory_mb=spec.memory_mb, pinning={v: c for v, (_, c) in pins.items()},
                     threads={v: t for v, (t, _) in pins.items()}, forwards=dict(forwards),
                     boot_seconds=boot_seconds, kernel=match.group(1).decode(), cpus=int(match.group(2)),
                     host_dmesg=host.dmesg)


def _await_guest(console, spec: GuestSpec, line: str):
    """Read the console until the guest's FARM-READY; every other end raises, QEMU still running or not."""
    seen = b""
    patterns = [READY.pattern, *GUEST_FATAL, EXIT_LINE.pattern, PIN_FAILED.pattern]
    deadline = time.monotonic() + spec.boot_timeout
    while True:
        try:
            index, before, match, _ = console.expect(patterns, timeout=max(0.1, deadline - time.monotonic()))
        except TIMEOUT:
            tail = excerpt(seen + unread_console_input(console), b"", 20)
            raise InfrastructureError(f"guest not ready in {spec.boot_timeout:g} s (no FARM-READY)\n"
                                      f"--- console ---\n{tail}") from None
        seen += before + match.group(0)
        text = match.group(0).decode("utf-8", "replace").strip()
        if index == 0:
            break
        if index in (1, 2):
            raise BootFailure(f"the guest did not boot: {'kernel panic' if index == 1 else 'init died'}: {text}\n"
                              f"--- console ---\n{excerpt(before, match.group(0))}")
        if index == 3:
            raise QemuExited(f"QEMU exited with status {match.group(1).decode()} before the guest was "
                                      f"ready\n--- console (QEMU's lines) ---\n{excerpt(_after_line(before, line), b'', 15)}")
        raise InfrastructureError(f"pinning the guest's vCPU threads failed: {text}")
    return match, seen


def use_guest_shell(shell, mark: str | None = None) -> None:
    """Sync the FarmShellDriver to the shell now on its console (the guest's, or the host's again)."""
    shell.resync(mark)


def stop_guest(shell, console, timeout: float = QUIT_SECONDS) -> int:
    """Power the guest off (``poweroff -f`` in it; QEMU's monitor ``Ctrl-A x`` if it does not go),
    wait for QEMU's exit, and sync ``shell`` to the host's shell again. Returns QEMU's exit status.

    Only a shell that says it is the guest's is told to power off: if QEMU died under the guest, the
    console holds the host's shell, which must not be powered off (a :class:`QemuExited` instead,
    the shell synced to the host's)."""
    try:
        out, _, code = shell.run("echo guest=${FARM_GUEST:-no}", timeout=10)
        whose = out if code == 0 else [f"exit {code}", *out]
    except Exception:  # the guest hangs, or its shell does not answer: QEMU's monitor ends it
        whose = None
    if whose is not None and whose != ["guest=yes"]:  # only the guest's own shell is powered off
        use_guest_shell(shell)  # the host's own run helper again, for what the flow does next
        raise QemuExited("the guest's QEMU had exited before the guest was stopped (the console is the "
                         f"host's: {' '.join(whose)[:200]})")
    shell.release_console()
    match = None
    if whose is not None:
        console.sendline("poweroff -f")
        try:
            match = console.expect(EXIT_LINE.pattern, timeout=timeout)[2]
        except TIMEOUT:
            pass
    if match is None:
        match = quit_qemu(console, timeout)
        if match is None:
            raise InfrastructureError(f"the guest's QEMU did not exit (poweroff -f, then Ctrl-A x)")
    use_guest_shell(shell)
    return int(match.group(1))


def _back_to_host(shell, console, running: bool = True) -> None:
    """After a failed start: QEMU ended (Ctrl-A x if it still runs) and the shell synced to the host's,
    best effort (the flow powers the board off after a failure anyway)."""
    try:
        if running:
            quit_qemu(console, timeout=5)
        use_guest_shell(shell)
    except Exception:
        shell.release_console()


def quit_qemu(console, timeout: float = QUIT_SECONDS):
    """QEMU's monitor escape on its stdio: Ctrl-A x quits QEMU; the host's shell prints its status."""
    try:
        console.sendcontrol("a")
        console.write(b"x")  # QEMU's -serial mon:stdio escape: "C-a x  exit emulator"
        _, _, match, _ = console.expect(EXIT_LINE.pattern, timeout=timeout)
        return match
    except (TIMEOUT, InfrastructureError, OSError):
        return None





def _after_line(before: bytes, line: str) -> bytes:
    """What came after the typed line's echo (QEMU's own messages), not the long line itself."""
    end = before.rfind(b"FARM-QEMU-EXIT=$s")
    if end < 0:
        end = before.rfind(line.encode())
    if end < 0:
        return before
    newline = before.find(b"\n", end)
    return before[newline + 1:] if newline >= 0 else b""
