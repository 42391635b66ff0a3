"""The boot stage as one call: load an env file, stage an image on TFTP, boot the target to its shell.

    with boot_target(env_file, image, job="20261129-1") as booted:
        booted.shell.run_check("uname -a")

Whatever happens, leaving the block powers the board off and removes the job's TFTP folder, and the
serial console has been logged to ``console/<target>.log`` from the first byte.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

import attrs
import pexpect
from labgrid import Environment, Target
from labgrid.driver.exception import ExecutionError
from labgrid.exceptions import NoConfigFoundError, InvalidConfigError
from labgrid.strategy.common import StrategyError

from ..config import load_yaml
from ..errors import FarmError, InfrastructureError, JobError
from ..images.build import Image, default_cache
from .console_log import ConsoleLog
from .staging import current_user, job_folder

#: labgrid env files may use these; farm gives them defaults so the twin's files work out of the box
LG_DEFAULTS = {
    "LG_TFTP_ROOT": lambda: str(default_cache() / "tftp"),
    "LG_QEMU_ACCEL": lambda: "tcg",
}


def apply_lg_defaults() -> None:
    for key, default in LG_DEFAULTS.items():
        if not os.environ.get(key):
            os.environ[key] = default()
    Path(os.environ["LG_TFTP_ROOT"]).mkdir(parents=True, exist_ok=True)


@attrs.define
class EnvFile:
    """A labgrid env file, checked for what farm needs before labgrid reads it."""

    path: Path
    target_name: str
    options: dict

    @classmethod
    def load(cls, path: str | Path, target: str | None = None) -> "EnvFile":
        doc = load_yaml(path, "env file")
        targets = doc.get("targets")
        if not isinstance(targets, dict) or not targets:
            raise doc.error("targets" if "targets" in doc else None, "an env file needs a 'targets' mapping with one target")
        if target is None:
            if len(targets) != 1:
                raise doc.error("targets", f"several targets ({', '.join(targets)}): name one")
            target = next(iter(targets))
        elif target not in targets:
            raise doc.error("targets", f"no target '{target}' (have: {', '.join(targets)})")
        body = targets[target] or {}
        options = dict(body.get("options") or {}) if isinstance(body, dict) else {}
        return cls(Path(path), target, options)

    @property
    def arch(self) -> str:
        return str(self.options.get("arch", "unknown"))


def open_target(env: EnvFile) -> tuple[Environment, Target]:
    apply_lg_defaults()
    try:
        environment = Environment(str(env.path))
        target = environment.get_target(env.target_name)
    except (NoConfigFoundError, InvalidConfigError) as exc:
        raise JobError(f"{env.path}: {exc}") from None
    except FarmError:
        raise
    except Exception as exc:  # labgrid reports bad driver/resource arguments as plain exceptions
        raise JobError(f"{env.path}: target '{env.target_name}': {type(exc).__name__}: {exc}") from None
    if target is None:
        raise JobError(f"{env.path}: no target '{env.target_name}'")
    return environment, target


@attrs.define
class BootedTarget:
    name: str
    arch: str
    target: Target
    shell: object
    boot_seconds: float
    console: ConsoleLog

    def run(self, command: str, timeout: float = 60) -> list[str]:
        """Run a shell command on the target; a non-zero exit becomes an InfrastructureError-free ExecutionError."""
        return self.shell.run_check(command, timeout=timeout)


def describe_boot_failure(exc: BaseException) -> str:
    root = exc.__cause__ if isinstance(exc, StrategyError) and exc.__cause__ else exc
    if isinstance(root, FarmError):
        return str(root)
    if isinstance(root, pexpect.TIMEOUT):
        first = str(root).splitlines()[0] if str(root) else "timeout"
        return f"timed out waiting on the console ({first})"
    if isinstance(root, ExecutionError):
        return f"command failed on the target: {root.msg}"
    return f"{type(root).__name__}: {root}"


@contextlib.contextmanager
def boot_target(env: EnvFile, image: Image, job: str, console: ConsoleLog,
                extra_bootargs: list[str] | None = None) -> Iterator[BootedTarget]:
    """Stage ``image`` for ``job`` and boot ``env``'s target to a shell; always power off and unstage."""
    if env.arch not in ("unknown", image.arch):
        raise JobError(f"{env.path}: options.arch: target is {env.arch} but image '{image.name}' is {image.arch}")
    environment, target = open_target(env)
    folder = job_folder(current_user(), job)
    tftp = strategy = None
    try:
        t0 = time.monotonic()
        try:
            strategy = target.get_strategy()
            tftp = target.get_driver("JobTFTPProviderDriver")
            kernel = tftp.stage_as(str(image.kernel), folder, image.manifest["kernel"])
            initrd = tftp.stage_as(str(image.initrd), folder, image.manifest["initrd"])
            if image.manifest.get("kernel_compression", "none") != "none":
                strategy.set_image(kernel, initrd, extra_bootargs, kernel_compressed=True)
            else:
                strategy.set_image(kernel, initrd, extra_bootargs)
            strategy.transition("shell")
            shell = target.get_driver("ShellDriver")
        except FarmError:
            raise
        except Exception as exc:
            if isinstance(exc.__cause__, JobError):  # labgrid wraps it in StrategyError: still bad input
                raise exc.__cause__ from None
            tail = console.tail(target.name)
            raise InfrastructureError(
                f"{target.name}: boot failed: {describe_boot_failure(exc)}"
                + (f"\n--- last console lines ---\n{tail}" if tail else "")) from exc
        yield BootedTarget(target.name, env.arch, target, shell, time.monotonic() - t0, console)
    finally:
        with contextlib.suppress(Exception):
            if strategy is not None:
                strategy.broken = None
                strategy.transition("off")
        with contextlib.suppress(Exception):
            target.cleanup()
        with contextlib.suppress(Exception):
            if tftp is not None:
                tftp.unstage(folder)
