"""The DPDK host flow: the netboot flow, then the target's NIC handed to DPDK and a DPDK echo started on it.

    power -> bootloader -> Linux (the netboot flow) -> the NIC that holds the boot's address found ->
    slirp/the switch taught its MAC (a ping from the kernel) -> hugepages reserved, hugetlbfs mounted ->
    the NIC unbound from its kernel driver, bound to uio_pci_generic (driver_override) ->
    dpdk-testpmd --forward-mode=5tswap started in the background, its log in /tmp ->
    EAL's probe of the port read back -> the sweeps run against it, at the address the NIC had

The settings are farm.boot.dpdk_settings' (farm.flows.dpdk reads them from the pipeline file). The shell
stays on the serial console, so the target can still be asked things (/proc/stat, whether the responder
lives) while DPDK owns the NIC. The booted target says who answers the echo
(:class:`~farm.boot.target.Responder`: the sweeps start no ``farm_echo`` of their own, tag their records
``responder=...``, and check after each point that it still runs), and which cores busy-poll (left out of
the settle rule: a polling lcore is 100 % busy by design).

Each step's shell command is built by a pure function, and its output read by one (tested on captured
output, tests/unit/test_dpdk.py); a step that fails raises a :class:`DpdkError` of its kind with the
lines that say why (the testpmd log is printed on the console too, so the console log keeps it).
"""

from __future__ import annotations

import contextlib
import re
import shlex
import time
from typing import Iterator

import attrs

from ..errors import TestFailure
from ..images.request import ImageRequest
from .dpdk_settings import PCI_ADDRESS, DpdkSettings
from .flow import BootFlow, BootRequest, NetbootFlow
from .session import LinuxTarget
from .target import Responder

KIND = "netboot+dpdk"
TESTPMD = "dpdk-testpmd"
LOG = "/tmp/farm-dpdk.log"
HUGEPAGES_DIR = "/sys/kernel/mm/hugepages/hugepages-2048kB"
HUGETLBFS = "/dev/hugepages"
#: the twin's NIC when DPDK takes it: DPDK has no virtio-mmio PMD; a modern-only virtio-net-pci (no legacy
#: I/O BAR for DPDK to map) without an option ROM (QEMU's iPXE ROM is of no use to U-Boot)
TWIN_NIC = "virtio-net-pci,disable-legacy=on,romfile="
#: mbufs testpmd allocates (its default sizes a pool for every port and core DPDK could have: hundreds of
#: MB, more than a small board's hugepages); 8192 x 2176 B = 18 MB, ample for one port's rings
MBUFS = 8192
#: PMD -> the library EAL loads it from (its plugin directory, pmds-<ABI>)
PMD_LIBRARIES = {"net_virtio": "librte_net_virtio.so", "net_af_packet": "librte_net_af_packet.so",
                 "net_enetfec": "librte_net_enetfec.so"}
CPU_NOTE = ("a busy-polling responder: its forwarding lcores are 100 % busy whatever the load (the lab's "
            "DPDK rows: Idle_Cycles 0), so the sweep reports no CPU utilisation for it")


class DpdkError(TestFailure):
    """The booted target could not run the setup's DPDK echo (the lines that say why are in the message)."""


class NoHugepages(DpdkError):
    """The kernel gave fewer hugepages than the setup asked for, or EAL found none."""


class BindError(DpdkError):
    """The setup's NIC cannot be handed to DPDK (no such device, no such driver, the bind refused)."""


class PmdError(DpdkError):
    """The setup's PMD is not in the image, or EAL probed the port with no PMD or another one."""


class DpdkExited(DpdkError):
    """The DPDK echo ended while it should answer (before it was ready, or during a sweep)."""


# --- the NIC -----------------------------------------------------------------------------------------

NIC_MARK = "farm-dpdk-nic"


@attrs.frozen
class Nic:
    name: str
    device: str  # the device's sysfs path
    driver: str
    mac: str
    address: str | None  # IPv4/prefix, None: none

    @property
    def pci(self) -> str | None:
        """The PCI address of the device (a virtio NIC's is its virtio device's parent)."""
        found = [part for part in self.device.split("/") if PCI_ADDRESS.fullmatch(part)]
        return found[-1] if found else None


def nics_command() -> str:
    """Each kernel NIC: its name, device path, driver, MAC and IPv4 address (one marked line each)."""
    return (f'for d in /sys/class/net/*; do n=${{d##*/}}; [ "$n" = lo ] && continue; '
            f'a=$(ip -4 -o addr show dev "$n" | awk \'{{print $4; exit}}\'); p=$(readlink -f "$d/device"); '
            f'r=$(readlink "$d/device/driver"); read -r m < "$d/address"; '
            f'echo "{NIC_MARK} $n ${{p:--}} ${{r##*/}} $m ${{a:--}}"; done')


def parse_nics(lines: list[str]) -> list[Nic]:
    nics = []
    for line in lines:
        words = line.split()
        if len(words) == 6 and words[0] == NIC_MARK:
            _, name, device, driver, mac, address = words
            nics.append(Nic(name, device, driver or "-", mac, None if address == "-" else address))
    return nics


def choose_port(settings: DpdkSettings, nics: list[Nic]) -> tuple[Nic | None, str]:
    """The NIC the setup hands to DPDK and its port's name for EAL (a PCI address, or for a vdev PMD the
    interface). ``auto``: the NIC holding an IPv4 address (the boot's lease). A named PCI address need
    not be a kernel NIC (its Nic is then None: binding it says whether it exists)."""
    if settings.port == "auto":
        leased = [n for n in nics if n.address]
        if not leased:
            raise BindError("port auto: no NIC of the target has an IPv4 address (NICs: "
                            + (", ".join(f"{n.name} {n.driver}" for n in nics) or "none") + ")")
        nic = leased[0]
        if settings.vdev:
            return nic, nic.name
        if nic.pci is None:
            raise BindError(f"port auto: {nic.name} ({nic.driver}, {nic.device}) is not a PCI device: the PMD "
                            f"{settings.pmd} takes a PCI NIC (a QEMU twin needs virtio-net-pci, not virtio-mmio)")
        return nic, nic.pci
    for nic in nics:
        if settings.port in (nic.name, nic.pci):
            return nic, settings.port
    if settings.vdev:
        raise BindError(f"port {settings.port}: no such interface (NICs: "
                        + (", ".join(n.name for n in nics) or "none") + ")")
    return None, settings.port


def learn_mac_command() -> str:
    """From the kernel's NIC, before DPDK takes it: a packet to the default gateway, so that the network in
    front (QEMU's user network, a switch) knows the NIC's MAC; 5tswap answers no ARP."""
    return ("g=$(ip route | awk '/^default/ {print $3; exit}'); "
            '[ -n "$g" ] && ping -c 1 -W 2 "$g" >/dev/null 2>&1; true')


# --- binding -----------------------------------------------------------------------------------------

BIND_MARK = "farm-dpdk-bind:"


def bind_command(pci: str, driver: str) -> str:
    """Unbind ``pci`` from its kernel driver and bind it to ``driver`` (driver_override: the device's own
    id need not be in the driver's table); prints the driver it ends up with, or why not."""
    dev = f"/sys/bus/pci/devices/{pci}"
    return (f'if [ ! -e {dev} ]; then echo "{BIND_MARK} no-device"; exit 1; fi; '
            f'if [ ! -d /sys/bus/pci/drivers/{driver} ]; then echo "{BIND_MARK} no-driver"; exit 1; fi; '
            f'o=$(readlink {dev}/driver); [ -e {dev}/driver ] && echo {pci} > {dev}/driver/unbind; '
            f'echo {driver} > {dev}/driver_override; echo {pci} > /sys/bus/pci/drivers/{driver}/bind; '
            f'r=$(readlink {dev}/driver); echo "{BIND_MARK} was ${{o##*/}}"; echo "{BIND_MARK} bound ${{r##*/}}"; '
            f'[ "${{r##*/}}" = {driver} ]')


def check_bound(lines: list[str], pci: str, driver: str) -> str | None:
    """The bind's outcome (its marked lines) as a BindError, or the kernel driver it replaced (None: none)."""
    said_all = [line.split(None, 1)[1].strip() if " " in line.strip() else "" for line in lines
                if line.startswith(BIND_MARK)]
    was = next((s.split(" ", 1)[1] for s in said_all if s.startswith("was ")), "")
    said = next((s for s in said_all if not s.startswith("was")), "")
    if said == f"bound {driver}":
        return was or None
    detail = " | ".join(line.strip() for line in lines if line.strip() and not line.startswith(BIND_MARK))
    if said == "no-device":
        why = f"no PCI device {pci} on the target (lspci: /sys/bus/pci/devices)"
    elif said == "no-driver":
        why = f"the kernel has no driver {driver} (is its module in the image's kernel.modules?)"
    elif said.startswith("bound"):
        why = f"it is bound to {said.split(' ', 1)[1] if ' ' in said else 'no driver'} instead"
    else:
        why = "the bind printed nothing"
    raise BindError(f"NIC {pci} cannot be bound to {driver}: {why}" + (f" ({detail[:300]})" if detail else ""))


# --- hugepages ---------------------------------------------------------------------------------------

HUGE_MARK = "farm-dpdk-hugepages"


HUGE_REFUSED = "farm-dpdk-hugepages-refused"


def hugepages_command(pages: int) -> str:
    """Reserve ``pages`` 2 MiB pages and mount hugetlbfs; prints the pages the kernel has and has free. More
    than the memory available beyond those reserved already is refused before the kernel is asked: it would
    take every free page, and the OOM killer the shell (seen on the twin)."""
    return (f"have=$(cat {HUGEPAGES_DIR}/nr_hugepages 2>/dev/null || echo 0); "
            "avail=$(awk '/^MemAvailable:/ {print $2; exit}' /proc/meminfo); "
            f"if [ $(( ({int(pages)} - have) * 2048 )) -gt $(( ${{avail:-0}} * 9 / 10 )) ]; then "
            f'echo "{HUGE_REFUSED} ${{avail:-0}}"; exit 0; fi; '
            f"echo {int(pages)} > {HUGEPAGES_DIR}/nr_hugepages 2>/dev/null; mkdir -p {HUGETLBFS}; "
            f"grep -q ' {HUGETLBFS} hugetlbfs' /proc/mounts || mount -t hugetlbfs nodev {HUGETLBFS}; "
            f'echo "{HUGE_MARK} $(cat {HUGEPAGES_DIR}/nr_hugepages 2>/dev/null || echo 0) '
            f'$(cat {HUGEPAGES_DIR}/free_hugepages 2>/dev/null || echo 0)"')


def parse_hugepages(lines: list[str], asked: int) -> dict[str, int]:
    """{"asked", "total", "free"}; fewer than asked is :class:`NoHugepages`."""
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[0] == HUGE_REFUSED and words[1].isdigit():
            raise NoHugepages(f"no hugepages: asked for {asked} pages of 2 MiB ({asked * 2} MB), the target has "
                              f"{int(words[1]) // 1024} MB available: fewer pages, or a board with more memory")
        if len(words) == 3 and words[0] == HUGE_MARK and words[1].isdigit() and words[2].isdigit():
            total, free = int(words[1]), int(words[2])
            if total < asked or free < asked:
                raise NoHugepages(f"no hugepages: asked for {asked} pages of 2 MiB, the kernel has {total} "
                                  f"({free} free); a board with little free memory reserves them at boot "
                                  f"(kernel argument hugepages={asked})")
            return {"asked": asked, "total": total, "free": free, "page_kib": 2048}
    raise NoHugepages(f"no hugepages: the kernel has no 2 MiB hugepages ({HUGEPAGES_DIR} unreadable: "
                      f"{' | '.join(lines)[:200]!r})")


# --- the PMD and testpmd -----------------------------------------------------------------------------

PMD_MARK = "farm-dpdk-pmd"


def pmd_command(pmd: str) -> str:
    """Where the PMD's library is in the image (EAL's plugin directories), or ``none``."""
    library = PMD_LIBRARIES[pmd]
    return (f'f=$(ls /usr/lib/*/dpdk/pmds-*/{library}* 2>/dev/null | head -n1); '
            f'echo "{PMD_MARK} ${{f:-none}}"')


def check_pmd(lines: list[str], pmd: str) -> str:
    """The PMD's library path, or :class:`PmdError`: the image lacks it."""
    found = next((line.split()[1] for line in lines if line.startswith(PMD_MARK) and len(line.split()) == 2), "none")
    if found == "none":
        raise PmdError(f"unknown PMD {pmd} in this image: {PMD_LIBRARIES[pmd]}* is in none of EAL's plugin "
                       "directories (/usr/lib/<triplet>/dpdk/pmds-*): add its package (librte-net-...) and the "
                       "file to the recipe")
    return found


def testpmd_argv(settings: DpdkSettings, port: str) -> list[str]:
    """dpdk-testpmd as the echo: EAL's arguments (-v: its version on the log), then testpmd's."""
    eal = [TESTPMD, "-v", "-l", settings.lcore_list, "-n", "1", "--huge-dir", HUGETLBFS]
    if settings.vdev:
        eal += ["--no-pci", "--vdev", f"{settings.pmd}0,iface={port}"]
    else:
        eal += ["-a", port]
    app = ["--forward-mode=5tswap", "--auto-start", f"--total-num-mbufs={MBUFS}",
           f"--nb-cores={len(settings.forwarding_lcores)}", f"--stats-period={STATS_PERIOD}"]
    return [*eal, "--", *app]


def start_command(settings: DpdkSettings, port: str) -> str:
    """Start testpmd in the background, detached from the console's shell (a sh that exits at once: the
    interactive shell has no job to report), its output and exit status in :data:`LOG`."""
    argv = " ".join(shlex.quote(a) for a in testpmd_argv(settings, port))
    inner = f"({argv} </dev/null; echo \"farm-dpdk-exit $?\") >{LOG} 2>&1 &"
    return f"rm -f {LOG}; sh -c {shlex.quote(inner)}"


READY_MARK = "farm-dpdk-ready"
#: seconds between testpmd's port statistics. Its output to a file is block-buffered, but for what it
#: flushes itself: its EAL lines, "Checking link statuses...", and each statistics block. So the first
#: block is how farm sees that it forwards (and the blocks count what it forwarded, on the console at the end)
STATS_PERIOD = 3
FORWARDING = "Port statistics ="


def wait_command(timeout: float) -> str:
    """Wait (shell builtins) until testpmd forwards, or has exited; prints which, then its log."""
    seconds = max(1, int(timeout))
    return (f"read -r t0 _ < /proc/uptime; t0=${{t0%.*}}; s=wait; while :; do "
            f"if grep -q '{FORWARDING}' {LOG} 2>/dev/null; then s=forwarding; break; fi; "
            f"if grep -q '^farm-dpdk-exit' {LOG} 2>/dev/null; then s=exited; break; fi; "
            f"read -r t _ < /proc/uptime; [ $((${{t%.*}} - t0)) -ge {seconds} ] && break; usleep 200000; done; "
            f"echo \"{READY_MARK} $s\"; head -n 60 {LOG}")


@attrs.frozen
class Probe:
    """What testpmd's log says of the port: DPDK's version, the PMD that probed it, its MAC."""

    version: str | None
    pmd: str | None
    device: str | None
    mac: str | None

    def to_json(self) -> dict:
        return {"version": self.version, "pmd": self.pmd, "device": self.device, "mac": self.mac}


_VERSION = re.compile(r"RTE Version: '(?:DPDK )?([^']+)'")
_PCI_PROBE = re.compile(r"Probe PCI driver: (\S+) \(([0-9a-f]+:[0-9a-f]+)\) device: (\S+)")
_VDEV_PROBE = re.compile(r"Initializing pmd_(\w+) for (net_\w+?)\d*\b")
_PORT_MAC = re.compile(r"^Port 0: ([0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5})\s*$")
_NO_HUGEPAGES = ("No available hugepages reported", "Cannot get hugepage information",
                 "No available 2048 kB hugepages", "Cannot allocate memory", "Not enough memory available")
_NO_PORT = ("No probed ethernet devices", "No port", "cannot be used", "Requested device")


def parse_probe(lines: list[str]) -> Probe:
    version = pmd = device = mac = None
    for line in lines:
        if (m := _VERSION.search(line)):
            version = m.group(1)
        elif (m := _PCI_PROBE.search(line)):
            pmd, device = m.group(1), m.group(3)
        elif (m := _VDEV_PROBE.search(line)):
            pmd, device = f"net_{m.group(1)}", m.group(2)
        elif (m := _PORT_MAC.match(line.strip())):
            mac = m.group(1).lower()
    return Probe(version, pmd, device, mac)


def log_lines(lines: list[str]) -> list[str]:
    """The testpmd log of :func:`wait_command`'s output (after its marked line)."""
    marks = [i for i, line in enumerate(lines) if line.startswith(READY_MARK)]
    return lines[marks[0] + 1:] if marks else lines


def check_ready(lines: list[str], settings: DpdkSettings, port: str) -> Probe:
    """testpmd's state from :func:`wait_command`: forwarding with the setup's PMD on the port, or the
    DpdkError that says why not (the log's telling lines in its message)."""
    state = next((line.split()[1] for line in lines if line.startswith(READY_MARK) and len(line.split()) == 2), "")
    log = log_lines(lines)
    probe = parse_probe(log)
    telling = [line.strip() for line in log if re.search(r"EAL|error|fail|cannot|No |Port", line, re.I)][-8:]
    tail = " | ".join(telling or [line.strip() for line in log[-6:]])
    if state != "forwarding":
        if any(s in line for line in log for s in _NO_HUGEPAGES):
            raise NoHugepages(f"no hugepages: EAL could not get its memory ({tail})")
        if probe.pmd is None and any(s in line for line in log for s in _NO_PORT):
            raise PmdError(f"EAL probed no port {port} with the PMD {settings.pmd} ({tail})")
        if state == "exited":
            raise DpdkExited(f"{TESTPMD} exited before it forwarded ({tail})")
        raise DpdkExited(f"{TESTPMD} did not start forwarding within {settings.ready_timeout:g} s ({tail})")
    if probe.pmd != settings.pmd:
        raise PmdError(f"EAL probed port {port} with {probe.pmd or 'no PMD'}, not the setup's {settings.pmd} ({tail})")
    return probe


ALIVE_MARK = "farm-dpdk-alive"


def alive_command() -> str:
    return f'if pidof {TESTPMD} >/dev/null; then echo "{ALIVE_MARK} yes"; else echo "{ALIVE_MARK} no"; tail -n 8 {LOG}; fi'


def check_alive(lines: list[str]) -> None:
    if any(line.strip() == f"{ALIVE_MARK} yes" for line in lines):
        return
    rest = [line.strip() for line in lines if line.strip() and not line.startswith(ALIVE_MARK)]
    raise DpdkExited(f"the DPDK echo ({TESTPMD}) is gone: it no longer answers ({' | '.join(rest)[:400] or 'no log'})")


def stop_command() -> str:
    """Stop testpmd (it prints its ports' totals and "Bye..."); the log's tail on the console."""
    return (f"kill $(pidof {TESTPMD}) 2>/dev/null; i=0; while pidof {TESTPMD} >/dev/null && [ $i -lt 50 ]; do "
            f"i=$((i+1)); usleep 100000; done; tail -n 20 {LOG} 2>/dev/null; true")


# --- the flow ----------------------------------------------------------------------------------------


def _run(shell, command: str, timeout: float = 30) -> list[str]:
    """A command's output lines, whatever its exit code (the steps read their marked lines)."""
    out, _, _ = shell.run(command, timeout=timeout)
    return list(out)


@attrs.frozen
class DpdkEcho:
    """The DPDK echo on a booted target's shell: the steps the flow takes, one call each (tests take
    them one by one on a shared boot)."""

    settings: DpdkSettings
    shell: object

    def nic(self) -> tuple[Nic | None, str]:
        return choose_port(self.settings, parse_nics(_run(self.shell, nics_command())))

    def learn_mac(self) -> None:
        _run(self.shell, learn_mac_command(), timeout=15)

    def hugepages(self, pages: int | None = None) -> dict[str, int]:
        pages = self.settings.hugepages if pages is None else pages
        return parse_hugepages(_run(self.shell, hugepages_command(pages)), pages)

    def bind(self, port: str) -> dict[str, str | None]:
        """Hand the port to the setup's binding (a vdev PMD's stays the kernel's: "none"); the binding and
        the kernel driver it replaced."""
        if self.settings.binding == "none":
            return {"driver": "none", "replaced": None}
        replaced = check_bound(_run(self.shell, bind_command(port, self.settings.binding)), port,
                               self.settings.binding)
        return {"driver": self.settings.binding, "replaced": replaced}

    def pmd(self) -> str:
        return check_pmd(_run(self.shell, pmd_command(self.settings.pmd)), self.settings.pmd)

    def start(self, port: str) -> Probe:
        _run(self.shell, start_command(self.settings, port))
        lines = _run(self.shell, wait_command(self.settings.ready_timeout), timeout=self.settings.ready_timeout + 60)
        return check_ready(lines, self.settings, port)

    def check(self) -> None:
        check_alive(_run(self.shell, alive_command()))

    def stop(self) -> None:
        _run(self.shell, stop_command())


@attrs.frozen
class DpdkFlow:
    """A flow that hands over a shell (``host``), with the DPDK echo started on that shell: the netboot
    flow's booted Linux (module docstring), or a guest on it (``settings.guest``: the host boots, the guest
    starts on its console, the echo there). farm.flows.dpdk chooses the host; this module imports no guest
    code (farm.guest builds on farm.boot)."""

    settings: DpdkSettings
    #: a boot flow whose target is a LinuxTarget (farm.flows.dpdk.dpdk_flow: the netboot flow, or a guest's)
    host: BootFlow = NetbootFlow()
    kind: str = KIND

    def images(self, image: ImageRequest) -> ImageRequest:
        return self.host.images(image)

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[LinuxTarget]:
        with self.host.boot(request) as booted:
            echo = DpdkEcho(self.settings, booted.shell)
            try:
                fields = start_echo(echo, booted.recorded, kind=self.kind)
                if booted.reach_address:  # a guest's ports are reached through its host's forwards
                    fields["reach_address"] = booted.reach_address
                if booted.topology:  # the guest's (its QEMU command line, its host), with the DPDK echo in it
                    fields["topology"] = {**booted.topology, **fields["topology"]}
                yield attrs.evolve(booted, **fields)
            finally:
                with contextlib.suppress(Exception):  # the board is powered off next, whatever happened
                    echo.stop()


def start_echo(echo: DpdkEcho, recorded: dict, kind: str = KIND) -> dict:
    """Take the NIC and start the echo; the LinuxTarget fields that say so (its topology, the address
    the NIC had, the responder the sweeps reach, the polling cores)."""
    settings = echo.settings
    t0 = time.monotonic()
    nic, port = echo.nic()
    kernel_driver = nic.driver if nic else None
    reach = nic.address.split("/")[0] if nic and nic.address else None
    echo.learn_mac()
    pages = echo.hugepages()
    library = echo.pmd()
    binding = echo.bind(port)
    try:
        probe = echo.start(port)
    finally:  # the log's head on the console, whatever happened: the console log keeps EAL's probe (or why not)
        with contextlib.suppress(Exception):
            _run(echo.shell, f"head -n 60 {LOG}")
    topology = {"flow": kind, "dpdk": {
        **probe.to_json(), "app": settings.app, "responder": settings.responder,
        "argv": testpmd_argv(settings, port), "lcores": list(settings.lcores),
        "forwarding_lcores": list(settings.forwarding_lcores), "hugepages": pages, "port": port,
        "pmd_library": library, "binding": binding["driver"], "replaced_driver": binding["replaced"],
        "kernel_driver": kernel_driver,
        "nic": nic.name if nic else None, "address": reach, "cpu": CPU_NOTE}}
    return {"topology": topology, "reach_address": reach,
            "responder": Responder(settings.responder, settings.forwarding_lcores, echo.check, CPU_NOTE),
            "recorded": {**recorded, "dpdk_version": probe.version, "dpdk_seconds": round(time.monotonic() - t0, 3)}}
