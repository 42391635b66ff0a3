"""A stand-in board: a place of a virtual farm without a QEMU twin, for tests about the farm, not the boot.

    python -m farm.virtual.standin --serial ADDR:PORT --qmp SOCKET --tftp ROOT --board-dir DIR
                                   [--netns NS] [--address IP] [--bin DIR]

A QEMU twin costs a core while it boots; a farm of a dozen places and twenty jobs would measure the
host, not the farm. This board costs nothing while idle and goes through the same parts a job uses:

- its **serial console** is a TCP server (what ser2net gives the exporter), one client at a time:
  another connection while one is open is refused (``Port already in use``, ser2net's default);
  bytes sent while no one is connected are lost, as a UART's;
- its **power** is a QMP socket like the twin's (``cont``, ``stop``, ``system_reset``,
  ``query-status``), so the lab's pdudaemon switches it through :mod:`farm.virtual.power` unchanged;
- at power-on it prints a **U-Boot** banner and counts down its autoboot, then answers U-Boot's
  command line as farm's netboot types it (every typed character echoed, Ctrl-U erases the line,
  ``echo``, ``setenv`` with ``${var}`` and ``$?``, ``test -n``, ``dhcp``): ``tftpboot ADDR PATH``
  *reads the staged file from the lab host's TFTP root* (a file that is not there is U-Boot's
  ``TFTP error: 'File not found'``), so a job that staged into the wrong host's root or folder
  fails as on the bench; ``booti`` prints ``Starting kernel``, a kernel's first lines and farm's
  ``FARM-READY``, then the console is **a real busybox shell** in the board's own network namespace
  (``--netns``: the board's address, its own ports) and PID namespace (its own processes, all gone
  at power-off), run as ``nobody`` (a job's commands cannot touch the host), with ``--bin`` first
  on its PATH (host builds of the benchmarks' programs);
- ``DIR/fault`` holding ``never-boots`` is a board whose power comes on and nothing more (a dead
  board, a serial adapter that lost its wires): it prints nothing until the file is gone;
- every power switch, connection, TFTP load and boot is a line of ``DIR/events.jsonl`` (``t``:
  CLOCK_MONOTONIC, shared by every process of the machine), with the job a boot is of (the staged
  path is ``<user>/<job>/<file>``): what the board saw, to check against what the farm says.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

PROMPT = b"=> "
SHELL_PROMPT = "root@farm-target:~# "
KERNEL = "6.1.0-farm-standin"
AUTOBOOT_SECONDS = 3
FAULT_NEVER_BOOTS = "never-boots"
_WORD = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|[^\s;'"]+|;""")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\?")


# --- U-Boot's command line, as far as farm types it (pure) --------------------------------------------

def split_commands(line: str) -> list[str]:
    """``line`` split at ``;`` outside quotes, as U-Boot's hush runs it: one command at a time."""
    commands, start, pos = [], 0, 0
    while pos < len(line):
        m = _WORD.match(line, pos)
        if m is None:
            pos += 1
            continue
        if m.group(0) == ";":
            commands.append(line[start:pos])
            start = m.end()
        pos = m.end()
    commands.append(line[start:])
    return [c for c in commands if c.strip()]


def command_words(command: str, env: dict[str, str], status: int) -> list[str]:
    """One command's words: concatenated pieces, ``'…'`` literal, ``"…"`` and bare words with
    ``${var}`` and ``$?`` (the status of the command before) expanded; an empty expansion is no word."""
    def expand(text: str) -> str:
        return _VAR.sub(lambda m: str(status) if m.group(0) == "$?" else env.get(m.group(1), ""), text)

    words: list[str] = []
    word: str | None = None
    quoted = False
    pos = 0
    while pos <= len(command):
        if pos == len(command) or command[pos].isspace():
            if word is not None and (word or quoted):
                words.append(word)
            word, quoted = None, False
            pos += 1
            continue
        m = _WORD.match(command, pos)
        piece, pos = (m.group(0), m.end()) if m else (command[pos:], len(command))
        if piece.startswith("'"):
            text, quoted = piece[1:-1], True
        elif piece.startswith('"'):
            text, quoted = expand(piece[1:-1].replace('\\"', '"')), True
        else:
            text = expand(piece)
        word = (word or "") + text
    return words


#: the environment of QEMU's U-Boot for the virt machine, as farm's netboot uses it
DEFAULT_ENV = {"kernel_addr_r": "0x40400000", "ramdisk_addr_r": "0x44000000", "fdt_addr": "0x40000000",
               "fdtcontroladdr": "7edb0b40", "bootdelay": str(AUTOBOOT_SECONDS)}


def staged_job(path: str) -> str | None:
    """The job a staged path is of: ``<user>/<job>/<file>`` (farm.boot.staging)."""
    parts = path.split("/")
    return parts[1] if len(parts) == 3 else None


# --- the board ----------------------------------------------------------------------------------------

class Board:
    """The board's state (off, U-Boot, Linux) and its console; every method under one lock."""

    def __init__(self, *, tftp_root: Path, board_dir: Path, netns: str | None, address: str, bin_dir: Path | None,
                 cpus: int = 4) -> None:
        self.tftp_root, self.board_dir, self.netns, self.address = tftp_root, board_dir, netns, address
        self.bin_dir, self.cpus = bin_dir, cpus
        self.lock = threading.RLock()
        self.state = "off"
        self.client: socket.socket | None = None
        self.connections = 0
        self.line = bytearray()
        self.env: dict[str, str] = {}
        self.status = 0
        self.jobs: list[str] = []       # the jobs whose files this power-on loaded
        self.generation = 0             # bumped by every power switch: timers of an old one do nothing
        self.shell_pid: int | None = None
        self.shell_fd: int | None = None
        self.events = open(board_dir / "events.jsonl", "a", buffering=1)

    # the console
    def emit(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode()
        with self.lock:
            if self.client is not None:
                try:
                    self.client.sendall(data)
                except OSError:
                    pass

    def event(self, kind: str, **fields) -> None:
        self.events.write(json.dumps({"t": time.monotonic(), "event": kind, **fields}) + "\n")

    def attach(self, conn: socket.socket) -> int | None:
        """The console's client now, or None (refused: another one is connected, as ser2net refuses)."""
        with self.lock:
            self.connections += 1
            number = self.connections
            if self.client is not None:
                self.event("refused", conn=number)
                return None
            self.client = conn
        self.event("connect", conn=number)
        return number

    def detach(self, conn: socket.socket, number: int) -> None:
        with self.lock:
            if self.client is conn:
                self.client = None
        self.event("disconnect", conn=number)

    # power
    def faulty(self) -> str | None:
        try:
            return (self.board_dir / "fault").read_text().strip() or None
        except OSError:
            return None

    def power_on(self) -> None:
        with self.lock:
            if self.state != "off":
                return
            self.generation += 1
            generation = self.generation
            fault = self.faulty()
            self.event("power-on", fault=fault)
            self.jobs, self.env, self.status, self.line = [], dict(DEFAULT_ENV), 0, bytearray()
            if fault == FAULT_NEVER_BOOTS:
                self.state = "dead"
                return
            self.state = "autoboot"
            self.emit(f"\r\n\r\nU-Boot 2023.01 (farm stand-in board)\r\n\r\nDRAM:  1 GiB\r\nCore:  {self.cpus} "
                      "CPUs\r\nNet:   eth0: standin\r\nHit any key to stop autoboot:  3 ")
        threading.Thread(target=self._countdown, args=(generation,), daemon=True).start()

    def _countdown(self, generation: int) -> None:
        for left in range(AUTOBOOT_SECONDS - 1, -1, -1):
            time.sleep(1)
            with self.lock:
                if self.generation != generation or self.state != "autoboot":
                    return
                self.emit(f"\x08\x08\x08 {left} ")
        with self.lock:  # no key: the bootcmd has nothing to boot from; the prompt
            if self.generation == generation and self.state == "autoboot":
                self.state = "uboot"
                self.emit("\r\nBOOTP broadcast 1\r\n*** Unhandled DHCP Option in OFFER/ACK: 43\r\n" + PROMPT.decode())

    def power_off(self) -> None:
        with self.lock:
            if self.state == "off":
                return
            self.generation += 1
            self.event("power-off", jobs=list(self.jobs))
            self.state = "off"
            self._kill_shell()

    def running(self) -> bool:
        return self.state != "off"

    # the console's input
    def feed(self, data: bytes) -> None:
        with self.lock:
            if self.state == "autoboot":
                self.state = "uboot"
                self.emit(b"\r\n" + PROMPT)
                data = data[1:]  # the key that stopped autoboot
            if self.state == "linux" and self.shell_fd is not None:
                try:
                    os.write(self.shell_fd, data)
                except OSError:
                    pass
                return
            if self.state != "uboot":
                return  # off, dead, or booting: the input is lost
            for byte in data:
                self._key(byte)
                if self.state != "uboot":
                    return

    def _key(self, byte: int) -> None:
        if byte in (0x0D, 0x0A):
            if byte == 0x0A and self._last_was_cr:
                self._last_was_cr = False
                return
            self._last_was_cr = byte == 0x0D
            line, self.line = self.line.decode(errors="replace"), bytearray()
            self.emit(b"\r\n")
            self._run_line(line)
            return
        self._last_was_cr = False
        if byte == 0x15:  # Ctrl-U: erase the line
            self.emit(b"\x08 \x08" * len(self.line))
            self.line.clear()
        elif byte in (0x08, 0x7F):
            if self.line:
                self.line.pop()
                self.emit(b"\x08 \x08")
        elif 0x20 <= byte < 0x7F:
            self.line.append(byte)
            self.emit(bytes([byte]))

    _last_was_cr = False

    def _run_line(self, line: str) -> None:
        for command in split_commands(line):
            words = command_words(command, self.env, self.status)
            if not words:
                continue
            if words[0] == "booti":
                self._booti(words)
                return
            output, self.status = self._command(words)
            if output:
                self.emit(output.replace("\n", "\r\n") + "\r\n")
        self.emit(PROMPT)

    def _command(self, words: list[str]) -> tuple[str, int]:
        name, args = words[0], words[1:]
        if name == "echo":
            return " ".join(args), 0
        if name == "setenv":
            if not args:
                return "Usage: setenv name [value]", 1
            if len(args) == 1:
                self.env.pop(args[0], None)
            else:
                self.env[args[0]] = " ".join(args[1:])
            return "", 0
        if name == "test":
            if len(args) == 2 and args[0] in ("-n", "-z"):
                return "", 0 if bool(args[1]) == (args[0] == "-n") else 1
            return "", 1
        if name == "version":
            return "U-Boot 2023.01 (farm stand-in board)", 0
        if name in ("dhcp", "bootp"):
            self.env.update(ipaddr=self.address, netmask="255.255.255.0", gatewayip="0.0.0.0",
                            ethaddr="52:54:00:12:34:56", serverip=self.address.rsplit(".", 1)[0] + ".1")
            return f"BOOTP broadcast 1\nDHCP client bound to address {self.address} (2 ms)", 0
        if name in ("tftpboot", "tftp"):
            return self._tftp(args)
        return f"Unknown command '{name}' - try 'help'", 1

    def _tftp(self, args: list[str]) -> tuple[str, int]:
        if len(args) != 2 or not args[0]:
            return "Usage: tftpboot [loadAddress] [[hostIPaddr:]bootfilename]", 1
        address, name = args
        path = self.tftp_root / name
        inside = not name.startswith("/") and ".." not in name.split("/")  # tftpd's rule; links are followed
        head = (f"Using eth0 device\nTFTP from server {self.env.get('serverip', '0.0.0.0')}; our IP address is "
                f"{self.env.get('ipaddr', '0.0.0.0')}\nFilename '{name}'.\nLoad address: {address}\nLoading: ")
        job = staged_job(name)
        if not inside or not path.is_file():
            self.event("tftp", path=name, job=job, found=False)
            return head + "*\nTFTP error: 'File not found' (1)\nNot retrying...", 1
        size = path.stat().st_size
        self.event("tftp", path=name, job=job, found=True, size=size)
        if job and job not in self.jobs:
            self.jobs.append(job)
        self.env["filesize"] = f"{size:x}"
        return head + f"#\n\t done\nBytes transferred = {size} ({size:x} hex)", 0

    def _booti(self, words: list[str]) -> None:
        self.event("booti", jobs=list(self.jobs), bootargs=self.env.get("bootargs", ""))
        self.state = "booting"
        generation = self.generation
        self.emit("## Flattened Device Tree blob at 40000000\r\n   Booting using the fdt blob at 0x40000000\r\n"
                  "Starting kernel ...\r\n\r\n")
        threading.Thread(target=self._linux, args=(generation,), daemon=True).start()

    def _linux(self, generation: int) -> None:
        time.sleep(0.2)
        with self.lock:
            if self.generation != generation:
                return
            self.emit(f"[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x410fd034]\r\n"
                      f"[    0.000000] Linux version {KERNEL} (farm stand-in board) #1 SMP PREEMPT\r\n"
                      f"[    0.000000] Kernel command line: {self.env.get('bootargs', '')}\r\n"
                      f"farm-init: eth0 {self.address}/24 (lease from the bootloader)\r\n"
                      f"FARM-READY kernel={KERNEL} cpus={self.cpus} uptime=0.42s\r\n")
            self.event("ready", jobs=list(self.jobs))
            self._start_shell()
            self.state = "linux"

    # Linux's shell
    def _shell_argv(self) -> list[str]:
        home = self.board_dir / "home"
        home.mkdir(exist_ok=True)
        os.chmod(home, 0o777)
        path = ":".join([*([str(self.bin_dir)] if self.bin_dir else []), "/usr/local/bin", "/usr/bin", "/bin",
                         "/usr/sbin", "/sbin"])
        # a machine of its own: its own processes (pidof, kill and a daemon it starts see no other
        # board's; all of them die with its shell at power-off) and, with --netns, its own network
        argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                "env", "-i", f"PATH={path}", f"HOME={home}", f"PS1={SHELL_PROMPT}", "TERM=vt100",
                "busybox", "sh"]
        return (["ip", "netns", "exec", self.netns] if self.netns else []) + argv

    def _start_shell(self) -> None:
        argv = self._shell_argv()
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal
            try:
                os.chdir(self.board_dir / "home")
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        self.shell_pid, self.shell_fd = pid, fd
        threading.Thread(target=self._pump_shell, args=(self.generation, fd, pid), daemon=True).start()

    def _pump_shell(self, generation: int, fd: int, pid: int) -> None:
        while True:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                break
            with self.lock:
                if self.generation != generation:
                    break
                self.emit(data)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        with self.lock:
            if self.generation == generation and self.state == "linux":  # the shell ended: the board halts
                self.emit("\r\nreboot: System halted\r\n")
                self.state = "halted"
                self._close_shell()

    def _kill_shell(self) -> None:
        """Power off: every process of the board dies. With ``--netns`` that is every process in the
        board's network namespace (its shell drops its privileges, which clears the parent-death
        signal ``unshare --kill-child`` relies on, so the shell and a daemon it started would outlive
        their ``unshare``); else the shell's process group."""
        pids = []
        if self.netns:
            found = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True)
            pids = [int(p) for p in found.stdout.split() if p.isdigit()]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.shell_pid is not None:
            try:
                os.killpg(self.shell_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.waitpid(self.shell_pid, os.WNOHANG)
            except ChildProcessError:
                pass
        self._close_shell()

    def _close_shell(self) -> None:
        if self.shell_fd is not None:
            try:
                os.close(self.shell_fd)
            except OSError:
                pass
        self.shell_fd, self.shell_pid = None, None


# --- the servers --------------------------------------------------------------------------------------

def serve_console(board: Board, server: socket.socket) -> None:
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # a client that vanished (its job killed while the host's network was cut) frees the port
        # within ~25 s instead of holding it forever
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, option):
                conn.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
        number = board.attach(conn)
        if number is None:
            try:
                conn.sendall(b"Port already in use\r\n")
            except OSError:
                pass
            conn.close()
            continue
        threading.Thread(target=_read_console, args=(board, conn, number), daemon=True).start()


def _read_console(board: Board, conn: socket.socket, number: int) -> None:
    try:
        while True:
            data = conn.recv(4096)
            if not data:
                break
            board.feed(data)
    except OSError:
        pass
    finally:
        board.detach(conn, number)
        conn.close()


def serve_qmp(board: Board, server: socket.socket) -> None:
    """The power switch: QEMU's QMP, as much of it as farm.virtual.power speaks."""
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_qmp_session, args=(board, conn), daemon=True).start()


def _qmp_session(board: Board, conn: socket.socket) -> None:
    with conn, conn.makefile("rw", encoding="utf-8") as stream:
        stream.write(json.dumps({"QMP": {"version": {"qemu": {"major": 0, "minor": 0, "micro": 0},
                                                     "package": "farm stand-in"}, "capabilities": []}}) + "\n")
        stream.flush()
        for line in stream:
            try:
                command = json.loads(line).get("execute")
            except ValueError:
                break
            if command == "cont":
                board.power_on()
            elif command in ("stop", "system_reset", "quit"):
                board.power_off()
            reply: object = {}
            if command == "query-status":
                reply = {"running": board.running(), "status": "running" if board.running() else "paused"}
            stream.write(json.dumps({"return": reply}) + "\n")
            stream.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m farm.virtual.standin", description=__doc__.split("\n\n")[0])
    parser.add_argument("--serial", required=True, metavar="ADDR:PORT")
    parser.add_argument("--qmp", required=True, type=Path)
    parser.add_argument("--tftp", required=True, type=Path)
    parser.add_argument("--board-dir", required=True, type=Path)
    parser.add_argument("--netns", help="the board's own network namespace (its shell runs there)")
    parser.add_argument("--address", default="127.0.0.1", help="the board's address (what dhcp leases)")
    parser.add_argument("--bin", type=Path, help="a directory first on the shell's PATH")
    parser.add_argument("--cpus", type=int, default=4)
    args = parser.parse_args(argv)
    host, _, port = args.serial.rpartition(":")
    args.board_dir.mkdir(parents=True, exist_ok=True)
    board = Board(tftp_root=args.tftp, board_dir=args.board_dir, netns=args.netns, address=args.address,
                  bin_dir=args.bin, cpus=args.cpus)
    signal.signal(signal.SIGTERM, lambda *_: (board.power_off(), os._exit(0)))
    console = socket.create_server((host, int(port)))
    args.qmp.unlink(missing_ok=True)
    power = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    power.bind(str(args.qmp))
    power.listen()
    threading.Thread(target=serve_qmp, args=(board, power), daemon=True).start()
    print(f"farm stand-in board: serial {args.serial}, power {args.qmp}", flush=True)
    serve_console(board, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
