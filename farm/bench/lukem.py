"""The sweeps' CPU target on a target with a shell: ``farm_lukem`` (``images/src/farm_lukem.c``),
ipbench's ``cpu_target_lukem`` measurement served over ipbench's target protocol.

farm starts it once per sweep as a daemon listening on :data:`farm.measure.lukem.PORT` (1236, the
lab's), and measures each point through :func:`farm.bench.ipbench_target.cpu_target` from before
the load starts (SETUP) to after it ended (STOP), as ipbench's controller sets its target up before
its clients and stops it once they have all reported. A target without a shell (a seL4/sDDF system)
serves the same protocol itself; only the start here needs a shell.

The figures (:class:`farm.measure.lukem.CpuWindow`): ``cpu_utilisation`` = (1 - idle/total) x 100,
``idle_cycles``/``total_cycles`` in ticks of the target's counter (cntvct_el0 on arm64, the TSC on
x86-64), ``counter_frequency`` its rate in Hz (cntfrq_el0; on x86 the TSC's rate over the run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import JobError
from ..measure import lukem

if TYPE_CHECKING:
    from .context import BenchContext

PROGRAM = "farm_lukem"


def start_command(port: int = lukem.PORT, *, threshold: int = lukem.THRESHOLD) -> str:
    """The target's shell command: (re)start farm_lukem as a daemon."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise JobError(f"CPU target port {port!r}: expected 1-65535")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise JobError(f"CPU target threshold {threshold!r}: expected a whole number of ticks >= 1")
    args = f"-d -p {port}" + (f" -t {threshold}" if threshold != lukem.THRESHOLD else "")
    # the pidof loop: the previous daemon must be gone before the port is bound again
    return (f"kill $(pidof {PROGRAM}) 2>/dev/null; i=0; while pidof {PROGRAM} >/dev/null && [ $i -lt 50 ]; "
            f"do i=$((i+1)); usleep 20000; done; {PROGRAM} {args}")


STOP = f"kill $(pidof {PROGRAM}) 2>/dev/null; true"


def start(ctx: "BenchContext", port: int = lukem.PORT) -> tuple[str, int]:
    """Start farm_lukem on the target; (host, port) where the lab host reaches it."""
    from .context import wait_listening

    ctx.run(start_command(port), tool=PROGRAM)
    wait_listening(ctx, port, "tcp", PROGRAM)
    return ctx.reach(port, ("tcp",))


def stop(ctx: "BenchContext", *, quiet: bool = False) -> None:
    """Stop it; ``quiet``: on the way out of an error, whose report this must not replace."""
    try:
        ctx.run(STOP, tool=PROGRAM)
    except Exception:
        if not quiet:
            raise
