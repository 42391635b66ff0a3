"""The boot stage as one call: load an env file, stage an image on TFTP, boot the target to its shell.

    with boot_target(env_file, image, job="20261129-1") as booted:
        booted.shell.run_check("uname -a")

Whatever happens, leaving the block powers the board off and removes the job's TFTP folder, and the
serial console has been logged to ``console/<target>.log`` from the first byte.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator

import attrs
import pexpect
from labgrid import Environment, Target
from labgrid.driver import QEMUDriver
from labgrid.driver.exception import ExecutionError
from labgrid.exceptions import NoConfigFoundError, InvalidConfigError
from labgrid.strategy.common import StrategyError

from .. import lglazy
from ..errors import FarmError, InfrastructureError, JobError
from ..images.image import Image
from ..lgcompat import drop_console_input
from .console_log import ConsoleLog
from .envfile import EnvFile
from .facts import TargetFacts, read_facts
from .lgenv import apply_lg_defaults  # noqa: F401  (farm.boot.session.apply_lg_defaults, as before)
from .staging import current_user, job_folder
from .target import CpuReader, Responder, Shell

#: how long a farm place's resources may be missing while its target is made (the exporter restarting)
REMOTE_PLACE_PATIENCE = 30.0


def open_target(env: EnvFile) -> tuple[Environment, Target]:
    """labgrid's Environment and the env file's target. A ``RemotePlace`` whose resources the
    coordinator does not have now (the place's exporter restarted just after the job locked it:
    labgrid's "orphaned resource") is the lab's failure, not the env file's: it is waited for up to
    :data:`REMOTE_PLACE_PATIENCE` seconds, then an InfrastructureError (exit 3)."""
    apply_lg_defaults()
    lglazy.load_for_env(env.path)  # the labgrid classes it names, when farm's command loads labgrid lazily
    deadline = time.monotonic() + REMOTE_PLACE_PATIENCE
    while True:
        try:
            environment = Environment(str(env.path))
            target = environment.get_target(env.target_name)
            break
        except (NoConfigFoundError, InvalidConfigError) as exc:
            raise JobError(f"{env.path}: {exc}") from None
        except FarmError:
            raise
        except Exception as exc:  # labgrid reports bad driver/resource arguments as plain exceptions
            if not _remote_place_failure(exc, env):
                raise JobError(f"{env.path}: target '{env.target_name}': {type(exc).__name__}: {exc}") from None
            if time.monotonic() >= deadline:
                raise InfrastructureError(f"{env.path}: target '{env.target_name}': the farm place's resources are "
                                          f"not there ({exc}) after {REMOTE_PLACE_PATIENCE:g} s") from None
            from ..place_target import refresh_remote_places

            time.sleep(1.0)
            refresh_remote_places()
    if target is None:
        raise JobError(f"{env.path}: no target '{env.target_name}'")
    return environment, target


def _remote_place_failure(exc: BaseException, env: EnvFile) -> bool:
    """A RemotePlace that cannot be resolved for a reason of the lab: an exporter that disconnected
    (labgrid's ServerError "orphaned resource"), a coordinator that refused the connection, or a
    place that lacks a resource the env file's drivers bind (its exporter was away when it was
    locked: the place's resources are the coordinator's, not the env file's)."""
    if isinstance(exc, ConnectionRefusedError):
        return True
    try:
        from labgrid.binding import BindingError
        from labgrid.exceptions import NoSupplierFoundError
        from labgrid.remote.client import ServerError
    except ImportError:
        return False
    if isinstance(exc, ServerError):
        return "orphaned resource" in str(exc)
    if isinstance(exc, (NoSupplierFoundError, BindingError)):
        return env.remote_place
    return False


@attrs.define(kw_only=True)
class Boot:
    """A booted target, as every flow's is (farm.boot.target.BootedTarget): which target, how the boot went,
    and what run.json records of it. A flow's target extends it (:class:`LinuxTarget`, farm.boot.system's
    SystemTarget) with what its benchmarks use."""

    name: str
    arch: str
    target: Target | None  # labgrid's (None: a test's target that is not there)
    console: ConsoleLog | None
    boot_seconds: float  # of the attempt that booted
    failed_attempts: list[str] = attrs.field(factory=list)  # infrastructure failures retried before it
    total_seconds: float = 0.0  # staging and every attempt
    retyped: list[str] = attrs.field(factory=list)  # bootloader commands whose echo differed, typed again
    #: what was booted beyond the image (a guest: QEMU's command line, accel, pinning, both kernels)
    topology: dict = attrs.field(factory=dict)
    #: the device tree booted: the image's DTB ({name, sha256}), "u-boot" (U-Boot's own), None (iPXE: none)
    dtb: dict | str | None = None
    #: the target is a QEMU twin: its clocks and cycle counters are QEMU's, not a board's
    emulated: bool = False
    #: what the flow adds to the boot's record (e.g. a guest's ``guest_seconds``: host ready -> guest ready)
    recorded: dict = attrs.field(factory=dict)

    def record(self) -> dict:
        """The boot as run.json records it (besides the run's own fields and the target's facts)."""
        return {"boot_seconds": round(self.boot_seconds, 3), "failed_attempts": list(self.failed_attempts),
                "retyped": list(self.retyped), "emulated": self.emulated,
                **({"topology": self.topology} if self.topology else {}),
                **({"dtb": self.dtb} if self.dtb else {}), **self.recorded}


@attrs.define(kw_only=True)
class LinuxTarget(Boot):
    """A booted Linux (the netboot, guest and DPDK flows'): its shell (a farm.boot.target.ShellTarget) and
    its network (a ServedTarget)."""

    shell: Shell
    #: where the lab host reaches the benchmarks' ports when it is not the shell's own address (a guest's
    #: ports are forwarded from its host)
    reach_address: str | None = None
    #: which CPU the shell's /proc/stat is: the board's cores ("board"), or a guest's vCPUs ("vcpus")
    cpu_scope: str = "board"
    #: CPUs read through a channel of their own, not the shell: scope -> a reader of their per-core times,
    #: called with ``reach(address, port) -> (host, port)`` (how the lab host reaches a port of the target's
    #: network): a guest's board (its host's CPU server) and its vCPUs (the guest's), farm.guest.channel
    cpu_channels: dict[str, CpuReader] = attrs.field(factory=dict)
    #: the echo responder the flow started (a DPDK echo), None: a sweep starts farm's own
    responder: Responder | None = None

    def run(self, command: str, timeout: float = 60) -> list[str]:
        """Run a shell command on the target; a non-zero exit raises labgrid's ExecutionError."""
        return self.shell.run_check(command, timeout=timeout)

    def read_facts(self) -> TargetFacts:
        """What the target says of itself (farm.boot.facts), its address the one the lab host reaches."""
        facts = read_facts(self.shell)
        return attrs.evolve(facts, address=self.reach_address) if self.reach_address else facts


def root_cause(exc: BaseException) -> BaseException:
    """labgrid wraps a failure once per nested strategy transition (StrategyError ... from ...)."""
    while isinstance(exc, StrategyError) and exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def describe_boot_failure(exc: BaseException) -> str:
    root = root_cause(exc)
    if isinstance(root, FarmError):
        return str(root)
    if isinstance(root, pexpect.TIMEOUT):
        first = str(root).splitlines()[0] if str(root) else "timeout"
        return f"timed out waiting on the console ({first})"
    if isinstance(root, ExecutionError):
        return f"command failed on the target: {root.msg}"
    return f"{type(root).__name__}: {root}"


def withdrawn_resources(target: Target) -> list[str]:
    """The resources of ``target`` (an env file's ``RemotePlace``) that are no longer exported: the
    coordinator withdrew them when their exporter went away (stopped, or its lab host cut off).

    labgrid keeps such a resource with empty data and fails on it with ``KeyError: 'params'``
    (``RemotePlaceManager.poll``); this says what happened instead."""
    return [f"{type(r).__name__} {r.name}" if getattr(r, "name", None) else type(r).__name__
            for r in target.resources
            if (entry := getattr(r, "_remote_entry", None)) is not None and "cls" not in entry.data]


def _boot_once(target, strategy, console: ConsoleLog, state: str = "shell"):
    """One power-on to ``state`` (``shell``, or ``system``: a system image, no shell: None); every failure
    comes out as a FarmError of its class, with the console tail."""
    try:
        strategy.transition(state)
        return target.get_driver("ShellDriver") if state == "shell" else None
    except FarmError:
        raise
    except Exception as exc:
        cause = root_cause(exc)
        if isinstance(cause, FarmError):  # raised inside the strategy: keep its class (job, test, lab)
            raise type(cause)(f"{target.name}: {cause}") from None
        tail = console.tail(target.name)
        withdrawn = withdrawn_resources(target)
        why = (f"the exporter of its place went away ({', '.join(withdrawn)} no longer exported: the exporter "
               "stopped, or its lab host is cut off)" if withdrawn else describe_boot_failure(exc))
        raise InfrastructureError(
            f"{target.name}: boot failed: {why}"
            + (f"\n--- last console lines ---\n{tail}" if tail else "")) from exc


def _power_off(target, strategy) -> None:
    """Power off after a failed attempt so that the next one starts from a cold board. The strategy
    owns its retry state (NetbootStrategy.reset_after_failure); what the console buffered from the
    failed attempt is dropped, or a stale U-Boot prompt would be taken for the new one."""
    strategy.reset_after_failure()
    strategy.transition("off")
    drop_console_input(target.get_driver("ConsoleProtocol", activate=False))


@contextlib.contextmanager
def boot_target(env: EnvFile, image: Image, job: str, console: ConsoleLog,
                extra_bootargs: list[str] | None = None, attempts: int = 1, *,
                prepare: Callable[[Target], None] | None = None, state: str = "shell") -> Iterator[Boot]:
    """Stage ``image`` for ``job`` and boot ``env``'s target to a shell (a :class:`LinuxTarget`) or, at
    ``state`` ``system``, to what a system image prints (a :class:`Boot`); always power off and unstage.

    ``prepare(target)`` is called once labgrid made the target, before anything is staged or powered
    (a flow tells the strategy what to boot, a twin how many vCPUs to start with); ``state``: where
    the boot ends, ``shell`` (a shell the benchmarks run on) or ``system`` (a system image booted as
    it is: no shell).

    An infrastructure failure (no bootloader prompt, TFTP, a reset, a timeout) powers the board off
    and tries again, up to ``attempts`` boots in all; a job or test failure (bad input, a kernel
    that panics) is never retried. The failed attempts are in ``Boot.failed_attempts``, or
    in the final error's ``failed_attempts``.
    """
    if env.arch not in ("unknown", image.arch):
        raise JobError(f"{env.path}: options.arch: target is {env.arch} but image '{image.name}' is {image.arch}")
    if attempts < 1:
        raise JobError(f"boot attempts must be at least 1, not {attempts}")
    environment, target = open_target(env)
    if prepare is not None:
        prepare(target)
    with boot_opened_target(target, env.arch, image, job, console, extra_bootargs, attempts, state=state) as booted:
        yield booted


@contextlib.contextmanager
def boot_opened_target(target: Target, arch: str, image: Image, job: str, console: ConsoleLog,
                       extra_bootargs: list[str] | None = None, attempts: int = 1, *,
                       state: str = "shell") -> Iterator[Boot]:
    """:func:`boot_target` on a target labgrid made already (farm's pytest plugin: labgrid's ``target``)."""
    if attempts < 1:
        raise JobError(f"boot attempts must be at least 1, not {attempts}")
    folder = job_folder(current_user(), job)
    tftp = strategy = None
    try:
        t0 = time.monotonic()
        try:
            strategy = target.get_strategy()
            tftp = target.get_driver("JobTFTPProviderDriver")
            strategy.stage_image(tftp, image, folder, extra_bootargs)  # the DTB checked before any staging
        except FarmError:
            raise
        except Exception as exc:
            raise InfrastructureError(f"{target.name}: staging failed: {type(exc).__name__}: {exc}") from exc
        failed: list[str] = []
        while True:
            t_attempt = time.monotonic()
            try:
                shell = _boot_once(target, strategy, console, state)
                break
            except InfrastructureError as exc:
                failed.append(f"attempt {len(failed) + 1}: {str(exc).splitlines()[0]}")
                if len(failed) >= attempts:
                    if attempts > 1:
                        exc = InfrastructureError(f"{target.name}: no boot in {attempts} attempts; last: {exc}")
                    exc.failed_attempts = failed
                    raise exc from None
                _power_off(target, strategy)
        boot = dict(name=target.name, arch=arch, target=target, console=console,
                    boot_seconds=time.monotonic() - t_attempt, failed_attempts=failed,
                    total_seconds=time.monotonic() - t0, retyped=list(getattr(strategy, "retyped", [])),
                    dtb=getattr(strategy, "dtb_used", None),
                    emulated=any(isinstance(d, QEMUDriver) for d in target.drivers))
        yield LinuxTarget(shell=shell, **boot) if state == "shell" else Boot(**boot)
    finally:
        with contextlib.suppress(Exception):
            if strategy is not None:
                strategy.reset_after_failure()
                strategy.transition("off")
        with contextlib.suppress(Exception):
            target.cleanup()
        with contextlib.suppress(Exception):
            if tftp is not None:
                tftp.unstage(folder)
