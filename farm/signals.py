"""farm's one signal policy: SIGTERM and SIGHUP end a job the way Ctrl-C does, clean-ups run to their end.

A cancelled CI job gets SIGTERM, a closed terminal or SSH session SIGHUP; either, by default, kills
the process at once, with the board still powered and the place still locked. Under
:func:`interrupts` they raise :class:`~farm.errors.Terminated` (a ``KeyboardInterrupt``) in the
main thread instead, so every ``finally`` and ``with`` block on the way out runs: the board is
powered off, the place released, what was measured kept. The ``farm`` command enters it once, around
the whole command; library entry points that hold a place (:func:`farm.places.acquired_place`) enter
it too, for callers that are not the ``farm`` command (it is re-entrant: inside it, it does nothing).

Code that must not be cut half-way (giving a place back: power off, cancel, release, drop the
lease) runs under :func:`deferred`: Ctrl-C, SIGTERM and SIGHUP are held until its block ends, then
delivered to the handlers that were there before.

Python runs signal handlers in the main thread only: in any other thread both do nothing.

Python also loses the exception a handler raises when the signal lands while a finalizer or a weakref
callback runs (``Exception ignored in: ... KeyboardInterrupt``): gRPC and asyncio run those in the main
thread at any moment, so now and then Ctrl-C or SIGTERM did nothing and a queued job waited on. Under
:func:`interrupts` every such signal is counted; a loop that waits calls :func:`raise_if_lost` with the
count it started from, which raises the interrupt again (if it had not been lost, the loop would not be
running).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Callable, Iterator

from .errors import EXIT_INTERRUPTED, Terminated

#: the signals that end a job like Ctrl-C does (SIGINT keeps Python's own handler)
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
#: the signals :func:`deferred` holds
HELD = (signal.SIGINT, *TERMINATING)


#: the signals that arrived under :func:`interrupts`, oldest first (see :func:`raise_if_lost`)
_arrived: list[int] = []


def _raised(signum: int) -> KeyboardInterrupt:
    """What a signal raises: Ctrl-C Python's KeyboardInterrupt, the others :class:`Terminated`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _interrupt(signum: int, frame) -> None:
    """The handler under :func:`interrupts`: counted, then raised."""
    _arrived.append(signum)
    raise _raised(signum)


def arrivals() -> int:
    """How many interrupting signals have arrived so far: what a waiting loop hands to :func:`raise_if_lost`."""
    return len(_arrived)


def raise_if_lost(since: int) -> None:
    """Raise the interrupt of a signal that arrived after ``arrivals()`` was ``since``: the caller is
    still running, so the exception its handler raised was lost (see the module's doc)."""
    if len(_arrived) > since:
        signum = _arrived[since]
        del _arrived[since:]
        raise _raised(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` in the block (Ctrl-C raises KeyboardInterrupt); each
    is counted for :func:`raise_if_lost`.

    A signal that already has a Python handler (the caller's own policy, or this block entered
    further out) keeps it; the previous handlers are back when the block is left."""
    if not _main_thread():
        yield
        return
    saved = {}
    for sig in TERMINATING:
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            saved[sig] = signal.signal(sig, _interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Python's own: the same, counted
        saved[signal.SIGINT] = signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def deferred(*, deliver: bool = True) -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP while the block runs; deliver the first one held when it ends.

    It is delivered to the handler that was there before (which raises: KeyboardInterrupt,
    :class:`Terminated`, or the caller's own), only when the block ended normally and ``deliver``
    is true: a clean-up that runs because of an exception passes False, so that exception goes on
    with its message (it ends the job all the same). Handlers are swapped with no moment on the
    default action."""
    if not _main_thread():
        yield
        return
    pending: list[int] = []
    saved = {sig: signal.signal(sig, lambda signum, frame: pending.append(signum)) for sig in HELD}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    if pending and deliver:
        _deliver(pending[0], saved[pending[0]])


def run(main: Callable[[], int]) -> int:
    """``main()`` under :func:`interrupts`, for a script: its exit status, or 128 + the signal that
    ended it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP) once every clean-up on the way out has run."""
    try:
        with interrupts():
            return main()
    except Terminated as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _deliver(signum: int, handler) -> None:
    if callable(handler):
        handler(signum, None)  # raises, as Python's Ctrl-C handler and _interrupt do
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)  # what would have happened without the block
    # SIG_IGN (or None: a handler not set from Python): ignored, as it would have been
