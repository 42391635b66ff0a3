"""Failure classes and the exit codes the CLI maps them to.

LAVA and labgrid users expect three kinds of failure to be told apart:
- a *job* error: the input is wrong (recipe, env, pipeline file); retrying cannot help;
- an *infrastructure* error: power, serial, TFTP, bootloader, coordinator; retrying may help;
- a *test* failure: the board booted and a benchmark failed or a gate tripped.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_TEST_FAILURE = 1
EXIT_JOB_ERROR = 2
EXIT_INFRA_ERROR = 3
#: farm reproduce: nothing failed, but a figure could not be judged (too few boots, a straddling
#: interval): CI may treat it apart (GitLab: ``allow_failure: {exit_codes: [4]}``)
EXIT_INCONCLUSIVE = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class FarmError(Exception):
    """Base of every error farm reports to a user as one clear line."""

    exit_code = EXIT_JOB_ERROR
    kind = "job"


class JobError(FarmError):
    """Bad input: a recipe, env, pipeline file or argument. Names the file and field."""


class InfrastructureError(FarmError):
    """The lab failed us: power, serial console, TFTP, bootloader, QEMU."""

    exit_code = EXIT_INFRA_ERROR
    kind = "infrastructure"


class TestFailure(FarmError):
    """A benchmark failed or a gate tripped on a target that did boot."""

    exit_code = EXIT_TEST_FAILURE
    kind = "test"

    __test__ = False  # not a pytest test class


class ParseError(FarmError):
    """Tool output that cannot be read; names the line."""


#: errors of the machine's storage, not of what the user gave: a full disk or share, a quota, a failing device
_STORAGE_ERRNOS = frozenset({"ENOSPC", "EDQUOT", "EIO", "EFBIG", "ENOMEM"})


def os_error(exc: OSError) -> FarmError:
    """An OSError no module turned into a FarmError, as one clear line naming the file: the storage's (a full disk
    or share, a quota, a failing device: the lab's, exit 3) or the path's (missing, not writable, a directory
    where a file goes: the input's, exit 2). farm writes every file through an exclusively created temporary
    renamed into place, so what failed half way left the old file as it was."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None) or "a file"
    text = f"{where}: {exc.strerror or exc}"
    if name in _STORAGE_ERRNOS:
        return InfrastructureError(f"{text} (nothing was half written: free space and run it again)")
    return JobError(text)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a cancelled CI job) or SIGHUP (a closed terminal): handled like Ctrl-C, so the board
    is powered off and released; the command exits 128 + the signal (143, 129). See farm.signals."""

    def __init__(self, signum: int = 15) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def interrupt_in(exc: BaseException | None) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM an error was raised while unwinding from, if any: labgrid's step bookkeeping
    asserts when an interrupt cuts a step short, and that AssertionError (or the boot error wrapping it)
    would otherwise hide the interrupt."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
