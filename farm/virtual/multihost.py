"""A virtual farm of several lab hosts: the farm as the lab runs it, with its network in between.

    hosts = start(directory, hosts=3, places_per_host=4, generators=2)   # everything up, places tagged
    ...   farm run PIPELINE --farm board=standin --coordinator <hosts.coordinator> ...
    hosts.kill_exporter("h1"); hosts.restart_coordinator(); hosts.cut("h2"); hosts.break_board(place)
    stop(directory)                                                       # everything down, nothing left

Every machine is a network namespace on one bridge (:mod:`farm.virtual.netns`): this machine (the
bridge's address) runs the **coordinator** and the CI jobs; each **lab host** ``h<N>`` runs a
``labgrid-exporter`` under the lab's supervisor (as systemd restarts it), sshd (labgrid stages the
job's files over SSH into the host's own TFTP root), pdudaemon (a ``localcmdline`` PDU, one outlet
per board) and its boards' serial servers; each **board** is a :mod:`farm.virtual.standin` board
(U-Boot, TFTP from its host's root, then a real busybox shell in a namespace of its own, at an
address of its own); each **load generator** ``lg<N>`` is a machine with sshd whose sessions are
logged (:mod:`farm.virtual.sessionlog`) and an exporter of its own exporting its SSH login, so it is
a place that jobs reserve with the boards wired to it (:mod:`farm.places.loadgens`).

Places: ``standin-<host>-<i>``, tagged ``board=standin lab=multihost host=h<N> farm_health=ok``
and ``farm_loadgens=lg<G>``; load clients ``lg<G>``, tagged ``loadgen=lg<G>``. Jobs boot them with
the farm's own env file (``<dir>/env/standin.yaml``: a RemotePlace and the MaaXBoard's drivers) and
a stand-in image (``<dir>/image``: a kernel and an initrd the boards load and do not run).

Faults, as they happen to a lab: an exporter killed (its supervisor starts it again), the
coordinator restarted (it keeps places and tags, forgets locks and reservations), a host's network
cut and restored (its link down on the bridge), a board that never boots (its power comes on,
nothing else) and mended. ``multihost.json`` holds every process (pid and start time), namespace
and SSH drop-in, so :func:`stop` removes exactly what :func:`start` made, also after a crash.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import attrs
import yaml

from ..coordinator import Coordinator
from ..errors import InfrastructureError
from ..places import HEALTH_TAG, HEALTHY
from ..places.loadgens import GENERATOR_TAG, LOADGENS_TAG, RESOURCE_PREFIX
from . import netns, sshd
from .configs import PDU_NAME, pdudaemon_config
from .processes import Process, children, is_running, log_tail, port_open, spawn, stop as stop_process, wait_for

STATE_FILE = "multihost.json"
BOARD = "standin"
SERIAL_BASE = 7000
PDU_PORT = 16421
STARTUP_TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parents[2]


@attrs.define
class Machine:
    """One network namespace: a lab host (``h1``), a board (``b1-2``) or a load generator (``lg1``)."""

    name: str
    netns: str
    veth: str
    address: str


@attrs.define
class Board:
    place: str
    host: str           # the lab host it hangs off (its serial server, PDU outlet, TFTP root)
    machine: Machine    # the board's own namespace: its shell, its address
    outlet: int
    loadgen: str        # the load client wired to it

    @property
    def serial_port(self) -> int:
        return SERIAL_BASE + self.outlet


@attrs.define
class MultiHostFarm:
    directory: Path
    tag: str
    bridge: str
    bridge_address: str
    coordinator: str
    hosts: list[Machine]
    boards: list[Board]
    generators: list[Machine]
    world: str                       # a directory the boards' shells (user nobody) may enter
    processes: list[Process] = attrs.field(factory=list)
    dropins: list[str] = attrs.field(factory=list)

    # --- where things are ---
    @property
    def env_file(self) -> Path:
        return self.directory / "env" / f"{BOARD}.yaml"

    @property
    def image(self) -> Path:
        return self.directory / "image"

    def host_dir(self, host: str) -> Path:
        return self.directory / "hosts" / host

    def board_dir(self, board: Board) -> Path:
        return self.host_dir(board.host) / "boards" / str(board.outlet)

    def generator_log(self, name: str) -> Path:
        return self.directory / "generators" / name / "sessions.jsonl"

    @property
    def places(self) -> list[str]:
        return [b.place for b in self.boards]

    def board(self, place: str) -> Board:
        return next(b for b in self.boards if b.place == place)

    def host(self, name: str) -> Machine:
        return next(h for h in self.hosts if h.name == name)

    def process(self, name: str) -> Process:
        return next(p for p in reversed(self.processes) if p.name == name)

    # --- the state file ---
    def save(self) -> None:
        data = attrs.asdict(self, recurse=True, value_serializer=lambda _i, _a, v: str(v) if isinstance(v, Path) else v)
        data["processes"] = [p.as_dict() for p in self.processes]
        tmp = self.directory / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(self.directory / STATE_FILE)

    @classmethod
    def load(cls, directory: Path) -> "MultiHostFarm":
        from ..config import json_node, load_json
        from ..schema.read import structure

        path = directory / STATE_FILE
        return structure(json_node(load_json(path, "multi-host farm state"), path), cls)

    # --- faults ---
    def kill_exporter(self, host: str) -> int:
        """SIGKILL host's labgrid-exporter (not its supervisor, which starts it again, as systemd does)."""
        supervisor = self.process(f"exporter {host}")
        killed = [pid for pid in children(supervisor.pid)]
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        if not killed:
            raise InfrastructureError(f"exporter {host}: no labgrid-exporter under its supervisor to kill")
        return killed[0]

    def restart_coordinator(self) -> None:
        """Stop the coordinator and start it again on the same address (places.yaml: places and tags)."""
        old = self.process("coordinator")
        stop_process(old)
        port = int(self.coordinator.rsplit(":", 1)[1])
        wait_for(lambda: not port_open(port, self.bridge_address), 10)
        proc = spawn("coordinator", list(old.argv), Path(old.log), cwd=self.directory / "coordinator")
        self.processes.append(proc)
        self.save()
        _ready(proc, lambda: port_open(port, self.bridge_address), f"listen on {self.coordinator}")

    def cut(self, host: str) -> None:
        netns.set_link(self.host(host).veth, up=False)

    def restore(self, host: str) -> None:
        netns.set_link(self.host(host).veth, up=True)

    def kill_load(self, generator: str, *, wait: float = 0.0) -> int | None:
        """SIGKILL the ``farm_load`` running on load generator ``generator`` (waiting up to ``wait`` s for
        one to run): the machine lost mid-sweep. Its pid, or None when none ran."""
        machine = next(g for g in self.generators if g.name == generator)
        deadline = time.monotonic() + wait
        while True:
            pids = netns.ip("netns", "pids", machine.netns, check=False).stdout.split()
            for pid in pids:
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if argv and argv[0].endswith(b"/farm_load"):
                    os.kill(int(pid), signal.SIGKILL)
                    return int(pid)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)

    def break_board(self, place: str) -> None:
        """The board's power comes on, and nothing else happens (farm.virtual.standin's fault)."""
        (self.board_dir(self.board(place)) / "fault").write_text("never-boots\n")

    def mend_board(self, place: str) -> None:
        (self.board_dir(self.board(place)) / "fault").unlink(missing_ok=True)

    def exported(self, coord: Coordinator) -> bool:
        """Every lab host's and load generator's exporter is there, with its resources available."""
        coord.sync()
        have = coord.resources()
        want = {f"fm{self.tag}-{h.name}": {b.place for b in self.boards if b.host == h.name} for h in self.hosts}
        want.update({f"fm{self.tag}-{g.name}": {g.name} for g in self.generators})
        return all(groups <= set(have.get(exporter, {})) and all(
            e.avail for g in groups for e in have[exporter][g].values() if "cls" in e.data)
            for exporter, groups in want.items())


# --- up ----------------------------------------------------------------------------------------------

def plan(directory: Path, *, hosts: int, places_per_host: int, generators: int) -> MultiHostFarm:
    tag = hashlib.sha256(f"{directory}{time.time()}".encode()).hexdigest()[:4]
    subnet = netns.free_subnet()
    base = str(subnet.network_address).rsplit(".", 1)[0]
    machines = [Machine(f"h{n}", f"fm{tag}-h{n}", f"fm{tag}h{n}", f"{base}.{10 + n}") for n in range(1, hosts + 1)]
    gens = [Machine(f"lg{n}", f"fm{tag}-lg{n}", f"fm{tag}g{n}", f"{base}.{200 + n}") for n in range(1, generators + 1)]
    boards = []
    for h, host in enumerate(machines, 1):
        for i in range(1, places_per_host + 1):
            machine = Machine(f"b{h}-{i}", f"fm{tag}-b{h}-{i}", f"fm{tag}b{h}{i}", f"{base}.{100 + 10 * h + i}")
            loadgen = gens[(h - 1) % len(gens)].name if gens else ""
            boards.append(Board(f"{BOARD}-{h}-{i}", host.name, machine, i, loadgen))
    world = Path("/tmp") / f"farm-multihost-{tag}"
    return MultiHostFarm(directory=directory, tag=tag, bridge=f"fmb{tag}", bridge_address=f"{base}.1",
                         coordinator="", hosts=machines, boards=boards, generators=gens, world=str(world))


def start(directory: Path, *, hosts: int = 3, places_per_host: int = 4, generators: int = 2,
          say=lambda text: None) -> MultiHostFarm:
    """Bring the whole farm up; on any failure take down what was started and raise."""
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / STATE_FILE).exists():
        stop(directory)
    farm = plan(directory, hosts=hosts, places_per_host=places_per_host, generators=generators)
    farm.save()
    try:
        _start(farm, say)
    except BaseException:
        stop(directory)
        raise
    return farm


def _start(farm: MultiHostFarm, say) -> None:
    from .processes import free_ports

    d = farm.directory
    python = sys.executable
    netns.add_bridge(farm.bridge, farm.bridge_address)
    farm.save()
    for m in [*farm.hosts, *(b.machine for b in farm.boards), *farm.generators]:
        netns.add_netns(m.netns, m.veth, farm.bridge, m.address)
    for b in farm.boards:  # the board's shell is nobody's: its benchmark servers bind ports < 1024 (echo: 7)
        netns.ip("netns", "exec", b.machine.netns, "sysctl", "-q", "-w", "net.ipv4.ip_unprivileged_port_start=0")
    say(f"network      {farm.bridge} {farm.bridge_address}/24: {len(farm.hosts)} lab hosts, {len(farm.boards)} "
        f"boards, {len(farm.generators)} load generators, each a namespace")
    world = Path(farm.world)
    (world / "bin").mkdir(parents=True, exist_ok=True)
    os.chmod(world, 0o755)
    _board_programs(world / "bin")

    def started(name: str, argv: list[str], machine: Machine | None = None, **kwargs) -> Process:
        proc = spawn(name, netns.in_netns(machine.netns if machine else None, argv), d / "logs" / f"{name}.log",
                     **kwargs)
        farm.processes.append(proc)
        farm.save()
        return proc

    # the coordinator, on this machine's side of the bridge
    port = free_ports(1)[0]
    farm.coordinator = f"{farm.bridge_address}:{port}"
    (d / "coordinator").mkdir(exist_ok=True)
    proc = started("coordinator", [_tool("labgrid-coordinator"), "-l", farm.coordinator], cwd=d / "coordinator")
    _ready(proc, lambda: port_open(port, farm.bridge_address), f"listen on {farm.coordinator}")
    say(f"coordinator  {farm.coordinator}")

    for host in farm.hosts:
        hd = farm.host_dir(host.name)
        (hd / "tftp").mkdir(parents=True, exist_ok=True)
        ssh = sshd.SSHHost(f"fm{farm.tag}-{host.name}", 22, hd / "ssh", address=host.address,
                           client=farm.bridge_address)
        _sshd(farm, ssh, host, started)
        mine = [b for b in farm.boards if b.host == host.name]
        (hd / "pdudaemon.conf").write_text(pdudaemon_config(boards_dir=hd / "boards", port=PDU_PORT, python=python,
                                                            address=host.address))
        proc = started(f"pdudaemon {host.name}", ["/usr/sbin/pdudaemon", "--conf", str(hd / "pdudaemon.conf")], host)
        _ready(proc, lambda: port_open(PDU_PORT, host.address), f"listen on {host.address}:{PDU_PORT}")
        for b in mine:
            bd = farm.board_dir(b)
            bd.mkdir(parents=True, exist_ok=True)
            home = world / "homes" / b.place
            home.mkdir(parents=True, exist_ok=True)
            os.chmod(home, 0o777)
            (bd / "home").unlink(missing_ok=True)
            (bd / "home").symlink_to(home)
            proc = started(f"board {b.place}", [python, "-m", "farm.virtual.standin", "--serial",
                                                f"{host.address}:{b.serial_port}", "--qmp", str(bd / "qmp.sock"),
                                                "--tftp", str(hd / "tftp"), "--board-dir", str(bd), "--netns",
                                                b.machine.netns, "--address", b.machine.address, "--bin",
                                                str(world / "bin")], host)
            _ready(proc, lambda: (bd / "qmp.sock").exists() and port_open(b.serial_port, host.address),
                   "open its serial and power")
        (hd / "exporter.yaml").write_text(_exporter_config(mine, host, hd))
        started(f"exporter {host.name}", [python, "-m", "farm.virtual.supervise", "--",
                                          _tool("labgrid-exporter"), "-c", farm.coordinator, "-n",
                                          f"fm{farm.tag}-{host.name}", "--hostname", ssh.alias,
                                          str(hd / "exporter.yaml")], host)
        say(f"lab host     {host.name} {host.address}: exporter, sshd {ssh.alias}, pdudaemon, "
            f"{len(mine)} boards ({', '.join(b.machine.address for b in mine)})")

    for gen in farm.generators:
        gd = d / "generators" / gen.name
        gd.mkdir(parents=True, exist_ok=True)
        ssh = sshd.SSHHost(gen.address, 22, gd / "ssh", address=gen.address, client=farm.bridge_address,
                           force_command=f"{python} -m farm.virtual.sessionlog {farm.generator_log(gen.name)}")
        _sshd(farm, ssh, gen, started)
        (gd / "exporter.yaml").write_text("## generated by farm.virtual.multihost\n" + yaml.safe_dump({
            gen.name: {f"{RESOURCE_PREFIX}{gen.name}": {"cls": "NetworkService", "address": gen.address,
                                                        "port": 22, "username": "root"}}}))
        started(f"exporter {gen.name}", [python, "-m", "farm.virtual.supervise", "--", _tool("labgrid-exporter"),
                                         "-c", farm.coordinator, "-n", f"fm{farm.tag}-{gen.name}", "--hostname",
                                         gen.address, str(gd / "exporter.yaml")], gen)
        say(f"loadgen      {gen.name} {gen.address}: sshd (sessions logged), exporter")

    with Coordinator(farm.coordinator) as coord:
        _ready(farm.process(f"exporter {farm.hosts[-1].name}"), lambda: farm.exported(coord), "export everything")
        for b in farm.boards:
            coord.add_place(b.place)
            coord.add_match(b.place, f"fm{farm.tag}-{b.host}/{b.place}/*")
            coord.set_tags(b.place, {"board": BOARD, "arch": "aarch64", "lab": "multihost", "host": b.host,
                                     HEALTH_TAG: HEALTHY, **({LOADGENS_TAG: b.loadgen} if b.loadgen else {})})
        for gen in farm.generators:
            coord.add_place(gen.name)
            coord.add_match(gen.name, f"fm{farm.tag}-{gen.name}/{gen.name}/*")
            coord.set_tags(gen.name, {GENERATOR_TAG: gen.name, "lab": "multihost", HEALTH_TAG: HEALTHY})
    say(f"places       {len(farm.boards)} boards (board={BOARD}), {len(farm.generators)} load generators")
    _env_files(farm)
    _image(farm.image)
    farm.save()


def _sshd(farm: MultiHostFarm, ssh: sshd.SSHHost, machine: Machine, started) -> None:
    sshd.prepare(ssh)
    proc = started(f"sshd {machine.name}", ssh.sshd_argv(), machine)
    _ready(proc, lambda: port_open(22, machine.address), f"listen on {machine.address}:22")
    sshd.install_client_config(ssh)
    farm.dropins.append(ssh.alias)
    farm.save()
    sshd.check_login(ssh)


def _exporter_config(boards: list[Board], host: Machine, hd: Path) -> str:
    groups = {b.place: {
        "NetworkSerialPort": {"host": host.address, "port": b.serial_port, "speed": 115200, "protocol": "raw"},
        "PDUDaemonPort": {"host": f"{host.address}:{PDU_PORT}", "pdu": PDU_NAME, "index": b.outlet},
        "TFTPProvider": {"internal": f"{hd / 'tftp'}/", "external": ""},
    } for b in boards}
    return "## generated by farm.virtual.multihost\n" + yaml.safe_dump(groups, sort_keys=False)


def _board_programs(bin_dir: Path) -> None:
    """What a board's image would have and the host may lack: farm_echo and farm_lukem (a sweep's
    responder and its CPU target, built here), busybox applets."""
    from ..bench import echo

    for program in ("farm_echo", "farm_lukem"):
        built = echo.host_program(echo.SOURCE.parent / f"{program}.c", program)
        shutil.copy2(built, bin_dir / program)
        os.chmod(bin_dir / program, 0o755)
    busybox = shutil.which("busybox") or "/bin/busybox"
    for applet in ("usleep", "pidof"):  # what a board's busybox has and a host may lack
        (bin_dir / applet).unlink(missing_ok=True)
        (bin_dir / applet).symlink_to(busybox)


ENV_FILE = """\
# A stand-in board of farm's multi-host virtual farm (farm.virtual.multihost), reached through its
# coordinator as env/maaxboard.yaml reaches a MaaXBoard: the same drivers and U-Boot netboot.
targets:
  {board}:
    resources:
      RemotePlace:
        name: !template "$LG_PLACE"
    drivers:
      SerialDriver:
        txdelay: 0.0
      PDUDaemonDriver:
        delay: 0.5
      FarmUBootDriver:
        prompt: "=> "
        autoboot: "Hit any key to stop autoboot"
        bootstring: "Starting kernel"
        login_timeout: 30
        boot_timeout: 30
      FarmShellDriver:
        prompt: 'root@farm-target:[^ ]*# '
        login_prompt: "login: "
        username: root
        login_timeout: 30
      JobTFTPProviderDriver: {{}}
      UBootNetbootStrategy:
        console_device: ttyAMA0
        bootargs: "quiet"
        kernel_addr: "${{kernel_addr_r}}"
        initrd_addr: "${{ramdisk_addr_r}}"
        fdt_addr: "${{fdtcontroladdr}}"
        tftp_timeout: 30
        ready_timeout: 30
    options:
      arch: arm64
      board: {board}
imports:
  - farm.boot.drivers
"""


def _env_files(farm: MultiHostFarm) -> None:
    (farm.directory / "env").mkdir(exist_ok=True)
    farm.env_file.write_text(ENV_FILE.format(board=BOARD))


def _image(path: Path) -> None:
    """A stand-in image: the files a board loads over TFTP (and does not run), and its manifest."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "Image").write_bytes(b"farm stand-in kernel (a stand-in board loads it and does not run it)\n" * 64)
    (path / "initrd.cpio.gz").write_bytes(gzip.compress(b"farm stand-in initrd\n", mtime=0))
    artifacts = {name: {"sha256": hashlib.sha256((path / name).read_bytes()).hexdigest(),
                        "size": (path / name).stat().st_size} for name in ("Image", "initrd.cpio.gz")}
    key = hashlib.sha256(json.dumps(artifacts, sort_keys=True).encode()).hexdigest()
    (path / "manifest.json").write_text(json.dumps({
        "name": "standin", "arch": "arm64", "kernel": "Image", "initrd": "initrd.cpio.gz",
        "kernel_compression": "none", "initrd_compression": "gzip", "kernel_version": "6.1.0-farm-standin",
        "key": key, "artifacts": artifacts, "dtbs": [], "modules": [], "packages": []}, indent=1) + "\n")


def _tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else name


def _ready(proc: Process, condition, what: str) -> None:
    if not wait_for(lambda: condition() or not is_running(proc), STARTUP_TIMEOUT, 0.1) or not is_running(proc):
        raise InfrastructureError(f"{proc.name} did not {what} within {STARTUP_TIMEOUT:.0f} s:\n{log_tail(proc.log)}")


# --- down --------------------------------------------------------------------------------------------

def stop(directory: Path) -> list[str]:
    """Stop every process :func:`start` started (newest first), remove its SSH drop-ins, namespaces
    and bridge, and the boards' world directory. What happened, a line each."""
    directory = directory.resolve()
    try:
        farm = MultiHostFarm.load(directory)
    except (OSError, ValueError, KeyError):
        return []
    done = []
    for proc in reversed(farm.processes):
        done.append(f"{proc.name}: {stop_process(proc)}")
    for alias in farm.dropins:
        sshd.remove_client_config(alias)
    netns.delete([m.netns for m in (*farm.hosts, *(b.machine for b in farm.boards), *farm.generators)],
                 [farm.bridge])
    shutil.rmtree(farm.world, ignore_errors=True)
    farm.processes, farm.dropins = [], []
    farm.save()
    (directory / STATE_FILE).rename(directory / f"{STATE_FILE}.down")
    return done
