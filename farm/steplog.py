"""``farm -v``: labgrid's step log on stderr, as ``labgrid-client -v`` shows it.

    -v     every labgrid step (strategy transitions, driver calls, staging) with its arguments and time
    -vv    and the serial console's lines (labgrid's CONSOLE level)
    -vvv   and labgrid's debug messages
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Iterator


def level(verbosity: int) -> int:
    """The root logger's level for ``-v`` counted ``verbosity`` times (1 or more)."""
    import labgrid.logging  # noqa: F401  (defines logging.CONSOLE = INFO - 5, the serial console's level)

    return {1: logging.INFO, 2: logging.CONSOLE}.get(verbosity, logging.DEBUG)


@contextlib.contextmanager
def step_log(verbosity: int) -> Iterator[None]:
    """While the block runs, labgrid's steps (and console, debug) are logged to stderr; then undone."""
    if verbosity <= 0:
        yield
        return
    from labgrid.logging import DEFAULT_FORMAT, StepFormatter, StepLogger

    handler = logging.StreamHandler(sys.stderr)  # the masking stream farm's main installed
    handler.setFormatter(StepFormatter(indent=True, parent=logging.Formatter(DEFAULT_FORMAT)))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(level(verbosity))
    started = False
    try:
        StepLogger.start()
        started = True
    except AssertionError:  # started already (inside labgrid's pytest plugin): its log goes on
        pass
    try:
        yield
    finally:
        if started:
            StepLogger.stop()
        root.removeHandler(handler)
        root.setLevel(old_level)
