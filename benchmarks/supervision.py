"""The benchmark's processes, kept the way farm keeps the virtual lab's (farm.virtual.processes).

Every child runs in a session of its own and is remembered as farm's :class:`Process` record (pid
*and* start time), so that stopping it is farm's :func:`stop` (SIGTERM to its group and direct
children, SIGKILL at the deadline) and never signals a stranger that reused the pid. Every child
also carries a token in its environment: at the end, whatever still carries it, at any depth (QEMU
inside pexpect's or LAVA's own session), is stopped the same way.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

from farm.proc import command_line, start_time
from farm.virtual.processes import Process, stop

TOKEN_VAR = "FARM_BENCH_TOKEN"


class Processes:
    def __init__(self, token: str | None = None):
        self.token = token or uuid.uuid4().hex
        self.env = {**os.environ, TOKEN_VAR: self.token}
        self.children: dict[subprocess.Popen, Process] = {}

    def popen(self, argv, **kw) -> subprocess.Popen:
        kw.setdefault("env", self.env)
        proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self.children[proc] = _record(proc.pid, argv)
        return proc

    def run(self, argv, timeout: float = 600, **kw) -> tuple[subprocess.CompletedProcess, float]:
        """Run to the end; returns the completed process and its wall time (start to exit)."""
        t0 = time.monotonic()
        proc = self.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(proc)
            proc.communicate()
            raise RuntimeError(f"{argv[:3]} did not finish within {timeout:.0f} s") from None
        finally:
            if proc.poll() is not None:
                self.forget(proc)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err), time.monotonic() - t0

    def forget(self, proc: subprocess.Popen) -> None:
        """``proc`` ended (its output was read to the end): nothing of it to stop any more."""
        self.children.pop(proc, None)

    def stop(self, proc: subprocess.Popen, grace: float = 10) -> None:
        """SIGTERM first (a farm child unwinds: power off, unstage), SIGKILL after ``grace`` s."""
        record = self.children.pop(proc, None)
        if record is not None and proc.poll() is None:
            stop(record, timeout=grace)
        if proc.poll() is None:  # not ours to the kernel any more (it left its group): kill it by pid
            proc.kill()
        proc.wait()

    def tokened_pids(self) -> list[int]:
        """Processes started by this run at any depth (QEMU in a pexpect session included)."""
        mine = []
        needle = f"{TOKEN_VAR}={self.token}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        mine.append(int(entry))
            except OSError:
                continue
        return mine

    def kill_if_ours(self, pid: int) -> bool:
        """Stop ``pid`` (e.g. from a pid file) if it carries this run's token, not a reused pid."""
        if pid not in self.tokened_pids():
            return False
        return stop(_found(pid), timeout=2) != "not running"

    def cleanup(self) -> list[int]:
        """Stop every child, then whatever still carries the token; returns those leftovers' pids."""
        for proc in list(self.children):
            self.stop(proc)
        leftovers = self.tokened_pids()
        for pid in leftovers:
            stop(_found(pid), timeout=2)
        return leftovers


def _record(pid: int, argv) -> Process:
    return Process(Path(str(argv[0])).name, pid, start_time(pid) or 0, tuple(map(str, argv)), log="")


def _found(pid: int) -> Process:
    """A process found by this run's token (its identity): recorded with the command line it has now, which
    farm.virtual.processes.stop compares before it signals."""
    seen = command_line(pid) or ""
    return _record(pid, seen.split(" ") if seen else ["gone"])
