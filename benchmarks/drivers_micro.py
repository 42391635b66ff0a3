"""What labgrid's drivers cost per console round trip, on a live twin (benchmarks/run.py starts it).

A boot's total is too noisy on a shared machine to show a 10 ms saving, so this measures the
driver overheads directly, on one twin, many times each, with and without the changes of
farm_boot.PATCHES (swapped in and out at run time in this process only):

- U-Boot: ``UBootDriver.run("true")`` (one marker round trip), labgrid's QEMUDriver._read as is and
  without its 10 ms sleep; farm's own non-TFTP U-Boot commands one by one (as farm sends them) vs
  joined with ``&&`` in one line (the batch-uboot patch);
- shell: ``ShellDriver.run("true")`` as farm has it (FarmShellDriver: no ``echo MARKER`` check after
  a clean command) vs labgrid's stock behaviour (the check before every command: two round trips),
  each with and without the read sleep.

Prints ``RESULT {json}`` with the median seconds per call of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import farm_boot  # noqa: E402


def timed(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.monotonic()
        fn()
        samples.append(time.monotonic() - t)
    return statistics.median(samples)


class Swap:
    """Apply farm_boot.PATCHES by name for the duration of a with block."""

    def __init__(self, *names):
        self.names = names
        self.undo = []

    def __enter__(self):
        self.undo = [farm_boot.PATCHES[name]() for name in self.names]
        return self

    def __exit__(self, *exc):
        for undo in reversed(self.undo):
            undo()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--env", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("-n", type=int, default=20)
    args = p.parse_args()

    from farm.boot.console_log import ConsoleLog
    from farm.boot.session import EnvFile, open_target
    from farm.boot.staging import current_user, job_folder
    from farm.images.build import load_image

    env = EnvFile.load(args.env)
    image = load_image(args.image)
    result: dict = {"n": args.n}
    with ConsoleLog(Path(args.log_dir)):
        _, target = open_target(env)
        strategy = target.get_strategy()
        tftp = target.get_driver("JobTFTPProviderDriver")
        folder = job_folder(current_user(), args.job)
        try:
            kernel = tftp.stage_as(str(image.kernel), folder, image.manifest["kernel"])
            initrd = tftp.stage_as(str(image.initrd), folder, image.manifest["initrd"])
            strategy.set_image(kernel, initrd, kernel_compressed=image.manifest.get("kernel_compression", "none") != "none")
            strategy.transition("uboot")
            uboot = strategy.uboot
            n = args.n
            result["uboot_run"] = timed(lambda: uboot.run("true"), n)
            with Swap("read-nosleep"):
                result["uboot_run_nosleep"] = timed(lambda: uboot.run("true"), n)
            commands = [c for c in strategy.commands() if not c.startswith("tftp")]
            result["uboot_commands"] = commands

            def one_by_one():
                for c in commands:
                    uboot.run(c, timeout=60)

            result["uboot_setup_one_by_one"] = timed(one_by_one, max(3, n // 4))
            result["uboot_setup_batched"] = timed(lambda: uboot.run(" && ".join(commands), timeout=60), max(3, n // 4))
            strategy.transition("shell")
            shell = target.get_driver("ShellDriver")
            result["shell_driver"] = type(shell).__name__
            result["shell_run"] = timed(lambda: shell.run("true"), n)
            with Swap("check-prompt-always"):
                result["shell_run_check_always"] = timed(lambda: shell.run("true"), n)
            with Swap("read-nosleep"):
                result["shell_run_nosleep"] = timed(lambda: shell.run("true"), n)
                with Swap("check-prompt-always"):
                    result["shell_run_check_always_nosleep"] = timed(lambda: shell.run("true"), n)
        finally:
            strategy.broken = None
            try:
                strategy.transition("off")
            finally:
                target.cleanup()
                tftp.unstage(folder)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    from farm import signals

    sys.exit(signals.run(main))  # SIGTERM, SIGHUP unwind like Ctrl-C: boot_target powers off; exit 143, 129
