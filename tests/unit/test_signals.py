"""farm.signals, the one signal policy: SIGTERM/SIGHUP unwind like Ctrl-C; clean-ups are not cut short."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from farm import signals
from farm.errors import Terminated
from farm.lease import new_lease
from farm.places.locking import release_mine

from ..conftest import ROOT


@pytest.fixture(autouse=True)
def default_handlers():
    """Each test starts from the defaults a plain Python program has (pytest may have its own)."""
    saved = {sig: signal.getsignal(sig) for sig in signals.HELD}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_terminating_signals_raise_terminated_in_the_block_and_not_after(sig):
    with signals.interrupts():
        with pytest.raises(Terminated) as info:
            signal.raise_signal(sig)
    assert info.value.signum == sig and info.value.exit_code == 128 + sig
    assert signal.getsignal(sig) == signal.SIG_DFL, "the default is back once the block is left"


def test_a_handler_of_the_caller_stays():
    class Mine(KeyboardInterrupt):
        pass

    def mine(signum, frame):
        raise Mine()

    signal.signal(signal.SIGTERM, mine)
    with signals.interrupts(), signals.interrupts():  # re-entrant: the inner one changes nothing
        assert signal.getsignal(signal.SIGTERM) is mine
        with pytest.raises(Mine):
            signal.raise_signal(signal.SIGTERM)


@pytest.mark.parametrize("sig, raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt),
                                         (signal.SIGHUP, Terminated)])
def test_deferred_holds_a_signal_until_its_block_ends_then_delivers_it(sig, raised):
    steps = []
    with signals.interrupts():
        with pytest.raises(raised):
            with signals.deferred():
                signal.raise_signal(sig)
                steps.append("after the signal")  # the clean-up goes on
                signal.raise_signal(signal.SIGTERM)  # a second one: only the first is delivered
                steps.append("to its end")
        assert steps == ["after the signal", "to its end"]
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # interrupts()' handler is back


def test_deferred_without_deliver_drops_the_signal_for_the_exception_in_flight():
    with signals.interrupts():
        with signals.deferred(deliver=False):
            signal.raise_signal(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


class FakeCoordinator:
    """What release_mine asks of the coordinator; SIGTERM arrives while it cancels the reservation."""

    owner = "host/me"
    address = "127.0.0.1:1"

    def __init__(self):
        self.calls = []

    def cancel_reservation(self, token):
        self.calls.append(("cancel", token))
        signal.raise_signal(signal.SIGTERM)  # the CI job is cancelled half-way through the release

    def release(self, place, only_from):
        self.calls.append(("release", place))

    def set_tags(self, place, tags):
        self.calls.append(("drop", place, tuple(tags)))


def test_a_release_cut_by_sigterm_still_releases_and_drops_its_lease_then_terminates():
    coord, lease = FakeCoordinator(), new_lease("host/me", "job-1", token="TOKEN1")
    with signals.interrupts():
        with pytest.raises(Terminated):
            release_mine(coord, "board-1", [lease], power=False)
    assert coord.calls == [("cancel", "TOKEN1"), ("release", "board-1"), ("drop", "board-1", (lease.key,))]


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_the_farm_command_unwinds_on_sigterm_and_sighup(tmp_path, sig, code):
    """The real command, in a subprocess: without farm.signals SIGTERM and SIGHUP would kill it (-15, -1).

    SIGINT is given Python's own handler in the child itself (a background test run inherits it ignored),
    not with ``preexec_fn``: Python code between fork and exec crashes the child (SIGSEGV, no word) when
    the test process has gRPC threads, as it has after the coordinator tests (seen twice in full runs)."""
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv = ['farm', 'serve', '--port', '0']; runpy.run_module('farm.cli', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", start], cwd=ROOT, env={**os.environ, "FARM_DB": str(tmp_path / "r.db")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert re.search(r"serving the dashboard on http://\S+:\d+/", line), (line, proc.poll())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == ("farm: interrupted" if sig == signal.SIGINT else "farm: terminated")
    assert "Traceback" not in err


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost one, on purpose
@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_an_interrupt_lost_in_a_finalizer_is_raised_again_by_the_waiting_loop(signum, raised):
    """Python drops what a handler raises inside a finalizer ("Exception ignored in"): gRPC's and
    asyncio's run in the main thread, and a queued job once sat out its whole timeout after Ctrl-C."""
    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signum)
            for _ in range(10000):  # the handler runs here, inside the finalizer
                pass

    with signals.interrupts():
        since = signals.arrivals()
        Finalized()  # collected at once; its interrupt is lost
        assert signals.arrivals() == since + 1  # still here: the handler ran, its exception went nowhere
        with pytest.raises(raised):
            signals.raise_if_lost(since)
        signals.raise_if_lost(since)  # once
