"""Progress lines: a stage silent for longer than the heartbeat says it is still running, so a CI log
never looks hung; a stage that talks (a sweep point per line) gets no extra lines."""

from __future__ import annotations

import io
import time

from farm.results.junit import Case
from farm.run.listeners import Progress
from farm.run.rundir import Stage


def wait_for(stream: io.StringIO, text: str, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while text not in stream.getvalue():
        assert time.monotonic() < deadline, f"no {text!r} in {stream.getvalue()!r}"
        time.sleep(0.02)
    return stream.getvalue()


def test_a_silent_stage_says_it_is_still_running():
    out = io.StringIO()
    progress = Progress(out, heartbeat=0.2)
    progress.stage_started("build maaxboard-lean")
    text = wait_for(out, "build maaxboard-lean: still running")
    progress.stage_ended(Stage(Case("build maaxboard-lean", "farm.build", 1.0, "pass")))
    progress.run_ended(0, False)
    assert "s)" in text.splitlines()[-1]


def test_no_heartbeat_after_the_stage_ended():
    out = io.StringIO()
    progress = Progress(out, heartbeat=0.2)
    progress.stage_started("boot x")
    progress.stage_ended(Stage(Case("boot x", "farm.boot", 0.1, "pass")))
    progress.say("marker")
    deadline = time.monotonic() + 0.6
    while time.monotonic() < deadline:  # three heartbeats' time: nothing may be said
        assert "still running" not in out.getvalue()
        time.sleep(0.05)
    progress.run_ended(0, False)
