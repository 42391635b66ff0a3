"""Long-running processes of the virtual lab: started detached, remembered by pid *and* start time.

``farm lab up`` returns while the lab keeps running, so its processes are not children of the
``farm`` that stops them. A pid alone may have been reused by then; the start time in
``/proc/<pid>/stat`` and the command line in ``/proc/<pid>/cmdline`` tell "our" process from a
stranger, so ``down`` never signals anything else: lab.json is data a hand may have edited or planted
(a foreign pid and its start time recorded under a QEMU's name), so the command line farm started must
be the process's too.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

import attrs

from ..errors import InfrastructureError
from ..schema import between, number, setting
from ..proc import command_line, parent_pid, start_time


@attrs.frozen
class Process:
    """A process farm started and left running (the lab's state file names each)."""

    name: str = setting(doc="what it is (coordinator, exporter, qemu maaxboard-1, ...)")
    pid: int = setting(doc="its process id", check=between(1, 2**22))
    start: int = setting(doc="its start time in clock ticks after boot (field 22 of /proc/<pid>/stat)",
                         check=number(0, 2**63, whole=True))
    argv: tuple[str, ...] = setting(doc="its command line")
    log: str = setting(doc="the file its output goes to")

    def as_dict(self) -> dict:
        return {**attrs.asdict(self), "argv": list(self.argv)}


def is_running(proc: Process) -> bool:
    """``proc`` is alive and is the process farm started: its pid, start time and command line. The
    recorded command line must appear in the process's own, whole arguments: an interpreter may stand
    before a script's (``python3 .venv/bin/labgrid-coordinator ...``) and a process may have rewritten its
    title around it (sshd's ``sshd: /usr/sbin/sshd -D ... [listener]``)."""
    if start_time(proc.pid) != proc.start or not proc.argv:
        return False
    seen = command_line(proc.pid)
    return seen is not None and f" {' '.join(_exec_of(proc.argv))} " in f" {seen} "


def _exec_of(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The command a recorded ``argv`` leaves running: ``ip netns exec NS CMD...`` (farm.virtual.netns) execs
    CMD in its place."""
    if len(argv) > 4 and argv[:3] == ("ip", "netns", "exec"):
        return argv[4:]
    return argv


def spawn(name: str, argv: list[str], log: Path, *, cwd: Path | None = None, env: dict | None = None) -> Process:
    """Start ``argv`` in a session of its own (it outlives us), output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            raise InfrastructureError(f"{name}: cannot start {argv[0]}: {exc.strerror}") from None
    started = start_time(child.pid)
    if started is None:
        child.wait()
        raise InfrastructureError(f"{name} exited at once (exit {child.returncode}); see {log}")
    # Popen would warn at exit about a child still running: from here on the lab owns it, not us
    child.returncode = 0
    return Process(name, child.pid, started, tuple(argv), str(log))


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (e.g. sshd's per-connection processes, which leave its session)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and parent_pid(int(entry.name)) == pid:
            found.append(int(entry.name))
    return found


def stop(proc: Process, timeout: float = 10.0) -> str:
    """SIGTERM the process (and its group, and its direct children), SIGKILL what is left at the deadline.

    Returns what happened: ``"stopped"``, ``"killed"`` or ``"not running"``. Only signals ``proc``
    if pid and start time still match.
    """
    if not is_running(proc):
        return "not running"
    strays = [(pid, start_time(pid)) for pid in children(proc.pid)]
    _signal_group(proc, signal.SIGTERM)
    for pid, started in strays:
        if started is not None and start_time(pid) == started:
            _kill(pid, signal.SIGTERM)
    if wait_for(lambda: not is_running(proc), timeout):
        outcome = "stopped"
    else:
        _signal_group(proc, signal.SIGKILL)
        wait_for(lambda: not is_running(proc), 5.0)
        outcome = "killed"
    for pid, started in strays:
        if started is not None and start_time(pid) == started:
            _kill(pid, signal.SIGKILL)
    return outcome


def _signal_group(proc: Process, sig: int) -> None:
    if not is_running(proc):
        return
    try:
        if os.getpgid(proc.pid) == proc.pid:  # spawn() made it a session (and group) leader
            os.killpg(proc.pid, sig)
            return
    except ProcessLookupError:
        return
    _kill(proc.pid, sig)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_for(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds passed; True if it held."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports of 127.0.0.1 that are free now (all held open until chosen)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def log_tail(path: str | Path, lines: int = 8) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
