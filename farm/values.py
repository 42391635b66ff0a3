"""Values checked once, when a file or an argument is read: names, kernel arguments, bounded numbers.

A name (of a setup, a target, a pipeline, a job) ends up in file names, TFTP folders, U-Boot and iPXE
command lines and shell text, so it is one safe path component: letters, digits and ``. _ -``, not
starting with a dot or a dash, no ``..``, at most 64 characters. A kernel argument is what U-Boot's
``setenv bootargs "..."`` and an iPXE script accept without quoting (farm/boot/uboot.py and ipxe.py
check it again when they type it). The ``*_arg`` functions are the same checks as argparse types,
so a bad argument is refused (exit 2, naming the argument) before anything is built or booted.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path
from typing import Callable

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
BOOTARG = re.compile(r"[A-Za-z0-9_.,:=/+@-]{1,256}")
NAME_RULE = "letters, digits and . _ - (not first), no '..', at most 64 characters"


def name_problem(value: object, what: str = "name") -> str | None:
    """Why ``value`` is not a valid name, or None."""
    if not isinstance(value, str):
        return f"a {what} must be a string, not {type(value).__name__}"
    if not NAME.fullmatch(value) or ".." in value:
        return f"{value!r} is not a valid {what} ({NAME_RULE})"
    return None


#: what stands for a secret in a file name (a file name is published as it is: it cannot be masked later)
SECRET_IN_NAME = "masked"


def path_component(value: str, what: str, source: str) -> str:
    """``value`` where it becomes part of a file name; a JobError naming ``source`` otherwise
    (a results.csv edited by hand, or imported before names were checked). A secret in it
    (farm.secrets) becomes :data:`SECRET_IN_NAME`: a published file's name is never masked after; and so does
    one masked already (a name farm wrote masked, ``board*****``, read back by ``farm report``)."""
    from .secrets import MASK, mask

    named = mask(value).replace(MASK, SECRET_IN_NAME)
    if (problem := name_problem(named, what)):
        from .errors import JobError

        raise JobError(f"{source}: {mask(problem)}: refusing to make a file name of it")
    return named


def shown(text: object) -> str:
    """``text`` safe to print on a terminal: control and format characters (ESC, CR, BEL, the C1
    controls, bidirectional overrides) as ``\\x1b``-style escapes. For names and values that come from
    data (a run's names, a coordinator's tags), which must not move the cursor, retitle the window
    or hide what follows; a console is passed through as it is elsewhere (farm console)."""
    import unicodedata

    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c == " " or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp")
                   else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in text)


def bootarg_problem(value: object) -> str | None:
    """Why ``value`` is not a kernel argument farm passes to a bootloader, or None."""
    if not isinstance(value, str):
        return f"a kernel argument must be a string, not {type(value).__name__}"
    if not BOOTARG.fullmatch(value) or ".." in value:
        return (f"{value!r} is not an allowed kernel argument (letters, digits and _ . , : = / + @ -, "
                "no spaces, quotes, ';' or '..')")
    return None


def number_problem(value: object, low: float, high: float, *, whole: bool = False,
                   low_open: bool = False, unit: str = "") -> str | None:
    """Why ``value`` is not a finite number in [low, high] (or (low, high] with ``low_open``), or None."""
    kind = "a whole number" if whole else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected {kind}, got {value!r}"
    if not math.isfinite(value) or (whole and not float(value).is_integer()):
        return f"expected {kind}, got {value!r}"
    if value < low or (low_open and value == low) or value > high:
        span = f"{'>' if low_open else '>='} {low:g} and <= {high:g}"
        return f"{value!r} is out of range: expected {kind} {span}{' ' + unit if unit else ''}"
    return None


# --- argparse types: the same checks when an argument is parsed ---------------------------------------------

def _arg_type(check: Callable[[str], str | None], convert: Callable[[str], object] = str, name: str = "value"):
    def parse(text: str):
        problem = check(text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return convert(text)
    parse.__name__ = name  # argparse names the type in "invalid <name> value" messages
    return parse


name_arg = _arg_type(name_problem, name="name")
bootarg_arg = _arg_type(bootarg_problem, name="kernel argument")


def number_arg(low: float, high: float, *, whole: bool = False, low_open: bool = False, unit: str = ""):
    """An argparse type for a bounded number (seconds, attempts, priority)."""
    def parse(text: str):
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if whole else 'a number'}") from None
        problem = number_problem(value, low, high, whole=whole, low_open=low_open, unit=unit)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    parse.__name__ = "number"
    return parse


#: the intervals a ratio's rule may name (farm.results.ratio.INTERVALS says what each is): here, where
#: the command line's choices are made without importing the statistics
INTERVAL_METHODS = ("hodges-lehmann", "welch")


def min_boots_arg(text: str) -> int:
    """``--min-boots N`` (farm compare, qualify, reproduce): the fewest boots a side for a verdict."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of boots (1 or more)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 1 or more boots")
    return value


def out_dir_problem(text: str) -> str | None:
    """Why farm cannot write a directory ``text`` (made with its parents), or None.

    Checked when the argument is read, so an unwritable ``--out`` fails at once and not after a build
    or a boot. Whether a non-empty directory may be reused is the run directory's decision."""
    if not text or "\0" in text:
        return "expected a directory path"
    path = Path(text).expanduser()
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            return f"{text}: exists and is not a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{text}: directory not writable"
    parent = path.absolute().parent
    while not parent.exists():
        if parent.is_symlink():  # a dangling symlink on the way: mkdir would fail
            return f"{text}: {parent} is a dangling symbolic link"
        parent = parent.parent
    if not parent.is_dir():
        return f"{text}: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{text}: cannot create it: {parent} is not writable"
    if parent.resolve().is_relative_to("/proc") or parent.resolve().is_relative_to("/sys"):
        return f"{text}: cannot create a directory under {parent}"
    return None


out_dir_arg = _arg_type(out_dir_problem, name="directory")
