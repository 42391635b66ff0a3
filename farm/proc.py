"""Facts about local processes, read from /proc: enough to tell a live process from a reused pid."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # the name may contain spaces and parentheses


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot); None if it is gone or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def command_line(pid: int) -> str | None:
    """The command line of ``pid`` as its arguments joined by spaces (a process that rewrote its title, as
    sshd does, gives that title), or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return " ".join(raw.decode("utf-8", "replace").rstrip("\0").split("\0"))


def parent_pid(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def boot_id() -> str:
    """This boot of the host (pids and start times restart at boot): the first 8 characters of its id."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "unknown"
