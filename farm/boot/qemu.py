"""labgrid's QEMUDriver, telling a dead board from a quiet one.

When the QEMU process exits (killed, crashed), its serial socket reads empty forever; the stock
driver hands pexpect those empty reads and a command waits out its whole timeout. Here the console
raises at once, like a real serial port that was unplugged.

What labgrid cannot default in an env file (see :mod:`farm.boot.lgenv`) it adds to QEMU's command
line: ``-accel`` (``accel``, else ``$LG_QEMU_ACCEL``, else tcg) and, for a user-mode ``nic`` without
``tftp=``, the root of the target's TFTPProvider, so QEMU serves what the job staged.

``virtualization: true`` gives an arm64 ``virt`` twin EL2 (``virtualization=on,gic-version=3``): its
Linux then starts at EL2, initializes KVM's hyp mode and has ``/dev/kvm``, so a guest under KVM runs
on the twin as on the board (see docs/guest.md).
"""

from __future__ import annotations

import select
import time

import attr
from labgrid.driver import QEMUDriver
from labgrid.factory import target_factory
from labgrid.step import step
from pexpect import TIMEOUT

from ..errors import InfrastructureError, JobError
from .lgenv import lg_value, local_tftp_root


@target_factory.reg_driver
@attr.s(eq=False)
class TwinQEMUDriver(QEMUDriver):
    bindings = {"tftp": {"TFTPProvider", None}}

    #: QEMU's accelerator; empty: ``$LG_QEMU_ACCEL``, else tcg (an ``-accel`` in extra_args wins)
    accel = attr.ib(default="", validator=attr.validators.instance_of(str))

    #: arm64 ``virt`` only: emulate EL2 and a GICv3, so the twin's Linux can run KVM guests
    virtualization = attr.ib(default=False, validator=attr.validators.instance_of(bool))

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.cpus: int | None = None  # a setup's cores (use_cpus): -smp, instead of extra_args' own
        self.nic_device: str | None = None  # a flow's NIC device (use_nic_device), instead of nic's model

    def use_cpus(self, cpus: int) -> None:
        """Start the twin with ``cpus`` vCPUs (a setup's cores: QEMU's ``-smp``), replacing the env file's
        ``-smp``; before the twin is powered on (its command line is made then)."""
        if isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1:
            raise JobError(f"{self.target.name}: cpus {cpus!r}: expected a number of vCPUs >= 1")
        self.cpus = cpus

    def use_nic_device(self, device: str) -> None:
        """Start the twin with its user-mode ``nic`` as this QEMU device (``virtio-net-pci,disable-legacy=on``:
        the DPDK flow's), the netdev's options (tftp=, hostfwd=) kept; before the twin is powered on."""
        self.nic_device = device

    def get_qemu_base_args(self):
        cmd = super().get_qemu_base_args()
        if self.cpus:
            for i in reversed(range(len(cmd))):
                if cmd[i] == "-smp" and i + 1 < len(cmd):
                    del cmd[i:i + 2]
                elif cmd[i].startswith("-smp="):
                    del cmd[i]
            cmd += ["-smp", str(self.cpus)]
        if self.virtualization:
            machine = cmd.index("-machine") + 1
            if cmd[machine].split(",")[0] != "virt":
                raise JobError(f"{self.target.name}: TwinQEMUDriver: virtualization: true needs "
                                          f"machine: virt (an arm64 twin), not {cmd[machine]!r}")
            if "virtualization=" not in cmd[machine]:
                cmd[machine] += ",virtualization=on"
            if "gic-version=" not in cmd[machine]:
                cmd[machine] += ",gic-version=3"
        if "-accel" not in cmd:
            cmd += ["-accel", self.accel or lg_value("LG_QEMU_ACCEL")]
        for i, arg in enumerate(cmd[:-1]):
            nic = cmd[i + 1]
            if arg == "-nic" and nic.startswith("user") and "tftp=" not in nic and self.tftp is not None:
                cmd[i + 1] = f"{nic},tftp={local_tftp_root(self.tftp.internal)}"
        if self.nic_device:
            cmd = nic_as_device(cmd, self.nic_device)
        return cmd

    #: seconds QEMU has to answer QMP's ``quit`` before it is killed (a PDU cuts power whatever the board does)
    quit_timeout = attr.ib(default=10.0, converter=float)

    @step()
    def off(self):
        """Power off: QMP ``quit``, and SIGKILL when QEMU does not answer in ``quit_timeout`` s.

        labgrid's ``off`` waits for QMP's answer with no bound. A guest that keeps printing while
        nobody reads its serial socket (a panicked kernel's stall reports, seen here after a test
        failure) fills the socket; QEMU's vCPU then retries that write holding QEMU's big lock, the
        main loop never reads the ``quit``, and the job hangs. So the console is drained first and
        drained while QEMU is asked to quit, and the answer is awaited with a deadline.
        """
        if not self.status:
            return
        if self._child.poll() is not None:  # QEMU is gone already (the board powered itself off)
            self._child.communicate()
            self._child = None
            self.status = 0
            return
        self._drain_console()
        self.qmp.monitor_in.write(b'{"execute": "quit"}\n')
        self.qmp.monitor_in.flush()
        deadline = time.monotonic() + self.quit_timeout
        while self._child.poll() is None and time.monotonic() < deadline:
            self._drain_console()  # a guest that goes on printing must not block QEMU until it quits
            time.sleep(0.02)
        if self._child.poll() is None:
            self.logger.warning("QEMU did not quit within %.0f s: killed", self.quit_timeout)
            self._child.kill()
        self._child.wait()
        self._child.communicate()  # its QMP answer and events, unread: nothing waits on them any more
        self._child = None
        self.status = 0

    def _drain_console(self, limit: int = 1 << 20) -> None:
        """Read what the serial socket holds, so that QEMU is not blocked writing to it. Through
        ``read`` (a labgrid step): the console log keeps it, e.g. the rest of a panic's trace."""
        drained = 0
        while drained < limit:
            try:
                drained += len(self.read(size=1, timeout=0.0, max_size=65536))
            except (TIMEOUT, InfrastructureError):
                return
            except Exception:  # not active any more (deactivation): read the socket itself
                ready, _, _ = select.select([self._clientsocket], [], [], 0)
                data = self._clientsocket.recv(65536) if ready else b""
                if not data:
                    return
                drained += len(data)

    def _powered_off(self, what: str) -> JobError:
        """A console used before the board was powered on (QEMU has no serial socket yet): say so,
        instead of labgrid's bare ``TypeError`` from ``select`` on no socket."""
        return JobError(f"{self.target.name}: its console was {what} while the board is powered off "
                        f"({type(self).__name__} is not on): power it on first, e.g. with the strategy "
                        f"(strategy.transition(\"shell\") boots it; labgrid-client -s shell), or use farm's "
                        f"farm_target fixture, which boots it")

    def _write(self, data):
        if not self.status or self._clientsocket is None:
            raise self._powered_off("written to")
        return super()._write(data)

    def _read(self, size=1, timeout=10, max_size=None):
        if not self.status or self._clientsocket is None:
            raise self._powered_off("read")
        ready, _, _ = select.select([self._clientsocket], [], [], timeout)
        if not ready:
            raise TIMEOUT(f"Timeout of {timeout:.2f} seconds exceeded")
        # the stock driver sleeps 10 ms here to gather a burst; every expect round trip (an echo check,
        # a U-Boot command, a shell marker) then waited for it. What is there now is read at once, up to 64 KiB.
        data = self._clientsocket.recv(min(max_size, 65536) if max_size else 65536)
        if not data:
            code = self._child.poll() if self._child else None
            raise InfrastructureError(f"{self.target.name}: serial console closed: the board's QEMU "
                                      + ("is gone" if code is None else f"exited with code {code}"))
        return data


#: the netdev id of a twin's NIC made a device (nic_as_device); QMP's hostfwd_add takes the first user netdev
NETDEV_ID = "farmnet0"


def nic_as_device(cmd: list[str], device: str) -> list[str]:
    """``cmd`` with its ``-nic user,model=M,OPTS`` as ``-netdev user,id=farmnet0,OPTS -device DEVICE,netdev=
    farmnet0`` (``-nic`` takes no device properties); a JobError when ``cmd`` has no user-mode ``-nic``."""
    out = list(cmd)
    for i, arg in enumerate(out[:-1]):
        if arg == "-nic" and out[i + 1].split(",")[0] == "user":
            options = [o for o in out[i + 1].split(",")[1:] if not o.startswith("model=")]
            out[i:i + 2] = ["-netdev", ",".join(["user", f"id={NETDEV_ID}", *options]),
                            "-device", f"{device},netdev={NETDEV_ID}"]
            return out
    raise JobError(f"the twin has no user-mode -nic to make a {device.split(',')[0]} (its env file's "
                   f"TwinQEMUDriver nic: user,model=...)")
