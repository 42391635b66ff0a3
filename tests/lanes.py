"""The suite's three lanes: `make test` runs them side by side (pytest-xdist, ``-n 3``).

The suite's work is CPU for its twins and waiting for its virtual farm: the twins' tests keep both cores
busy (TCG, kernel builds); the farm's tests (tests/farm: coordinators, exporters, labgrid's keepalives,
faults that must last) used 10.5 core-minutes in 27:45 of wall time; the rest (the store, the unit tests,
the faults on fakes) is CPU again, a core's worth. So each lane is one xdist work unit, run by a worker of
its own (:func:`scheduler`, through xdist's ``pytest_xdist_make_scheduler`` hook: its ``--dist loadgroup``
cannot group here, pytest 9.2's node ids no longer take the ``@group`` suffix xdist 3.8 writes into
``item._nodeid``), and the farm's waits overlap the others' work instead of following it:

- ``twins``: tests/boot, tests/guest and tests/images, in one worker, one at a time as before (two twins
  at once would halve each one's CPU). Its order: the image builds first, then the guests and boots; the
  tests whose figures the machine's load moves (:data:`LOAD_SENSITIVE`: the CPU target's duty cycle, the
  sweep's saturation) after them, when the other lanes have usually ended; the lean-kernel tests last
  (tests/prebuild.py). No test compares runs made minutes apart on the twin (load in one and not the other
  is a difference that is not there): such verdicts are tested on recorded runs
  (tests/boot/test_qualify_twin.py);
- ``farm``: tests/farm, the virtual farm's, in collection order (:data:`FARM_DIRS`);
- ``rest``: everything else, in collection order, in the third worker; first in it the twin tests that
  would make the twins lane the longer one by far and whose checks hold under load (:data:`BESIDE_TWINS`:
  DPDK in a nested guest, which needs only that its echo answers).

With two workers (``-n 2``) one of them runs two lanes, one after the other; without xdist (``pytest``
alone, or ``-p no:xdist``) the same order runs in one process: twins, then the others, then the lean tests.
The lean kernels' background build starts with the first test of the twins lane
(:func:`tests.conftest.pytest_runtest_setup`), so only the worker that waits for it builds.
"""

from __future__ import annotations

from pathlib import Path

TWINS, FARM, REST = "twins", "farm", "rest"
TWIN_DIRS = ("images", "guest", "boot")  # in the lane's order
FARM_DIRS = ("farm",)
LOAD_SENSITIVE = ("test_cpu_target.py", "test_echo_sweep.py", "test_suites.py",
                  "test_lukem.py",  # tests/unit's CPU target: two windows' lengths compared (failed beside a twin)
                  "test_echo_sweep_ssh.py")  # 1000 Mb/s over ssh: no echo in the window beside a cold kernel build
BESIDE_TWINS = ("test_dpdk_guest.py",)


def _where(path: Path) -> tuple[str, str]:
    """(the directory under tests/, the file name) of a test file; ("", name) at the top of tests/."""
    parts = path.parts
    at = len(parts) - 1 - parts[::-1].index("tests") if "tests" in parts else -1
    below = parts[at + 1:] if at >= 0 else (path.name,)
    return (below[0] if len(below) > 1 else ""), path.name


def lane(path: Path) -> str:
    directory, name = _where(path)
    if name in BESIDE_TWINS:
        return REST
    if directory in FARM_DIRS:
        return FARM
    return TWINS if directory in TWIN_DIRS or name in LOAD_SENSITIVE else REST


def rank(path: Path, lean: bool) -> tuple[int, int]:
    """The sort key of a test in its lane (a stable sort keeps the collection's order within a rank)."""
    directory, name = _where(path)
    if lean:  # last of all: in one process, after the rest lane too (the longer the build has had)
        return (2, 0)
    if name in LOAD_SENSITIVE:
        return (0, 8)
    if name in BESIDE_TWINS:
        return (1, -1)
    if lane(path) in (REST, FARM):
        return (1, 0)
    return (0, TWIN_DIRS.index(directory))


def arrange(items: list, lean_marker: str) -> None:
    """Order ``items`` into the lanes (twins first, the lean tests last); a worker runs its lane's tests in
    this order."""
    items.sort(key=lambda item: rank(Path(str(item.path)), item.get_closest_marker(lean_marker) is not None))


def scheduler(config, log):
    """xdist's scope scheduler with a lane as the scope: each lane to a worker of its own (each worker is
    given one scope and, near its end, the next one waiting: with fewer workers than lanes, a lane after
    another)."""
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return lane(Path(nodeid.split("::", 1)[0]))

    return LaneScheduling(config, log)
