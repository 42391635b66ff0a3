"""What the booted target says about itself: cores, CPU frequency (and where that came from), address.

Parsing is pure (tested on recorded output); :func:`read_facts` runs one shell command.
"""

from __future__ import annotations

import re

import attrs

_CPU = "/sys/devices/system/cpu"

#: One shell line, with busybox sh's builtins where a file is read (``read -r v < FILE``, a ``case`` over
#: /proc/cpuinfo): three processes (nproc, uname, ip) instead of the fifteen that ``$(cat FILE)`` and
#: pipelines forked, each tens of ms under TCG. ``nproc`` stays (it honours the shell's affinity:
#: ``isolcpus=``); ip's own line is parsed here (:func:`parse_address`), not cut on the target.
FACTS_COMMAND = (
    "echo cpus=$(nproc); "
    f"v=; [ -r {_CPU}/online ] && read -r v < {_CPU}/online; echo online=$v; "
    f"v=; [ -r {_CPU}/cpu0/cpufreq/scaling_cur_freq ] && read -r v < {_CPU}/cpu0/cpufreq/scaling_cur_freq; "
    "echo cpufreq_khz=$v; "
    f"v=; [ -r {_CPU}/cpu0/cpufreq/scaling_governor ] && read -r v < {_CPU}/cpu0/cpufreq/scaling_governor; "
    "echo governor=$v; "
    "v=; while read -r l; do case \"$l\" in [Cc][Pp][Uu]' '[Mm][Hh][Zz]*) v=${l#*:}; break;; esac; done < /proc/cpuinfo; "
    "echo cpuinfo_mhz=$v; "
    "read -r v < /proc/sys/kernel/osrelease; echo kernel=$v; "
    "echo machine=$(uname -m); "
    "ip -4 -o addr show scope global 2>/dev/null || :"
)

#: ``ip -4 -o addr``'s line: ``2: eth0    inet 10.0.2.15/24 brd 10.0.2.255 scope global eth0 ...``
_IP_LINE = re.compile(r"^\d+:\s+\S+\s+inet\s+(\d{1,3}(?:\.\d{1,3}){3})(?:/\d+)?\s")


@attrs.frozen
class TargetFacts:
    cpus: int | None
    online: str
    frequency_hz: float | None
    frequency_source: str  # "cpufreq", "cpuinfo", or "unknown"
    governor: str
    kernel: str
    machine: str
    address: str  # the first global IPv4 address, without the prefix length

    def as_dict(self) -> dict:
        return attrs.asdict(self)


def parse_facts(lines: list[str]) -> TargetFacts:
    values: dict[str, str] = {}
    for line in lines:
        found = _IP_LINE.match(line.strip())
        if found:  # the first global address (an older FACTS_COMMAND printed it as addr=A/N)
            values.setdefault("addr", found.group(1))
        elif "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    frequency, source = None, "unknown"
    if re.fullmatch(r"\d+", values.get("cpufreq_khz", "")):
        frequency, source = float(values["cpufreq_khz"]) * 1e3, "cpufreq"
    elif re.fullmatch(r"\d+(\.\d+)?", values.get("cpuinfo_mhz", "")):
        frequency, source = float(values["cpuinfo_mhz"]) * 1e6, "cpuinfo"
    cpus = int(values["cpus"]) if values.get("cpus", "").isdigit() else None
    return TargetFacts(cpus=cpus, online=values.get("online", ""), frequency_hz=frequency,
                       frequency_source=source, governor=values.get("governor", ""),
                       kernel=values.get("kernel", ""), machine=values.get("machine", ""),
                       address=values.get("addr", "").split("/")[0])


def read_facts(shell) -> TargetFacts:
    return parse_facts(shell.run_check(FACTS_COMMAND, timeout=30))


def pin_frequency_command(khz: int) -> str:
    """Shell command pinning every core to ``khz`` through cpufreq (the userspace governor, else
    min = max = khz); exits 3 when the target has no cpufreq, 4 when the value is refused."""
    if isinstance(khz, bool) or not isinstance(khz, int) or khz <= 0:
        raise ValueError(f"frequency {khz!r}: expected a positive whole number of kHz")
    return (
        "set -- /sys/devices/system/cpu/cpu[0-9]*/cpufreq; [ -d \"$1\" ] || exit 3; "
        f"for c in \"$@\"; do if echo userspace > $c/scaling_governor 2>/dev/null; then "
        f"echo {khz} > $c/scaling_setspeed || exit 4; else "
        f"echo {khz} > $c/scaling_max_freq && echo {khz} > $c/scaling_min_freq || exit 4; fi; done; "
        "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"
    )


def pin_frequency(shell, name: str, khz: int) -> None:
    """A setup's CPU frequency, through cpufreq; a board without it cannot run this setup."""
    from ..errors import TestFailure

    output, _, code = shell.run(pin_frequency_command(khz), timeout=30)
    if code != 0:
        why = {3: "it has no cpufreq", 4: "cpufreq refused the value"}.get(code, " | ".join(output[-3:]))
        raise TestFailure(f"{name}: cannot pin the CPUs to {khz} kHz: {why}")
