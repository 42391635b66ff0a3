"""What a cold ``farm build`` says while it works: a line when a phase starts, one every
:data:`EVERY_S` seconds while it goes on (how far it is), and one when it ends (what it made, how long).

The phases of an image: ``resolve`` (apt's exact versions: one line when done, so that a recipe
naming an unknown package is still one line of error), ``download`` (the .debs), ``extract``
(``dpkg-deb -x``), ``kernel`` (a kernel built from source: farm.images.kernel says its own progress),
``programs`` (farm's benchmark programs, cross-compiled), ``initrd`` (the files collected, the cpio
written and compressed). A cached image says none of it. Lines go to stderr with ``farm:`` before
them, whole lines only, so a terminal and a CI log show the same thing (stdout's last line stays the
image directory).
"""

from __future__ import annotations

import time
from typing import Callable

import attrs

#: seconds between two lines of one phase that goes on
EVERY_S = 10.0


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@attrs.define
class BuildProgress:
    """Progress lines of one image's build (``say`` prints one; ``clock`` is seconds, monotonic)."""

    name: str
    say: Callable[[str], None]
    every: float = EVERY_S
    clock: Callable[[], float] = time.monotonic
    phase: str = ""
    total: int = 0
    done: int = 0
    nbytes: int = 0
    started: float = 0.0
    last: float = 0.0
    build_started: float = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.build_started = self.clock()

    def _line(self, text: str) -> None:
        self.say(f"build {self.name}: {text}")

    def start(self, phase: str, total: int = 0, what: str = "") -> None:
        """Phase ``phase`` begins, of ``total`` steps (0: not counted); ``what`` says what it does."""
        self.phase, self.total, self.done, self.nbytes = phase, total, 0, 0
        self.started = self.last = self.clock()
        self._line(f"{phase}: {what or (f'{total} to do' if total else 'started')} ...")

    def step(self, nbytes: int = 0) -> None:
        """One step of the phase done (``nbytes`` more made or fetched); a line when it has been a while."""
        self.done += 1
        self.nbytes += nbytes
        now = self.clock()
        if now - self.last >= self.every and self.done < self.total:
            self.last = now
            size = f", {_megabytes(self.nbytes)}" if self.nbytes else ""
            self._line(f"{self.phase}: {self.done} of {self.total}{size}, {now - self.started:.0f}s")

    def note(self, what: str) -> None:
        """A line within the phase: what it does now (a step that takes a while, e.g. the compression)."""
        self.last = self.clock()
        self._line(f"{self.phase}: {what}, {self.last - self.started:.0f}s")

    def end(self, what: str = "") -> None:
        """The phase is done; ``what`` it made (default: its count and bytes)."""
        now = self.clock()
        if not what:
            what = f"{self.done}" + (f" ({_megabytes(self.nbytes)})" if self.nbytes else "")
        self._line(f"{self.phase} done: {what} in {now - self.started:.0f}s")
        self.phase = ""

    def finished(self, what: str) -> None:
        self._line(f"built {what} in {self.clock() - self.build_started:.0f}s")
