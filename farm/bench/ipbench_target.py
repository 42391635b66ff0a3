"""The controller's side of ipbench's target protocol: what ipbench's controller says to a CPU target
(``ipbenchd --target``, farm's ``farm_lukem``, or a shell-less system's benchmark component such as
the seL4/sDDF echo server's), over TCP.

One :class:`TargetSession` is one measurement, as one ipbench run is: connect (the target greets
``100 IPBENCH V1.0``), ``HELLO``, ``LOAD cpu_target_lukem``, ``SETUP args::"..."`` (the target's
measurement begins here), ``START`` (no reply), and later ``STOP``, whose reply carries the data
(:func:`farm.measure.lukem.parse_data`); the target closes the connection after it. Nothing here
knows how the target was started, or whether it has a shell::

    with cpu_target("127.0.0.1", 1236) as session:   # HELLO, LOAD, SETUP, START
        run_the_load()
    window = session.window                           # STOP's figures (a CpuWindow)

Every failure is a :class:`~farm.measure.BenchmarkError` of tool ``cpu_target`` naming the target's
address and the step (``127.0.0.1:1236: SETUP: 451 LOCAL PROCESSING ERROR (...)``); a session left by
an exception sends ``ABORT`` (best effort) so the target stops measuring.
"""

from __future__ import annotations

import contextlib
import re
import socket
from typing import Iterator

import attrs

from ..errors import ParseError
from ..measure import BenchmarkError
from ..measure import lukem

TOOL = "cpu_target"
MAX_DATA = 1 << 16  # a CPU target's data is a line; more is not one
_LENGTH = re.compile(r"^Content-length: (?P<n>\d+)\s*$")


@attrs.define
class TargetSession:
    """A connection to one target (see the module docstring). ``timeout`` bounds each reply."""

    host: str
    port: int
    timeout: float = 30.0
    _sock: socket.socket | None = None
    _buffer: bytes = b""
    window: lukem.CpuWindow | None = None

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def _fail(self, step: str, what: str) -> BenchmarkError:
        return BenchmarkError(TOOL, f"{self.where}: {step}: {what}")

    def connect(self) -> None:
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as e:
            raise self._fail("connect", f"{e.strerror or e} (is the CPU target running and reachable?)") from None
        self._expect("connect", 100)

    def _send(self, step: str, command: str) -> None:
        assert self._sock is not None, "connect() first"
        try:
            self._sock.sendall(command.encode("ascii") + b"\n")
        except OSError as e:
            raise self._fail(step, f"sending: {e.strerror or e}") from None

    def _read(self, step: str, n: int | None = None) -> bytes:
        """The next line (without its newline), or the next ``n`` bytes."""
        assert self._sock is not None, "connect() first"
        while (n is None and b"\n" not in self._buffer) or (n is not None and len(self._buffer) < n):
            if len(self._buffer) > MAX_DATA:
                raise self._fail(step, f"more than {MAX_DATA} bytes without an end: {self._buffer[:80]!r}")
            try:
                chunk = self._sock.recv(4096)
            except socket.timeout:
                raise self._fail(step, f"no reply within {self.timeout:g} s") from None
            except OSError as e:
                raise self._fail(step, f"reading: {e.strerror or e}") from None
            if not chunk:
                if n is not None and self._buffer:  # sDDF's data has no newline: the close ends it
                    break
                got = f" after {self._buffer[:80]!r}" if self._buffer else ""
                raise self._fail(step, f"the target closed the connection{got}")
            self._buffer += chunk
        if n is None:
            line, _, self._buffer = self._buffer.partition(b"\n")
            return line.rstrip(b"\r")
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def _expect(self, step: str, *codes: int) -> lukem.Status:
        line = self._read(step).decode("ascii", errors="replace")
        try:
            status = lukem.parse_status(line)
        except ParseError as e:
            raise self._fail(step, str(e)) from None
        if status.code not in codes:
            raise self._fail(step, line.strip()[:200])
        return status

    def begin(self, args: str = "", test: str = lukem.TEST) -> None:
        """HELLO, LOAD ``test``, SETUP ``args`` (the measurement begins), START."""
        if '"' in args or "\n" in args:
            raise self._fail("SETUP", f"args {args!r}: no quotes or newlines (the protocol quotes them)")
        self._send("HELLO", "HELLO")
        self._expect("HELLO", 200)
        self._send("LOAD", f"LOAD {test}")
        self._expect("LOAD", 200)
        self._send("SETUP", f'SETUP args::"{args}"')
        self._expect("SETUP", 200)
        self._send("START", "START")

    def stop(self) -> lukem.CpuWindow:
        """STOP; the target's figures (also kept in :attr:`window`)."""
        self._send("STOP", "STOP")
        status = self._expect("STOP", 220, 221)
        if status.code == 221:
            raise self._fail("STOP", f"the target says its data is invalid ({status.message})")
        header = self._read("STOP").decode("ascii", errors="replace")
        m = _LENGTH.match(header)
        if not m:
            raise self._fail("STOP", f"expected 'Content-length: N', got {header[:80]!r}")
        length = int(m["n"])
        if length > MAX_DATA:
            raise self._fail("STOP", f"Content-length {length}: more than a CPU target's line")
        data = self._read("STOP", length)
        try:
            self.window = lukem.parse_data(data, status.message)
        except ParseError as e:
            raise self._fail("STOP", str(e)) from None
        return self.window

    def abort(self) -> None:
        """Best effort: tell the target to stop measuring (an error ended the session)."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.sendall(b"ABORT\n")

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None


@contextlib.contextmanager
def cpu_target(host: str, port: int = lukem.PORT, *, args: str = "", timeout: float = 30.0) -> Iterator[TargetSession]:
    """A measurement from entering the block (SETUP, START) to leaving it (STOP): the figures are
    the session's :attr:`~TargetSession.window` afterwards. An exception inside the block aborts
    the measurement and passes on unchanged."""
    session = TargetSession(host, port, timeout)
    try:
        session.connect()
        session.begin(args)
        try:
            yield session
        except BaseException:
            session.abort()
            raise
        session.stop()
    finally:
        session.close()
