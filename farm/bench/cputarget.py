"""The idle-cycle CPU target of the echo sweep (``cpu_target: true``): ``farm_spin`` on the target,
like ipbench's ``cpu_target`` (cyclesoak).

``farm_spin`` (``images/src/farm_spin.c``) runs one spinner per core at the lowest priority
(SCHED_IDLE, nice 19), each counting its own loop iterations; it runs only when nothing else wants
the core. Before the loads, farm counts what the spinners do in one second of an idle target
(the **calibrated idle rate**, iterations/s). Over a measured window:

* ``idle_cycles``: the iterations the spinners counted in the window;
* ``total_cycles``: the calibrated rate × the window's length (the target's own clock): what they
  would have counted had the target been idle throughout;
* ``cpu_utilisation`` (param ``cpu=farm_spin``) = ``100 × (1 − idle/total)`` (ipbench's formula),
  clamped to 0-100 (the idle rate is one second's, and a window can be idler than the calibration).

They fill the wide CSV's ``Idle_Cycles``/``Total_Cycles`` columns, in spinner **iterations**, not
CPU cycles (unit ``iterations``): only their ratio compares with ipbench's. ``/proc/stat`` is not used
then: it counts the spinners as busy. (``ticks=`` of ``farm_spin -r``, the spinners' own CPU time,
is parsed for a check of the counters; subtracting it from /proc/stat's busy time gave 0 % on the
twin at every load, so farm does not offer that figure.)
"""

from __future__ import annotations

from ..measure.spin import TOOL, UNIT, SpinCounts, Window, idle_rate, parse_reads, window  # noqa: F401

CALIBRATION_SECONDS = 1

START = (f"kill $(pidof {TOOL}) 2>/dev/null; i=0; while pidof {TOOL} >/dev/null && [ $i -lt 50 ]; "
         f"do i=$((i+1)); usleep 20000; done; {TOOL} -d")
READ = f"{TOOL} -r"
CALIBRATE = f"{READ}; sleep {CALIBRATION_SECONDS}; {READ}"
STOP = f"kill $(pidof {TOOL}) 2>/dev/null; true"
