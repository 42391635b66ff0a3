#!/usr/bin/env python3
"""The hand-written baseline: boot the MaaXBoard twin with pexpect and run two commands.

What a person writes in an afternoon, no framework: start QEMU with the serial console on stdio,
interrupt autoboot, type the U-Boot commands, wait for the shell prompt, run two commands, kill QEMU.
The naive way by default: the uncompressed kernel, U-Boot's default TFTP block size, no DHCP lease
handed to Linux (the image's /init then asks DHCP itself), ``console=ttyAMA0`` and nothing else.
The options exist so that benchmarks/run.py can also time it with farm's own settings.

    python3 benchmarks/naive_boot.py --kernel IMAGE_DIR/Image --initrd IMAGE_DIR/initrd.cpio.zst

Files are served by QEMU's user-mode TFTP server from a temporary folder of links.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import tempfile
import time

import pexpect

QEMU = ["qemu-system-aarch64", "-machine", "virt", "-cpu", "cortex-a53", "-smp", "4", "-m", "1G",
        "-bios", "/usr/lib/u-boot/qemu_arm64/u-boot.bin", "-nographic"]
UBOOT_PROMPT = "=> "
SHELL_PROMPT = r"root@farm-target:[^ ]*# "
COMMANDS = ("uname -r", "cat /proc/cpuinfo | head -1")


def boot(kernel: str, initrd: str, *, bootargs: str = "console=ttyAMA0", blocksize: int | None = None,
         compressed: bool = False, pass_lease: bool = False, log=None, timeout: float = 120) -> dict:
    """Boot, run COMMANDS, power off. Returns the outputs and the seconds from QEMU's start to the
    return of the second command. ``log``: a binary file-like that gets every console byte."""
    with tempfile.TemporaryDirectory(prefix="naive-tftp-") as root:
        os.symlink(os.path.abspath(kernel), os.path.join(root, "kernel"))
        os.symlink(os.path.abspath(initrd), os.path.join(root, "initrd"))
        t0 = time.monotonic()
        qemu = pexpect.spawn(QEMU[0], QEMU[1:] + ["-nic", f"user,model=virtio-net-pci,tftp={root}"],
                             timeout=timeout)
        qemu.logfile_read = log
        try:
            qemu.expect("Hit any key to stop autoboot")
            qemu.send("\n")
            qemu.expect(UBOOT_PROMPT)

            def uboot(command: str) -> None:
                qemu.sendline(command)
                qemu.expect(UBOOT_PROMPT)

            if blocksize:
                uboot(f"setenv tftpblocksize {blocksize}")
            uboot("setenv autoload no")      # else dhcp also tries to TFTP a boot file
            uboot("dhcp")
            uboot("setenv serverip 10.0.2.2")
            if compressed:                   # booti unpacks Image.gz here
                uboot("setenv kernel_comp_addr_r 0x48000000")
                uboot("setenv kernel_comp_size 0x4000000")
            uboot("tftpboot ${kernel_addr_r} kernel")
            uboot("tftpboot ${ramdisk_addr_r} initrd")
            lease = " farm.ip=${ipaddr}:${netmask}:${gatewayip} farm.mac=${ethaddr}" if pass_lease else ""
            uboot(f'setenv bootargs "{bootargs}{lease}"')
            qemu.sendline("booti ${kernel_addr_r} ${ramdisk_addr_r}:${filesize} ${fdtcontroladdr}")
            qemu.expect(SHELL_PROMPT)
            outputs = []
            for command in COMMANDS:
                qemu.sendline(command)
                qemu.expect(SHELL_PROMPT)
                lines = qemu.before.decode(errors="replace").replace("\r", "").split("\n")[1:]
                outputs.append("\n".join(line for line in lines if line.strip()).strip())
            seconds = time.monotonic() - t0
        finally:
            qemu.terminate(force=True)  # QEMU runs in its own session: this ends it
    return {"seconds": seconds, "outputs": outputs}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel", required=True)
    p.add_argument("--initrd", required=True)
    p.add_argument("--bootargs", default="console=ttyAMA0")
    p.add_argument("--blocksize", type=int)
    p.add_argument("--compressed", action="store_true", help="the kernel is an Image.gz")
    p.add_argument("--pass-lease", action="store_true", help="hand U-Boot's lease to /init (farm.ip=)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--marks", action="store_true", help="timestamp the console markers (benchmarks/markers.py)")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # leave through finally: QEMU is killed
    clock = None
    if args.marks:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from markers import MarkerClock

        clock = MarkerClock()  # its t0 is within a millisecond of boot()'s
    result = boot(args.kernel, args.initrd, bootargs=args.bootargs, blocksize=args.blocksize,
                  compressed=args.compressed, pass_lease=args.pass_lease, log=clock)
    if clock is not None:
        result["marks"] = clock.marks
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    if args.json:
        print(json.dumps(result))
    else:
        print(f"booted and ran {len(COMMANDS)} commands in {result['seconds']:.2f} s: {result['outputs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
