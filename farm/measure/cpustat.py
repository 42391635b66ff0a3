"""CPU utilisation of a target from two ``/proc/stat`` snapshots, the ``CPU_Utilisation`` column.

The target is a busybox initrd, so the cheapest measurement is ``cat /proc/stat`` before and after
the load and this arithmetic on the host: nothing runs on the target while it is measured.

What is counted, and why
------------------------
The aggregate ``cpu`` line holds, in ``USER_HZ`` ticks summed over all cores (``proc(5)``):
``user nice system idle iowait irq softirq steal guest guest_nice``. ``guest`` and ``guest_nice``
are *already included* in ``user`` and ``nice`` (the kernel's ``account_guest_time`` adds guest
time to ``user`` or ``nice`` as well as to ``guest`` or ``guest_nice``), so they are parsed but left
out of the total to avoid counting them twice.

Utilisation is ``100 * (1 - Δidle / Δtotal)`` with ``idle = idle + iowait``:

* ``iowait`` is idle time: a CPU "waiting for I/O" runs nothing and would run anything that
  asked. proc(5) also calls the field unreliable: the split between ``idle`` and ``iowait`` is an
  estimate and ``iowait`` "may decrease in certain conditions". Their sum is the stable quantity,
  so it is the sum that must not go backwards, not each counter.
* ``steal`` (a hypervisor ran someone else) is *not* idle: the guest could not have used that time.

Compared with ipbench: ipbench's ``cpu_target_lukem`` (au-ts/ipbench,
``ipbench2/src/tests/cpu_target_lukem/cpu_target_lukem.c``) runs a ``nice(20)`` thread that
spins reading the cycle counter; any gap longer than a context switch is "busy", and it reports
``(1 - idle/total) * 100`` with one decimal. Its ``cpu_target`` (cyclesoak) forks one spinner per
CPU, calibrates them on an idle system and averages ``1 - loops/calibrated`` over CPUs. Both count
as idle exactly the time in which the lowest-priority runnable task would get the CPU, which is
what ``idle + iowait`` counts here; steal lowers the spinner's share too, as it does here. The
differences: we average over *all* cores (like cyclesoak, unlike the single lukem thread, which
sees one core), at tick resolution (``USER_HZ`` = 100: 10 ms, so runs should last seconds), and nothing
competes with the load for the CPU while we measure. Some targets' own ipbench CPU responders
report raw ``idle,total`` cycle counts instead (the ``Idle_Cycles,Total_Cycles`` columns of some lab files);
:func:`cycles_utilisation` turns those into the same percentage.
"""

from __future__ import annotations

import attrs

from farm.errors import ParseError

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
_MIN_FIELDS = 4  # Linux 2.4 had user nice system idle; later kernels appended the rest


@attrs.frozen
class CpuTimes:
    """The aggregate ``cpu`` line of ``/proc/stat``, in ticks summed over all cores.

    Fields a kernel does not print (older than 2.6.33 for ``guest_nice``, ...) are 0. ``cpus`` is
    the number of ``cpuN`` lines, for reports; it does not enter the arithmetic.
    """

    user: int
    nice: int
    system: int
    idle: int
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0
    guest: int = 0
    guest_nice: int = 0
    cpus: int = 0

    @property
    def idle_all(self) -> int:
        """Ticks in which the CPUs ran nothing: ``idle + iowait``."""
        return self.idle + self.iowait

    @property
    def total(self) -> int:
        """All ticks, without ``guest``/``guest_nice`` (already inside ``user``/``nice``)."""
        return (self.user + self.nice + self.system + self.idle + self.iowait
                + self.irq + self.softirq + self.steal)


def parse_proc_stat(text: str) -> CpuTimes:
    """The aggregate ``cpu`` line of a ``/proc/stat`` snapshot (the per-core lines are counted).

    Raises :class:`~farm.errors.ParseError` naming the line when the ``cpu`` line has fewer than
    4 or more than 10 numbers, or a field that is not a non-negative integer, and when there is no
    ``cpu`` line at all (e.g. a shell error message captured instead of the file).
    """
    found: CpuTimes | None = None
    cpus = 0
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if fields[0].startswith("cpu") and fields[0][3:].isdigit():
            cpus += 1
        elif fields[0] == "cpu":
            if found is not None:
                raise ParseError(f"/proc/stat line {number}: a second aggregate 'cpu' line "
                                 "(two snapshots pasted together?)")
            found = _cpu_line(number, fields[1:])
    if found is None:
        first = next((line for line in text.splitlines() if line.strip()), "")
        shown = f"; line 1 is {first[:80]!r}" if first else " (empty text)"
        raise ParseError(f"/proc/stat: no aggregate 'cpu' line{shown}")
    return attrs.evolve(found, cpus=cpus)


def _cpu_line(number: int, values: list[str]) -> CpuTimes:
    if not _MIN_FIELDS <= len(values) <= len(FIELDS):
        raise ParseError(f"/proc/stat line {number}: 'cpu' line has {len(values)} numbers, "
                         f"expected {_MIN_FIELDS} to {len(FIELDS)} ({' '.join(FIELDS)})")
    ticks: dict[str, int] = {}
    for name, value in zip(FIELDS, values):
        if not value.isdigit():  # ASCII digits only: no sign, no decimal point
            raise ParseError(f"/proc/stat line {number}: {name} is {value!r}, expected a whole "
                             "number of ticks")
        ticks[name] = int(value)
    return CpuTimes(**ticks)


def utilisation(before: CpuTimes, after: CpuTimes) -> float:
    """Percent of CPU time (all cores) that was not idle between two snapshots:
    ``100 * (1 - Δ(idle + iowait) / Δtotal)``, in [0, 100].

    Raises :class:`~farm.errors.ParseError` when no tick elapsed (snapshots too close together or
    the same one twice) or a counter went backwards (the target rebooted in between, or the two
    snapshots come from different machines): any number computed from those would be made up.
    """
    for name in ("user", "nice", "system", "idle_all", "irq", "softirq", "steal"):
        if getattr(after, name) < getattr(before, name):
            label = "idle+iowait" if name == "idle_all" else name
            raise ParseError(f"/proc/stat snapshots: {label} went backwards ({getattr(before, name)} "
                             f"-> {getattr(after, name)}); did the target reboot in between?")
    total = after.total - before.total
    if total <= 0:
        raise ParseError("/proc/stat snapshots: no CPU time elapsed between them (same snapshot "
                         "twice, or less than one tick apart)")
    idle = after.idle_all - before.idle_all
    return 100.0 * (1.0 - idle / total)


def cycles_utilisation(idle: float, total: float) -> float:
    """``100 * (1 - idle/total)`` from ipbench-style idle and total cycle counts."""
    if total <= 0 or idle < 0 or idle > total:
        raise ValueError(f"idle {idle} and total {total} cycles: expected 0 <= idle <= total, total > 0")
    return 100.0 * (1.0 - idle / total)


#: the ``cpu`` lines of /proc/stat with busybox sh builtins only (no process started: a reader forked on a
#: guest's one vCPU under nested emulation costs a fifth of its time)
SNAPSHOT = 'while read -r l; do case "$l" in cpu*) echo "$l";; *) break;; esac; done < /proc/stat'
#: between the two snapshots of a window
WINDOW_MARK = "--"


def window_command(seconds: float) -> str:
    """The target's command for a window of CPU times ``seconds`` long: a snapshot, ``sleep``, a snapshot."""
    if not 0 < seconds <= 3600:
        raise ValueError(f"a CPU window of {seconds!r} s: expected 0 < s <= 3600")
    return f"{SNAPSHOT}; echo {WINDOW_MARK}; sleep {seconds:g}; {SNAPSHOT}"


def parse_window(lines: list[str]) -> tuple[dict[str, CpuTimes], dict[str, CpuTimes]]:
    """The two snapshots :func:`window_command` printed (each as :func:`parse_proc_stat_cores`)."""
    if WINDOW_MARK not in lines:
        raise ParseError(f"/proc/stat window: no {WINDOW_MARK!r} line between the snapshots in {lines[:3]!r}")
    cut = lines.index(WINDOW_MARK)
    return parse_proc_stat_cores("\n".join(lines[:cut])), parse_proc_stat_cores("\n".join(lines[cut + 1:]))


def parse_proc_stat_cores(text: str) -> dict[str, CpuTimes]:
    """Every ``cpu`` line of a ``/proc/stat`` snapshot: ``{"cpu": total, "cpu0": ..., "cpu1": ...}``.

    The same checks as :func:`parse_proc_stat` (which gives the ``"cpu"`` entry); a core named
    twice raises :class:`~farm.errors.ParseError` naming the line.
    """
    cores: dict[str, CpuTimes] = {"cpu": parse_proc_stat(text)}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            if fields[0] in cores:
                raise ParseError(f"/proc/stat line {number}: {fields[0]} a second time")
            cores[fields[0]] = _cpu_line(number, fields[1:])
    return cores


#: the param of a target's CPU figure saying which CPU it is of (farm.results.identity): the board's cores
#: (``cores=board``: a bare setup's, or a guest's host read through its channel, farm.guest.channel) or a
#: guest's vCPUs (``cores=vcpus``). A figure of one never joins a figure of the other.
CORES, BOARD, VCPUS = "cores", "board", "vcpus"
SCOPES = (BOARD, VCPUS)
#: the target's CPU figures: a sweep's /proc/stat or CPU target figures, iperf3's server process (remote_cpu;
#: its ``host_cpu`` is the lab host's, the client's: no target CPU)
CPU_FIGURES = frozenset({"cpu_utilisation", "idle_cycles", "total_cycles", "counter_frequency", "remote_cpu"})


def is_cpu_figure(metric: str) -> bool:
    """Whether ``metric`` is a figure of the target's CPU (:data:`CPU_FIGURES`, per-core ``cpu<N>_utilisation``)."""
    return metric in CPU_FIGURES or (metric.startswith("cpu") and metric.endswith("_utilisation")
                                     and metric[3:-len("_utilisation")].isdigit())
