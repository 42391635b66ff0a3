"""The host's load while the benchmark runs: 1-minute load average and other people's QEMUs, every second."""

from __future__ import annotations

import os
import statistics
import threading
import time
from pathlib import Path

from supervision import Processes


class LoadSampler(threading.Thread):
    """The machine's 1-minute load average and the other QEMUs running (not ours), every second."""

    def __init__(self, procs: Processes):
        super().__init__(daemon=True)
        self.procs = procs
        self.samples: list[tuple[float, float, int]] = []  # (time, loadavg1, other qemus)
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(1.0):
            load = float(Path("/proc/loadavg").read_text().split()[0])
            self.samples.append((time.monotonic(), load, self._other_qemus()))

    def _other_qemus(self) -> int:
        mine = set(self.procs.tokened_pids())
        count = 0
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in mine:
                try:
                    if Path(f"/proc/{entry}/comm").read_text().startswith("qemu-system"):
                        count += 1
                except OSError:
                    pass
        return count

    def summary(self, since: float = 0.0) -> dict:
        rows = [s for s in self.samples if s[0] >= since]
        if not rows:
            load = float(Path("/proc/loadavg").read_text().split()[0])
            return {"load_min": load, "load_median": load, "load_max": load, "other_qemus_max": 0}
        loads = [r[1] for r in rows]
        return {"load_min": min(loads), "load_median": statistics.median(loads), "load_max": max(loads),
                "other_qemus_max": max(r[2] for r in rows)}

