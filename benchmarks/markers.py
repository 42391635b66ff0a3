"""Where a boot's time goes, read from the outside: when each console marker arrived.

Feed every chunk of console bytes to :class:`MarkerClock` as it arrives; it notes the time of the
chunk in which each marker (in boot order) first completes. :func:`phases` turns the marks into the
durations of the boot's phases. Used for farm (labgrid's console read events) and for the naive
baseline (pexpect's logfile_read) alike, so both are timed the same way.
"""

from __future__ import annotations

import re
import time

# (name, pattern, which occurrence) in the order they appear on a netboot's console
MARKERS = (
    ("uboot", r"U-Boot 20", 1),
    ("autoboot", r"Hit any key to stop autoboot", 1),
    ("dhcp", r"DHCP client bound", 1),
    ("kernel_loaded", r"Bytes transferred", 1),
    ("initrd_loaded", r"Bytes transferred", 2),
    ("starting_kernel", r"Starting kernel", 1),
    ("init", r"farm-init: start", 1),
    ("ready", r"FARM-READY", 1),
    ("prompt", r"root@farm-target:[^ ]*# ", 1),
)

# phase name -> (from mark, to mark); "t0" is the call (QEMU start), "end" the second command's return
PHASES = (
    ("qemu start -> U-Boot banner", "t0", "uboot"),
    ("U-Boot init -> autoboot prompt", "uboot", "autoboot"),
    ("interrupt + dhcp", "autoboot", "dhcp"),
    ("tftp kernel", "dhcp", "kernel_loaded"),
    ("tftp initrd", "kernel_loaded", "initrd_loaded"),
    ("setenv + booti (+ unpack)", "initrd_loaded", "starting_kernel"),
    ("kernel boot -> /init", "starting_kernel", "init"),
    ("/init: modules + network", "init", "ready"),
    ("ready -> shell prompt", "ready", "prompt"),
    ("shell prompt -> 2nd command done", "prompt", "end"),
)


class MarkerClock:
    def __init__(self, t0: float | None = None):
        self.t0 = time.monotonic() if t0 is None else t0
        self.marks: dict[str, float] = {}
        self._text = ""
        self._pos = 0      # markers are searched from where the previous one matched
        self._next = 0
        self._seen: dict[str, int] = {}

    def feed(self, data: bytes, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._text += data.decode("utf-8", "replace")
        while self._next < len(MARKERS):
            name, pattern, occurrence = MARKERS[self._next]
            m = re.search(pattern, self._text[self._pos:])
            if not m:
                break
            self._pos += m.end()
            count = self._seen.get(pattern, 0) + 1
            self._seen[pattern] = count
            if count >= occurrence:
                self.marks[name] = now - self.t0
                self._next += 1
        if len(self._text) > 1 << 20:  # keep memory flat on a chatty console
            self._text, self._pos = self._text[self._pos:], 0

    # pexpect's logfile_read interface
    def write(self, data: bytes) -> None:
        self.feed(data)

    def flush(self) -> None:
        pass


def phases(marks: dict[str, float], end: float) -> dict[str, float]:
    """Durations of the phases whose two marks were both seen."""
    points = {"t0": 0.0, "end": end, **marks}
    return {name: points[b] - points[a] for name, a, b in PHASES if a in points and b in points}
