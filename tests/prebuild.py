"""The lean kernels, compiled in the background from the session's start while the other tests run.

A lean kernel is minutes of both cores on a fresh machine (docs/images.md), and the tests that boot one are
few. So when a session collects such a test (marked ``lean``), one ``farm build`` of each lean recipe starts
at once, niced to the lowest priority: it takes the CPU time the other tests leave (a twin waiting on its
console, a coordinator, a browser), and barely slows them (a nice-19 process gets ~1.5 % of a busy core).
The ``lean`` tests are moved to the end of the session and wait for it (:func:`lean_image`); with the
kernels in the cache already each build is over in a fraction of a second.

The builds go into the user's farm cache (``FARM_CACHE``, else ``~/.cache/farm``) as any build does, under
its locks; the output is in ``$TMPDIR/farm-lean-prebuild-*.log``. A build that failed is built again by the
test itself, which then shows the error.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEAN_RECIPES = ("maaxboard-lean", "x86-lean")
MARKER = "lean"


class Prebuild:
    """The background builds of one session (a process group of its own: stopped whole at the end)."""

    def __init__(self, log: Path):
        self.log = log
        self.started = time.monotonic()
        script = "; ".join(f"{sys.executable} -m farm.cli build {ROOT / 'images' / f'{r}.yaml'} >/dev/null"
                           for r in LEAN_RECIPES)
        self.proc = subprocess.Popen(["nice", "-n", "19", "sh", "-c", script], cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        self.waited: float | None = None

    def wait(self, timeout: float = 3600) -> int:
        """Wait for the builds (the first caller records how long it waited); their exit status."""
        t0 = time.monotonic()
        code = self.proc.wait(timeout=timeout)
        if self.waited is None:
            self.waited = time.monotonic() - t0
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # farm build leaves its cache consistent on SIGTERM
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


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
    """The lean image of ``recipe`` (maaxboard-lean, x86-lean): after the session's background build, from
    the cache; built here when there was none or it failed (so its error shows)."""
    from farm.images.build import build

    if _prebuild is not None:
        code = _prebuild.wait()
        print(f"lean kernels: background build exit {code} after {time.monotonic() - _prebuild.started:.0f} s, "
              f"this test waited {_prebuild.waited:.0f} s for it (log {_prebuild.log})")
    return build(ROOT / "images" / f"{recipe}.yaml")


def order_last(items: list) -> None:
    """The ``lean`` tests after all others, in their order (pytest's collection hook)."""
    lean = [item for item in items if item.get_closest_marker(MARKER)]
    if lean:
        items[:] = [item for item in items if not item.get_closest_marker(MARKER)] + lean
