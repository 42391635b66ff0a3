"""labgrid's QEMUDriver, telling a dead board from a quiet one.

When the QEMU process exits (killed, crashed), its serial socket reads empty forever; the stock
driver hands pexpect those empty reads and a command waits out its whole timeout. Here the console
raises at once, like a real serial port that was unplugged.
"""

from __future__ import annotations

import select
import time

import attr
from labgrid.driver import QEMUDriver
from labgrid.factory import target_factory
from pexpect import TIMEOUT

from ..errors import InfrastructureError


@target_factory.reg_driver
@attr.s(eq=False)
class TwinQEMUDriver(QEMUDriver):
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
