"""A console log as a person reads it: farm's own typing checks folded away, fatal lines found.

farm drives U-Boot and the target's shell the way labgrid does, with markers around every command
(labgrid's ``gen_marker``: ten capital letters typed as ``'ABCD''EFGHIJ'`` so that the echo of the
typed line never matches the marker itself):

- U-Boot, ``FarmUBootDriver._run``: ``=> echo 'ABCD''EFGHIJ'; CMD; echo "$?"; echo 'ABCD''EFGHIJ';``,
  then ``ABCDEFGHIJ``, CMD's output, its exit status and ``ABCDEFGHIJ`` again;
- the shell, labgrid's ``ShellDriver``: ``# MARKER='ABCD''EFGHIJ' run 'CMD'`` (wrapped by the terminal
  at 80 columns), then ``ABCDEFGHIJ`` glued to CMD's first output line and ``ABCDEFGHIJ 0`` last;
- the prompt checks (``echo 'ABCD''EFGHIJ'`` and its echo) and labgrid's ``run() {…}`` helper.

Those typed lines are labgrid's own forms: farm.lgcompat holds their patterns, with a test that drives
labgrid's drivers and fails when a form changes.

:func:`fold` keeps every line, numbered as in the log file, and says of each whether it is farm's
(``check``: hidden unless asked for), a command farm typed (``typed``: shown as ``=> CMD``) or the
board's own output; terminal escapes (busybox's ``ESC[6n``) and other control characters are left out
of what is shown. Pure: text in, lines out.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterable

import attrs

from farm.boot.console_text import clean
from farm.boot.watch import LINUX_FATAL, UBOOT_FATAL
from farm.lgcompat import PROMPT_CHECK, RUN_HELPER, SHELL_TYPED, UBOOT_TYPED

OUTPUT, TYPED, CHECK = "output", "typed", "check"

#: console lines that end a run (farm.boot.watch), minus the banners, which are only fatal the second time
FATAL = re.compile("|".join(f.pattern for f in (*LINUX_FATAL[:2], *UBOOT_FATAL)))



@attrs.frozen
class Line:
    number: int      # the (first) line of the log file it came from, from 1
    text: str        # what is shown: escapes removed, a typed command without farm's markers
    raw: str         # the line as logged (escapes removed), shown on demand
    kind: str        # OUTPUT, TYPED or CHECK
    fatal: bool = False
    status: int | None = None  # a typed command's exit status, when its end was seen

    @property
    def folded(self) -> bool:
        """Whether the view shows something else than the log has (the raw line is shown on demand)."""
        return self.kind == CHECK or self.text != self.raw


def physical_lines(text: str) -> list[tuple[int, str]]:
    """The log's lines, numbered from 1; a line the terminal wrapped (it ends ``\\r\\r``, as a shell
    echoes a long typed command at 80 columns) joined to the next, under its first number."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.split("\n"), 1):
        wrapped = line.endswith("\r\r")
        line = line.rstrip("\r")
        if pending is not None:
            number, line = pending[0], pending[1] + line
            pending = None
        if wrapped:
            pending = (number, line)
        else:
            out.append((number, line))
    if pending is not None:
        out.append(pending)
    if out and out[-1][1] == "" and text.endswith("\n"):
        out.pop()  # the newline that ends the last line starts no line of its own
    return out


def _unquote(cmd: str) -> str:
    try:
        words = shlex.split(cmd)
    except ValueError:
        return cmd
    return words[0] if len(words) == 1 else cmd


def fold(text: str) -> list[Line]:
    """The lines of console ``text`` (see the module docstring)."""
    out: list[Line] = []
    marker: str | None = None   # the marker of the command whose output is coming
    shell = False               # that command was typed into the shell (its output is glued to the marker)
    opened = False              # its first marker was seen
    owner = -1                  # where its typed line is in ``out``
    for number, logged in physical_lines(text):
        raw = clean(logged)
        line = raw.rstrip()
        if m := UBOOT_TYPED.fullmatch(line):
            out.append(Line(number, m["prompt"] + m["cmd"], raw, TYPED))
            marker, shell, opened, owner = m["a"] + m["b"], False, False, len(out) - 1
            continue
        if m := SHELL_TYPED.fullmatch(line):
            out.append(Line(number, m["prompt"] + _unquote(m["cmd"]), raw, TYPED))
            marker, shell, opened, owner = m["a"] + m["b"], True, False, len(out) - 1
            continue
        if m := PROMPT_CHECK.fullmatch(line):
            out.append(Line(number, raw, raw, CHECK))
            marker, shell, opened, owner = m["a"] + m["b"], False, False, -1
            continue
        if RUN_HELPER.fullmatch(line):
            out.append(Line(number, raw, raw, CHECK))
            continue
        if marker is not None:
            if not opened and (line == marker or (shell and line.startswith(marker))):
                opened, line = True, line[len(marker):]
                if not line:
                    out.append(Line(number, raw, raw, CHECK))
                    if owner < 0:  # a prompt check: its echo was all there was
                        marker = None
                    continue
            if opened:
                end = re.fullmatch(rf"(?P<out>.*?){marker} (?P<status>\d+)", line) if shell else None
                if end or (not shell and line == marker):
                    status = int(end["status"]) if end else None
                    if not shell and out and out[-1].kind == OUTPUT and out[-1].text.strip().isdigit() \
                            and len(out) - 1 > owner:  # U-Boot: the line before the marker is $?
                        status = int(out[-1].text.strip())
                        out[-1] = attrs.evolve(out[-1], kind=CHECK, text=out[-1].raw)
                    if owner >= 0 and status is not None:
                        out[owner] = attrs.evolve(out[owner], status=status)
                    marker = None
                    if end and end["out"]:
                        out.append(Line(number, end["out"], raw, OUTPUT, bool(FATAL.search(end["out"]))))
                    else:
                        out.append(Line(number, raw, raw, CHECK))
                    continue
                if line != raw.rstrip():  # the first output line, its marker taken off
                    out.append(Line(number, line, raw, OUTPUT, bool(FATAL.search(line))))
                    continue
        out.append(Line(number, raw, raw, OUTPUT, bool(FATAL.search(raw))))
    return out


EXCERPT = "--- console ---"


def marked(lines: Iterable[Line], excerpts: Iterable[str]) -> tuple[set[int], set[int]]:
    """Numbers of the lines to mark: the failing lines (fatal console lines; the line a failed
    stage's console excerpt ends with, where farm stopped; a line the message itself quotes) and
    the context (the excerpt's other lines, which led to it). Lines shorter than 4 characters never."""
    failing_text: set[str] = set()
    context_text: set[str] = set()
    for chunk in excerpts:
        head, found, tail = chunk.partition(EXCERPT)
        failing_text.update(line.strip() for line in head.splitlines())
        shown = [line.strip() for line in tail.splitlines() if line.strip()] if found else []
        if shown:
            failing_text.add(shown[-1])
            context_text.update(shown[:-1])
    failing_text = {t for t in failing_text if len(t) >= 4}
    context_text = {t for t in context_text if len(t) >= 4} - failing_text
    failing, context = set(), set()
    for ln in lines:
        if ln.kind == CHECK:
            continue
        text = ln.text.strip()
        if ln.fatal or text in failing_text:
            failing.add(ln.number)
        elif text in context_text:
            context.add(ln.number)
    return failing, context
