"""A virtual lab on 127.0.0.1: ``up`` starts it, ``status`` looks at it, ``down`` stops what ``up`` started.

Everything lives in one directory (default ``~/.cache/farm/lab``)::

    lab.json            what runs: every process (pid + start time), ports, boards, places
    coordinator/        labgrid-coordinator's working directory (places.yaml)
    exporter.yaml       the exporter's resources, one group per board
    pdudaemon.conf      the PDU: outlet N -> QMP of board N
    ssh/                sshd config, host and client keys (labgrid stages files over SSH)
    tftp/               the lab host's TFTP root (every board's QEMU serves it)
    boards/<N>/         the QMP socket of board N
    logs/               one log per process
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from pathlib import Path

import attrs

from ..coordinator import Coordinator
from ..errors import InfrastructureError, JobError
from ..images.build import default_cache
from ..places import HEALTH_TAG, HEALTHY
from . import sshd
from ..config import json_node, load_json
from ..schema import setting
from ..values import name_problem
from .boards import MODELS, PORT, VirtualBoard, qemu_argv
from .configs import exporter_config, pdudaemon_config
from .power import switch
from .processes import Process, free_ports, is_running, log_tail, port_open, spawn, stop, wait_for

STATE_FILE = "lab.json"
STARTUP_TIMEOUT = 60.0  # seconds for each component to come up, on a busy machine


def default_lab_dir() -> Path:
    return default_cache() / "lab"


@attrs.frozen
class LabFile:
    """lab.json: what ``farm lab up`` started, as it wrote it (:meth:`Lab.save`)."""

    name: str = setting(doc="the exporter's name and the SSH host alias, e.g. farm-vlab-1a2b3c",
                        check=lambda v: name_problem(v, "lab name"))
    coordinator: str = setting(doc="labgrid's coordinator, 127.0.0.1:PORT")
    pdu_port: int = setting(doc="pdudaemon's HTTP port on 127.0.0.1", check=PORT)
    ssh_port: int = setting(doc="the lab host's sshd port on 127.0.0.1", check=PORT)
    boards: list[VirtualBoard] = setting(doc="its boards")
    processes: list[Process] = setting(doc="every process it started, by pid and start time")


@attrs.define
class Lab:
    directory: Path
    name: str                  # exporter name and SSH host alias, e.g. farm-vlab-1a2b3c
    coordinator: str           # 127.0.0.1:PORT
    pdu_port: int
    ssh_port: int
    boards: list[VirtualBoard]
    processes: list[Process] = attrs.field(factory=list)

    @property
    def state_file(self) -> Path:
        return self.directory / STATE_FILE

    @property
    def tftp_root(self) -> Path:
        return self.directory / "tftp"

    def ssh_host(self) -> sshd.SSHHost:
        return sshd.SSHHost(self.name, self.ssh_port, self.directory / "ssh")

    def save(self) -> None:
        from ..results.record import write_text_atomic  # an exclusive temporary: never a planted symlink's

        data = {"name": self.name, "coordinator": self.coordinator, "pdu_port": self.pdu_port,
                "ssh_port": self.ssh_port, "boards": [b.as_dict() for b in self.boards],
                "processes": [p.as_dict() for p in self.processes]}
        write_text_atomic(self.state_file, json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> "Lab":
        """The lab ``directory`` holds, from its state file; one that is not what ``up`` wrote (damaged,
        edited by hand: ``[]``, ``{}``, nested deep) is a JobError naming the file and the field."""
        from ..schema.read import structure

        path = directory / STATE_FILE
        if not path.exists() and not path.is_symlink():
            raise JobError(f"{directory}: no virtual lab here ({STATE_FILE} not found); start one with farm lab up")
        state = structure(json_node(load_json(path, "lab state"), path), LabFile)
        for i, board in enumerate(state.boards):  # what down removes: only the lab's own sockets
            _inside(path, f"boards[{i}].qmp_socket", board.qmp_socket, directory / "boards")
        for i, proc in enumerate(state.processes):  # what status reads
            _inside(path, f"processes[{i}].log", proc.log, directory / "logs")
        return cls(directory=directory, **attrs.asdict(state, recurse=False))

    def running(self) -> list[Process]:
        return [p for p in self.processes if is_running(p)]


def _inside(state_file: Path, field: str, value: str, folder: Path) -> None:
    """A JobError ``state_file: field: ...`` unless ``value`` is a path inside ``folder`` (no ``..``, no symlink
    on the way out of it): lab.json is data, and a path of it is only ever one of the lab's own."""
    path = Path(value)
    real = Path(os.path.realpath(path.parent)) / path.name if path.is_absolute() else None
    if real is None or ".." in path.parts or not real.is_relative_to(os.path.realpath(folder)):
        raise JobError(f"{state_file}: {field}: {value!r} is not in {folder} (lab.json names only the lab's own "
                       "files: edited by hand? farm lab down stops nothing it cannot tell is the lab's)")


# --- up ------------------------------------------------------------------------------------------

REQUIRED = {  # program -> Debian package (scripts/setup.sh installs them)
    "qemu-system-aarch64": "qemu-system-arm", "/usr/sbin/pdudaemon": "pdudaemon", sshd.SSHD: "openssh-server",
    "ssh": "openssh-client", "ssh-keygen": "openssh-client", "rsync": "rsync",
}


def check_prerequisites() -> None:
    missing = sorted({pkg for prog, pkg in REQUIRED.items() if not shutil.which(prog)})
    for tool in ("labgrid-coordinator", "labgrid-exporter"):
        if not _venv_tool(tool):
            missing.append(f"{tool} (labgrid, in the virtualenv)")
    if missing:
        raise InfrastructureError(f"the virtual lab needs {', '.join(missing)}: run scripts/setup.sh")


def _venv_tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def plan_lab(directory: Path, counts: dict[str, int], cpus: int | None = None) -> Lab:
    """Names, ports and sockets for a lab with ``counts`` boards per model (nothing started yet); ``cpus``:
    every twin's vCPUs instead of its model's."""
    total = sum(counts.values())
    forwards_each = {model: len(MODELS[model].forwarded_ports) for model in counts}
    ports = free_ports(3 + total + sum(forwards_each[m] * n for m, n in counts.items()))
    coordinator_port, pdu_port, ssh_port, rest = ports[0], ports[1], ports[2], ports[3:]
    boards, outlet = [], 0
    for model, count in counts.items():
        for i in range(1, count + 1):
            outlet += 1
            serial = rest.pop(0)
            forwards = {target_port: rest.pop(0) for target_port in MODELS[model].forwarded_ports}
            qmp = directory / "boards" / str(outlet) / "qmp.sock"
            if len(str(qmp)) > 100:
                raise JobError(f"--dir {directory}: too long for a unix socket path ({qmp}); use a shorter one")
            boards.append(VirtualBoard(place=f"{model}-{i}", model=model, outlet=outlet, serial_port=serial,
                                       qmp_socket=str(qmp), forwards=forwards, cpus=cpus or MODELS[model].cpus))
    return Lab(directory=directory, name=f"farm-vlab-{secrets.token_hex(3)}",
               coordinator=f"127.0.0.1:{coordinator_port}", pdu_port=pdu_port, ssh_port=ssh_port, boards=boards)


def up(directory: Path, counts: dict[str, int], *, cpus: int | None = None, say=lambda text: None) -> Lab:
    """Start a whole virtual lab in ``directory``; on any failure, stop what was started and raise."""
    directory = directory.resolve()
    check_prerequisites()
    if (directory / STATE_FILE).exists():
        old = Lab.load(directory)
        if old.running():
            raise JobError(f"a virtual lab is already up in {directory} (coordinator {old.coordinator}); "
                           f"farm lab down --dir {directory} first")
        _forget(old)
    lab = plan_lab(directory, counts, cpus)
    for stale in ("coordinator", "tftp", "boards"):  # a new lab: no places or staged files of an old one
        shutil.rmtree(directory / stale, ignore_errors=True)
    for sub in ("coordinator", "logs", "tftp", *(f"boards/{b.outlet}" for b in lab.boards)):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    try:
        _start(lab, say)
    except BaseException:
        down(directory, say=lambda text: None)
        raise
    return lab


def _start(lab: Lab, say) -> None:
    d, logs = lab.directory, lab.directory / "logs"
    lab.save()

    def started(proc: Process) -> Process:
        lab.processes.append(proc)
        lab.save()  # at every step: down must find whatever is already running
        return proc

    def ready(proc: Process, condition, what: str) -> None:
        if not wait_for(lambda: condition() or not is_running(proc), STARTUP_TIMEOUT, 0.1) or not is_running(proc):
            raise InfrastructureError(f"{proc.name} did not {what} within {STARTUP_TIMEOUT:.0f} s; last lines of "
                                      f"{proc.log}:\n{log_tail(proc.log)}")

    # the lab host's SSH server, through which labgrid stages kernels and initrds
    host = lab.ssh_host()
    sshd.prepare(host)
    proc = started(spawn("sshd", host.sshd_argv(), logs / "sshd.log"))
    ready(proc, lambda: port_open(lab.ssh_port), f"listen on port {lab.ssh_port}")
    sshd.install_client_config(host)
    sshd.check_login(host)
    say(f"sshd          {host.alias} -> 127.0.0.1:{lab.ssh_port}")

    coordinator_port = int(lab.coordinator.rsplit(":", 1)[1])
    proc = started(spawn("coordinator", [_venv_tool("labgrid-coordinator"), "-l", lab.coordinator],
                         logs / "coordinator.log", cwd=d / "coordinator"))
    ready(proc, lambda: port_open(coordinator_port), f"listen on {lab.coordinator}")
    say(f"coordinator   {lab.coordinator}")

    (d / "pdudaemon.conf").write_text(pdudaemon_config(boards_dir=d / "boards", port=lab.pdu_port,
                                                       python=sys.executable))
    proc = started(spawn("pdudaemon", ["/usr/sbin/pdudaemon", "--conf", str(d / "pdudaemon.conf")],
                         logs / "pdudaemon.log"))
    ready(proc, lambda: port_open(lab.pdu_port), f"listen on port {lab.pdu_port}")
    say(f"pdudaemon     127.0.0.1:{lab.pdu_port} (PDU farm-vpdu, outlets 1..{len(lab.boards)})")

    accel = os.environ.get("LG_QEMU_ACCEL") or "tcg"
    for board in lab.boards:
        proc = started(spawn(f"qemu {board.place}", qemu_argv(board, lab.tftp_root, accel),
                             logs / f"qemu-{board.place}.log"))
        ready(proc, lambda: Path(board.qmp_socket).exists() and port_open(board.serial_port),
              "open its QMP and serial sockets")
        switch(board.qmp_socket, "off")  # a defined state: powered off, firmware reset
        say(f"board         {board.place}: serial 127.0.0.1:{board.serial_port}, outlet {board.outlet}, "
            + ", ".join(f"port {t} at 127.0.0.1:{h}" for t, h in board.forwards.items()))

    (d / "exporter.yaml").write_text(exporter_config(lab.boards, pdu_port=lab.pdu_port, tftp_root=lab.tftp_root))
    # under a supervisor that starts it again when it fails (it exits when it loses the coordinator),
    # as labgrid's systemd unit does on a lab host (see farm.virtual.supervise)
    proc = started(spawn("exporter", [sys.executable, "-m", "farm.virtual.supervise", "--",
                                      _venv_tool("labgrid-exporter"), "-c", lab.coordinator, "-n", lab.name,
                                      "--hostname", lab.name, str(d / "exporter.yaml")], logs / "exporter.log"))
    with Coordinator(lab.coordinator) as coord:
        groups = {b.place for b in lab.boards}

        def exported() -> bool:
            coord.sync()
            have = coord.resources().get(lab.name, {})
            return groups <= set(have) and all(e.avail for g in groups for e in have[g].values() if "cls" in e.data)

        ready(proc, exported, "export every board")
        say(f"exporter      {lab.name}: {len(groups)} board(s)")
        for board in lab.boards:
            create_place(coord, lab, board)
            say(f"place         {board.place}: " + " ".join(f"{k}={v}" for k, v in board.tags.items()))


def create_place(coord: Coordinator, lab: Lab, board: VirtualBoard) -> None:
    """The place of a board: matched to its exporter group, tagged by model, commented for humans."""
    if board.place not in coord.places():
        coord.add_place(board.place)
    coord.add_match(board.place, f"{lab.name}/{board.place}/*")
    coord.set_tags(board.place, {**board.tags, HEALTH_TAG: HEALTHY})  # reservations ask for it
    coord.set_comment(board.place, f"virtual {board.model} (QEMU twin, {board.cpus} vCPU), lab {lab.directory}")


# --- status and down -----------------------------------------------------------------------------

@attrs.frozen
class ComponentStatus:
    name: str
    pid: int
    running: bool
    log: str


def status(directory: Path) -> tuple[Lab, list[ComponentStatus]]:
    lab = Lab.load(directory.resolve())
    return lab, [ComponentStatus(p.name, p.pid, is_running(p), p.log) for p in lab.processes]


def down(directory: Path, *, say=lambda text: None) -> Lab:
    """Stop every process this lab started (newest first) and nothing else; remove the SSH host alias."""
    lab = Lab.load(directory.resolve())
    for proc in reversed(lab.processes):
        outcome = stop(proc)
        say(f"{proc.name:<22} {outcome}")
    _forget(lab)
    return lab


def _forget(lab: Lab) -> None:
    sshd.remove_client_config(lab.name)
    for board in lab.boards:  # a socket QEMU left; never another kind of file a hand put at its name
        sock = Path(board.qmp_socket)
        if sock.is_socket() and not sock.is_symlink():
            sock.unlink(missing_ok=True)
    lab.processes = []
    lab.save()
