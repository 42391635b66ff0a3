"""Shared fixtures: the real benchmark image (built once per session) and a private TFTP root."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_LEAN = pytest.StashKey[bool]()  # the session collected a lean-kernel test (tests/prebuild.py)


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


def pytest_configure(config):
    """Bytecode written, whatever the environment says: the suite starts some thousand Python processes (farm
    commands, labgrid's coordinators and exporters, the tests' own helpers), and with PYTHONDONTWRITEBYTECODE
    set (as in this project's CI sandbox) and a fresh .venv (scripts/setup.sh installs with pip --no-compile)
    every one of them compiled farm and its libraries from source again: `farm import` 4.0 CPU-s instead of
    1.35 (docs/speed.md round 12). Unset here, in the first process, before xdist starts its workers: the
    first process to import a module writes its __pycache__, every later one reads it."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


def pytest_collection_modifyitems(session, config, items):
    """The suite's lanes (tests/lanes.py) in their order, the lean-kernel tests last."""
    from . import lanes, prebuild

    lanes.arrange(items, prebuild.MARKER)
    config.stash[_LEAN] = any(item.get_closest_marker(prebuild.MARKER) for item in items) \
        and not config.option.collectonly


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: `-p no:xdist` runs without it
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (``-n 3``), one worker per lane (tests/lanes.py), whatever ``--dist`` says."""
    from . import lanes

    return lanes.scheduler(config, log)


def pytest_runtest_setup(item):
    """The lean kernels compile in the background from the twins lane's first test (where they are waited
    for), one build per session."""
    from . import lanes, prebuild

    if item.config.stash.get(_LEAN, False) and lanes.lane(Path(str(item.path))) == lanes.TWINS:
        prebuild.start()


def pytest_sessionfinish(session, exitstatus):
    from . import prebuild

    prebuild.stop()


# --- the suite's weight (tests/weight.py): each test's CPU into the JUnit report, the sums at the end ---

_cpu_at_start: dict[str, float] = {}  # in the process that runs the test: node id -> its CPU at logstart
_cpu_of_test: dict[str, float] = {}  # in the controller: node id -> the CPU its teardown report carried
_session_start: tuple[float, str] | None = None  # the controller's: monotonic time, /proc/stat


def pytest_sessionstart(session):
    global _session_start
    if not hasattr(session.config, "workerinput"):
        _session_start = (time.monotonic(), _proc_stat())


def pytest_runtest_logstart(nodeid, location):
    from . import weight

    _cpu_at_start[nodeid] = weight.process_cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    from . import weight

    report = yield
    if call.when == "teardown" and item.nodeid in _cpu_at_start:
        report.user_properties.append((weight.PROPERTY, round(weight.process_cpu() - _cpu_at_start.pop(item.nodeid), 2)))
    return report


def pytest_runtest_logreport(report):
    from . import weight

    if report.when == "teardown":
        for name, value in report.user_properties:
            if name == weight.PROPERTY:
                _cpu_of_test[report.nodeid] = float(value)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """`make test`'s last lines before pytest's own: the suite's wall time, core-minutes and heaviest tests."""
    from . import weight

    if _session_start is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    started, stat = _session_start
    now = _proc_stat()
    work = (weight.busy_seconds(weight.cpu_line(stat), weight.cpu_line(now), os.sysconf("SC_CLK_TCK"))
            if stat and now else None)
    terminalreporter.section("suite weight")
    for line in weight.summary(time.monotonic() - started, work, os.cpu_count() or 1, _cpu_of_test.items()):
        terminalreporter.write_line(line)


def _proc_stat() -> str:
    try:
        return Path("/proc/stat").read_text()
    except OSError:  # not Linux: no machine-wide figure
        return ""


@pytest.fixture(scope="session", autouse=True)
def results_store(tmp_path_factory) -> str:
    """Every farm command of the session ingests into a throwaway SQLite store, never the user's
    ~/.local/share/farm/results.db (a test that wants another sets FARM_DB itself), and archives
    beside it, never into ~/.local/share/farm/archive (a test's PostgreSQL FARM_DB would send it there)."""
    folder = tmp_path_factory.mktemp("store")
    os.environ["FARM_DB"] = str(folder / "results.db")
    os.environ["FARM_ARCHIVE"] = str(folder / "archive")
    return os.environ["FARM_DB"]


@pytest.fixture(scope="session")
def tftp_root(tmp_path_factory) -> Path:
    """A TFTP root of this test session's own (QEMU's user-mode TFTP serves it to the twin)."""
    root = tmp_path_factory.mktemp("tftp")
    os.environ["LG_TFTP_ROOT"] = str(root)
    return root


@pytest.fixture(scope="session")
def maaxboard_image():
    """The real MaaXBoard benchmark image, from the user's farm cache (built on the first run)."""
    from farm.images.build import build

    return build(ROOT / "images" / "maaxboard-bench.yaml")


def run_farm(*args: str, cwd: Path = ROOT, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """The farm command as a user runs it, in a subprocess."""
    return subprocess.run([sys.executable, "-m", "farm.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def wait_for_console_line(log: Path, pattern: str, timeout: float, *,
                          running: subprocess.Popen | None = None) -> str:
    """The first text matching ``pattern`` (a regex) in the console log ``log``, once it is there.

    For a test that must act while something runs on the board: the line the tool prints when it
    starts is there, so it runs (a fixed sleep only guesses). Fails after ``timeout`` seconds, or
    at once when ``running`` (the process writing the log) has ended, with the log's tail."""
    import re
    import time

    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        found = re.search(pattern, text)
        if found:
            return found.group(0)
        ended = running is not None and running.poll() is not None
        if ended or time.monotonic() >= deadline:
            tail = "\n".join(text.replace("\r", "").splitlines()[-15:])
            raise AssertionError(f"no {pattern!r} in {log} " + ("before the process ended" if ended else
                                 f"within {timeout:g} s") + f"; its last lines:\n{tail}")
        time.sleep(0.1)

