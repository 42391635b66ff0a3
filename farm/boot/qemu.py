"""labgrid's QEMUDriver, telling a dead board from a quiet one.

When the QEMU process exits (killed, crashed), its serial socket reads empty forever; the stock
driver hands pexpect those empty reads and a command waits out its whole timeout. Here the console
raises at once, like a real serial port that was unplugged.

What labgrid cannot default in an env file (see :mod:`farm.boot.lgenv`) it adds to QEMU's command
line: ``-accel`` (``accel``, else ``$LG_QEMU_ACCEL``, else tcg) and, for a user-mode ``nic`` without
``tftp=``, the root of the target's TFTPProvider, so QEMU serves what the job staged.
"""

from __future__ import annotations

import select
import time

import attr
from labgrid.driver import QEMUDriver
from labgrid.factory import target_factory
from pexpect import TIMEOUT

from ..errors import InfrastructureError
from .lgenv import lg_value, local_tftp_root


@target_factory.reg_driver
@attr.s(eq=False)
class TwinQEMUDriver(QEMUDriver):
    bindings = {"tftp": {"TFTPProvider", None}}

    #: QEMU's accelerator; empty: ``$LG_QEMU_ACCEL``, else tcg (an ``-accel`` in extra_args wins)
    accel = attr.ib(default="", validator=attr.validators.instance_of(str))

    def get_qemu_base_args(self):
        cmd = super().get_qemu_base_args()
        if "-accel" not in cmd:
            cmd += ["-accel", self.accel or lg_value("LG_QEMU_ACCEL")]
        for i, arg in enumerate(cmd[:-1]):
            nic = cmd[i + 1]
            if arg == "-nic" and nic.startswith("user") and "tftp=" not in nic and self.tftp is not None:
                cmd[i + 1] = f"{nic},tftp={local_tftp_root(self.tftp.internal)}"
        return cmd

    def _read(self, size=1, timeout=10, max_size=None):
        ready, _, _ = select.select([self._clientsocket], [], [], timeout)
        if not ready:
            raise TIMEOUT(f"Timeout of {timeout:.2f} seconds exceeded")
        time.sleep(0.01)  # as the stock driver: let a burst of output arrive, read it in one go
        data = self._clientsocket.recv(min(max_size, 4096) if max_size else 4096)
        if not data:
            code = self._child.poll() if self._child else None
            raise InfrastructureError(f"{self.target.name}: serial console closed: the board's QEMU "
                                      + ("is gone" if code is None else f"exited with code {code}"))
        return data
