"""The guest's QEMU command line and the shell line that starts it on the host: pure functions.

The lab's line, on the MaaXBoard (arm64; amd64 is the same on a PC with VT-x)::

    qemu-system-aarch64 -M virt,gic-version=3 -cpu host -enable-kvm -smp 1 -m 512M -nographic
        -serial mon:stdio -kernel /guest/Image -initrd /guest/initrd.cpio.zst
        -append 'console=ttyAMA0 quiet farm.ip=10.0.3.15:255.255.255.0:10.0.3.2' -netdev user,id=n0,net=10.0.3.0/24,hostfwd=tcp::5201-:5201,...
        -device virtio-net-device,netdev=n0

``virtio-net-device`` is on the MMIO bus and needs no option ROM (``virtio-net-pci`` asks for
``efi-virtio.rom``; on amd64 ``romfile=`` turns that off). QEMU runs in the foreground of the
host's console: the guest's serial console is the board's, ``Ctrl-A x`` quits QEMU.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterable, Mapping

from .spec import GuestSpec

QEMU_BINARIES = {"arm64": "qemu-system-aarch64", "amd64": "qemu-system-x86_64"}
CONSOLES = {"arm64": "ttyAMA0", "amd64": "ttyS0"}
MACHINES = {"arm64": "virt,gic-version=3", "amd64": "q35"}
#: the guest's user network. Not QEMU's default 10.0.2.0/24: a host that is itself behind a user network
#: (the twin) gets the load generator's packets from 10.0.2.2, which in a default guest network is the
#: guest's own gateway, i.e. the host's loopback: UDP replies went there and were lost (TCP forwards are
#: proxied, so they worked). A board's lab network is another, but the guest's should never collide.
GUEST_NET = "10.0.3.0/24"
#: the address QEMU's user network leases its (only) guest, and its gateway: the network's .15 and .2, always.
#: Given to the guest's /init as a bootloader's lease is (farm.ip=), so that it need not ask DHCP (udhcpc:
#: 0.3-0.6 s of every guest boot on the twin); the netdev's DHCP server still answers a guest that asks
GUEST_LEASE = "farm.ip=10.0.3.15:255.255.255.0:10.0.3.2"
#: q35 adds a VGA card (and asks for its ROM) even with -nographic; the guest's console is serial
NO_DISPLAY = {"arm64": (), "amd64": ("-vga", "none")}
NICS = {"arm64": "virtio-net-device,netdev=n0", "amd64": "virtio-net-pci,netdev=n0,romfile="}
#: the guest NIC's MAC on a tap network (QEMU's default, 52:54:00:12:34:56, is the twin's own NIC's: on
#: one bridge the two would collide); locally administered, farm's
GUEST_MAC = "52:54:00:fa:4d:01"
#: the host's bridge and the guest's tap on it (network: tap)
BRIDGE, TAP = "farmbr0", "farmtap0"
#: the kernel modules of a tap network on the host (their dependencies come with them)
TAP_MODULES = ("bridge", "tun", "vhost_net")
#: printed by the bridge's setup on the host (tap_setup): what it moved where; digits and dots only, so
#: the typed line's echo never matches
TAP_LINE = re.compile(rb"FARM-TAP dev=([A-Za-z0-9_.-]+) addr=([0-9./]+) gw=([0-9.]*) vhost=(yes|no)")
TAP_FAILED = re.compile(rb"FARM-TAP-FAILED[^\r\n]*")
#: printed by the line that starts QEMU: the pinning of each vCPU thread, and QEMU's exit status
PIN_LINE = re.compile(rb"FARM-PIN vcpu=(\d+) tid=(\d+) cpu=(\d+)")
PIN_FAILED = re.compile(rb"FARM-PIN-FAILED vcpu=\d+ core=\d+")  # digits: never the typed line's echo
EXIT_LINE = re.compile(rb"FARM-QEMU-EXIT=(\d+)")


def guest_forwards(ports: Iterable[int], taken: Mapping[int, int] | None = None) -> dict[int, int]:
    """Host port -> guest port for each port a benchmark listens on in the guest.

    Identity by default: the load generator that reaches the host's port P reaches the guest's P, so
    the benchmarks need not know they run in a guest. ``taken`` (host ports already used on the host,
    e.g. by its own sshd) moves a port to the next free one above it."""
    used = dict(taken or {})
    forwards: dict[int, int] = {}
    for port in sorted(set(ports)):
        host = port
        while host in used or host in forwards:
            host += 1
            if host > 65535:
                raise ValueError(f"no free host port for guest port {port}")
        forwards[host] = port
    return forwards


def qemu_command(spec: GuestSpec, kernel: str, initrd: str, forwards: Mapping[int, int],
                 bootargs: Iterable[str] = (), arch: str = "arm64") -> list[str]:
    """QEMU's argument vector for the guest of ``spec`` (kernel and initrd: paths on the host)."""
    if arch not in QEMU_BINARIES:
        raise ValueError(f"no guest command line for architecture {arch!r}")
    accel = ["-enable-kvm"] if spec.accel == "kvm" else ["-accel", "tcg"]
    # a user network leases its only guest a fixed address (GUEST_LEASE); on a bridge the guest asks DHCP
    lease = [] if spec.network == "tap" else [GUEST_LEASE]
    append = " ".join([f"console={CONSOLES[arch]}", "quiet", *lease, *spec.bootargs, *bootargs])
    if spec.network == "tap":
        # the tap the host made on its bridge (tap_setup); vhost-net moves the packets in the host's
        # kernel, which needs KVM's ioeventfd/irqfd: under tcg QEMU's own virtio back end does it
        vhost = "on" if spec.accel == "kvm" else "off"
        netdev = f"tap,id=n0,ifname={TAP},script=no,downscript=no,vhost={vhost}"
        nic = f"{spec.nic + ',netdev=n0' if spec.nic else NICS[arch]},mac={GUEST_MAC}"
    else:
        netdev = f"user,id=n0,net={GUEST_NET}" + "".join(f",hostfwd={proto}::{host}-:{guest}"
                                        for host, guest in sorted(forwards.items()) for proto in ("tcp", "udp"))
        nic = f"{spec.nic},netdev=n0" if spec.nic else NICS[arch]
    return [QEMU_BINARIES[arch], "-M", MACHINES[arch], "-cpu", spec.cpu, *accel,
            "-smp", str(spec.vcpus), "-m", f"{spec.memory_mb}M", "-nographic", "-serial", "mon:stdio",
            "-no-reboot", "-name", "guest,debug-threads=on",
            "-kernel", kernel, "-initrd", initrd, "-append", append,
            "-netdev", netdev, "-device", nic, *NO_DISPLAY[arch], *spec.extra_args]


def tap_setup() -> str:
    """The host's shell line (busybox sh: brctl, tunctl, ip) that puts its NIC on a bridge with a tap
    for the guest beside it (network: tap). The bridge takes the NIC's MAC, address and default
    route, so the board keeps its place on its network (the lab's; a twin's QEMU user network, whose
    forwards and DHCP see the same MAC and address), and the guest, bridged with its own MAC, asks
    that network's DHCP for an address of its own. No NAT: nothing of netfilter in the host image,
    no hop but the bridge. Prints ``FARM-TAP dev=eth0 addr=10.0.2.15/24 gw=10.0.2.2 vhost=yes``
    (vhost: /dev/vhost-net is there), or ``FARM-TAP-FAILED`` when a step failed."""
    q = '"'
    steps = [
        "dev=$(ip -4 -o addr show scope global | awk 'NR==1{print $2}')",
        f"addr=$(ip -4 -o addr show dev {q}$dev{q} scope global | awk 'NR==1{{print $4}}')",
        "gw=$(ip route show default | awk 'NR==1{print $3}')",
    ]
    bridge = [
        f"[ -n {q}$dev{q} ] && [ -n {q}$addr{q} ]",
        # busybox's brctl has no setfd/stp: sysfs (STP is off on a new bridge; no forward delay either)
        f"brctl addbr {BRIDGE}", f"echo 0 > /sys/class/net/{BRIDGE}/bridge/forward_delay",
        f"ip link set {BRIDGE} address {q}$(cat /sys/class/net/$dev/address){q}",
        f"brctl addif {BRIDGE} {q}$dev{q}", f"ip addr flush dev {q}$dev{q}", f"ip addr add {q}$addr{q} dev {BRIDGE}",
        f"ip link set {BRIDGE} up", f"{{ [ -z {q}$gw{q} ] || ip route add default via {q}$gw{q} dev {BRIDGE}; }}",
        f"tunctl -t {TAP} >/dev/null", f"brctl addif {BRIDGE} {TAP}", f"ip link set {TAP} up",
        f"echo {q}FARM-TAP dev=$dev addr=$addr gw=$gw vhost=$([ -c /dev/vhost-net ] && echo yes || echo no){q}",
    ]
    # the quotes split the marker in the typed line, so its echo never reads as the answer
    return "; ".join(steps) + "; " + " && ".join(bridge) + " || echo FARM-TAP-''FAILED at $dev $addr"


def parse_tap(lines: Iterable[str]) -> dict[str, str | bool]:
    """What :func:`tap_setup` printed: ``{"dev", "address", "gateway", "vhost"}``; ValueError when it failed."""
    text = "\n".join(lines).encode()
    if (found := TAP_LINE.search(text)) is None:
        failed = TAP_FAILED.search(text)
        raise ValueError((failed.group(0).decode() if failed else "no FARM-TAP line")
                         + f" (the host said: {text.decode(errors='replace')[-300:]!r})")
    dev, addr, gw, vhost = (g.decode() for g in found.groups())
    return {"dev": dev, "address": addr, "gateway": gw, "vhost": vhost == "yes"}


def pin_script(pin: tuple[int, ...] | None, vcpus: int, tries: int = 100) -> str:
    """Shell text (busybox sh) that waits for QEMU's vCPU threads (``-name guest,debug-threads=on``
    names them ``CPU <i>/KVM``, ``CPU <i>/TCG``) under the process ``$$`` and pins vCPU i's thread
    to ``pin[i]`` with taskset, printing ``FARM-PIN vcpu=i tid=T cpu=C`` for each; without ``pin`` it
    only reports the threads (``cpu=-1`` is never printed: unpinned threads are not listed)."""
    if not pin:
        return ""
    cores = " ".join(str(c) for c in pin)
    return (f"(n=0; while [ $n -lt {tries} ]; do "
            f"found=$(grep -l '^CPU [0-9]*/' /proc/$$/task/*/comm 2>/dev/null | wc -l); "
            f"[ \"$found\" -ge {vcpus} ] && break; n=$((n+1)); sleep 0.1; done; "
            f"i=0; for core in {cores}; do "
            f"for t in /proc/$$/task/*; do case \"$(cat $t/comm)\" in \"CPU $i/\"*) "
            f"tid=${{t##*/}}; if taskset -p -c $core $tid >/dev/null 2>&1; "
            f"then echo \"FARM-PIN vcpu=$i tid=$tid cpu=$core\"; "
            f"else echo \"FARM-PIN-FAILED vcpu=$i core=$core\"; fi;; esac; done; "
            f"i=$((i+1)); done) &")


def start_line(command: list[str], pin: tuple[int, ...] | None, vcpus: int) -> str:
    """The line typed on the host's shell: QEMU in the foreground of the console (``exec`` keeps its
    pid, so the pinner finds its threads under ``$$``), its exit status printed when it ends.

    QEMU's stdio keeps the tty's output processing, so the host's ``onlcr`` would turn each of the
    guest's ``\r\n`` into ``\r\r\n``: it is off while QEMU runs."""
    inner = f"{pin_script(pin, vcpus)} exec {shlex.join(command)}".strip()
    return f"stty -onlcr 2>/dev/null; sh -c {shlex.quote(inner)}; s=$?; stty onlcr 2>/dev/null; echo FARM-QEMU-EXIT=$s"


#: busybox ash's line editor keeps this many characters of a typed line (CONFIG_FEATURE_EDITING_MAX_LEN
#: is 1024) and drops the rest: a longer start line is written to a script in pieces first
TYPED_MAX = 1000
#: a piece of the script, before quoting (a quote is five characters quoted: 5 x 128 + the shell
#: driver's marker stays under TYPED_MAX)
SCRIPT_PIECE = 128
START_SCRIPT = "/tmp/farm-guest-start.sh"


def typed_lines(line: str, script: str = START_SCRIPT) -> tuple[list[str], str]:
    """``line`` as the host's shell can take it: (commands that write it to ``script``, the line to type).

    A line under busybox's 1024 characters is typed as it is (no commands); a longer one (a guest with
    many forwards and a long command line) is written in quoted pieces and run by ``sh``, which runs
    the same text: the pinner's ``$$`` is still the shell that ``exec``s QEMU."""
    if len(line) <= TYPED_MAX:
        return [], line
    pieces = [line[i:i + SCRIPT_PIECE] for i in range(0, len(line), SCRIPT_PIECE)]
    target = shlex.quote(script)
    writes = [f"mkdir -p {shlex.quote(script.rsplit('/', 1)[0] or '/')} && : > {target}"]
    writes += [f"printf %s {shlex.quote(piece)} >> {target}" for piece in pieces]
    return writes, f"sh {target}"


def parse_pins(text: bytes) -> dict[int, tuple[int, int]]:
    """vCPU -> (thread id, host core) from the pinner's lines."""
    return {int(m.group(1)): (int(m.group(2)), int(m.group(3))) for m in PIN_LINE.finditer(text)}
