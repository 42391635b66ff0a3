"""The lean kernel, compiled in the background from the twins lane's start while the other tests run.

A lean kernel is minutes of both cores on a fresh machine (docs/images.md), and the tests that boot one are
few. So when a session collects such a test (marked ``lean``), one ``farm build`` of each lean recipe (:data:`LEAN_RECIPES`) starts
with the first test of the twins lane (tests/lanes.py: in the xdist worker that runs the lean tests), niced to the lowest priority: it takes the CPU time the other tests leave (a twin waiting on its
console, a coordinator, a browser), and barely slows them (a nice-19 process gets ~1.5 % of a busy core).
The ``lean`` tests run last (tests/lanes.py) and wait for it (:func:`lean_image`); with the
kernels in the cache already each build is over in a fraction of a second.

The builds go into the user's farm cache (``FARM_CACHE``, else ``~/.cache/farm``) as any build does, under
its locks; the output is in ``$TMPDIR/farm-lean-prebuild-*.log``. A build that failed is built again by the
test itself, which then shows the error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the arm64 one only: the x86 lean kernel (~8 niced core-minutes cold) is booted by benchmarks/lean_boot.py,
# its builder's arch by the tiny x86 kernel of tests/images/test_kernel_build.py
LEAN_RECIPES = ("maaxboard-lean",)
MARKER = "lean"


class Prebuild:
    """The background builds of one session (a process group of its own: stopped whole at the end)."""

    def __init__(self, log: Path, script: str | None = None):
        self.log = log
        self.started = time.monotonic()
        script = script or "; ".join(f"{sys.executable} -m farm.cli build {ROOT / 'images' / f'{r}.yaml'} >/dev/null"
                                     for r in LEAN_RECIPES)
        self.proc = subprocess.Popen(["nice", "-n", "19", "sh", "-c", script], cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        self.waited: float | None = None

    def wait(self, timeout: float = 3600) -> int:
        """Wait for the builds (the first caller records how long it waited); their exit status. A build
        still running is on the session's critical path now: back to normal priority (where allowed)."""
        t0 = time.monotonic()
        self.raise_priority()
        code = self.proc.wait(timeout=timeout)
        if self.waited is None:
            self.waited = time.monotonic() - t0
        return code

    def raise_priority(self) -> None:
        try:
            for pid in _group_pids(self.proc.pid):
                os.setpriority(os.PRIO_PROCESS, pid, 0)
        except OSError:  # lowering a nice value needs CAP_SYS_NICE (CI runs as root; a user may not)
            pass

    def stop(self) -> None:
        """End the builds, all of the group (make's compilers too): SIGTERM (farm build leaves its cache
        consistent), SIGKILL to what is left after a minute."""
        if self.proc.poll() is None or _group_pids(self.proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while (self.proc.poll() is None or _live(_group_pids(self.proc.pid))) and time.monotonic() < deadline:
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _live(pids: list[int]) -> list[int]:
    """Those that are not zombies (an orphan's exit is reaped by init, a moment later)."""
    def state(pid: int) -> str:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return "X"
        return stat[stat.rindex(")") + 2:].split()[0]
    return [p for p in pids if state(p) not in ("Z", "X")]


def _group_pids(pgid: int) -> list[int]:
    """The processes of a process group (nice is per process: make and its compilers each have their own)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


_prebuild: Prebuild | None = None


def start() -> None:
    global _prebuild
    if _prebuild is None:
        fd, log = tempfile.mkstemp(prefix="farm-lean-prebuild-", suffix=".log")
        os.close(fd)
        _prebuild = Prebuild(Path(log))


def stop() -> None:
    if _prebuild is not None:
        _prebuild.stop()


def lean_image(recipe: str):
    """The lean image of ``recipe`` (maaxboard-lean): after the session's background build, from
    the cache; built here when there was none or it failed (so its error shows)."""
    from farm.images.build import build

    if _prebuild is not None:
        code = _prebuild.wait()
        print(f"lean kernels: background build exit {code} after {time.monotonic() - _prebuild.started:.0f} s, "
              f"this test waited {_prebuild.waited:.0f} s for it (log {_prebuild.log})")
    return build(ROOT / "images" / f"{recipe}.yaml")
