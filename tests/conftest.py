"""Shared fixtures: the real benchmark image (built once per session) and a private TFTP root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_LEAN = pytest.StashKey[bool]()  # the session collected a lean-kernel test (tests/prebuild.py)


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


def pytest_collection_modifyitems(session, config, items):
    """The suite's two lanes (tests/lanes.py) in their order, the lean-kernel tests last."""
    from . import lanes, prebuild

    lanes.arrange(items, prebuild.MARKER)
    config.stash[_LEAN] = any(item.get_closest_marker(prebuild.MARKER) for item in items) \
        and not config.option.collectonly


def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (``-n 2``), one worker per lane (tests/lanes.py), whatever ``--dist`` says."""
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

