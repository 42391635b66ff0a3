"""farm.boot.ipxe: the job's iPXE script and commands, every unsafe value refused, and iPXE's error lines
read from real console output.

The console logs in tests/data were written by farm's ConsoleLog while env/qemu-x86.yaml booted
images/x86-bench.yaml (QEMU 7.2 q35, SeaBIOS 1.16.2, Debian's ipxe-qemu 1.0.0+git-20190125.36a4c85-5.1
as the virtio-net option ROM), escape sequences, backspaces and SeaBIOS' 80-column wrapping kept:
- ipxe-boot-ok.log: a good boot, up to the shell's first prompt;
- ipxe-missing-kernel.log: the staged bzImage deleted before iPXE asked for it;
- ipxe-autoboot-no-bootfile.log: the first Ctrl-B prompt left unanswered: iPXE autoboots, finds no
  boot file and offers its prompt again (answered there), up to that ``iPXE>`` prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.boot.ipxe import console_lines, ipxe_commands, ipxe_errors, ipxe_script, staged_folder, tftp_url
from farm.errors import JobError

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data"
JOB = "alice/20261129-224807-71fa-x86-twin-default-0"


def log(name: str) -> str:
    return (DATA / name).read_bytes().decode("utf-8", "replace")


def script(**override) -> str:
    """A typical call, as IPXENetbootStrategy makes it for the QEMU twin's env file."""
    kwargs = dict(server=None, kernel=f"{JOB}/bzImage", initrd=f"{JOB}/initrd.cpio.gz",
                  bootargs=["console=ttyS0", "quiet"], pass_lease=True)
    kwargs.update(override)
    return ipxe_script(**kwargs)


def test_typical_script():
    assert script() == (
        "#!ipxe\n"
        f"kernel tftp://${{next-server}}/{JOB}/bzImage initrd=initrd.cpio.gz console=ttyS0 quiet "
        "farm.ip=${ip}:${netmask}:${gateway} farm.mac=${mac}\n"
        f"initrd tftp://${{next-server}}/{JOB}/initrd.cpio.gz\n"
        "boot\n"
    )


def test_fixed_server_no_lease_absolute_external_path():
    out = script(server="192.168.10.1", kernel="/srv/tftp/a/j/bzImage", initrd="/srv/tftp/a/j/initrd.cpio.gz",
                 bootargs=["console=ttyS0,115200", "maxcpus=1"], pass_lease=False)
    # iPXE drops the URL's first '/': the server is asked for /srv/tftp/a/j/bzImage, as staged
    assert out.splitlines()[1:3] == [
        "kernel tftp://192.168.10.1//srv/tftp/a/j/bzImage initrd=initrd.cpio.gz console=ttyS0,115200 maxcpus=1",
        "initrd tftp://192.168.10.1//srv/tftp/a/j/initrd.cpio.gz",
    ]


def test_commands():
    assert ipxe_commands(server=None, script=f"{JOB}/boot.ipxe") == [
        "dhcp", f"chain tftp://${{next-server}}/{JOB}/boot.ipxe"]
    assert ipxe_commands(server="tftp.lab", script="a/j/boot.ipxe")[1] == "chain tftp://tftp.lab/a/j/boot.ipxe"


@pytest.mark.parametrize("override", [
    {"kernel": f"{JOB}/bzImage ; shell"},
    {"kernel": f"{JOB}/../../etc/passwd"},
    {"initrd": "a/${x}/initrd"},
    {"bootargs": ["console=ttyS0", "init=/bin/sh || shell"]},
    {"bootargs": ["a=${net0/mac}"]},
    {"bootargs": ["quiet\nshell"]},
    {"server": "10.0.2.2/evil"},
    {"server": "host name"},
])
def test_unsafe_values_are_refused(override):
    with pytest.raises(JobError, match="not allowed in an iPXE"):
        script(**override)


def test_unsafe_script_path_is_refused():
    with pytest.raises(JobError):
        ipxe_commands(server=None, script="a/j/boot.ipxe && shell")


def test_staged_folder():
    assert staged_folder(f"{JOB}/bzImage", "") == JOB
    assert staged_folder("/srv/tftp/a/j/bzImage", "/srv/tftp/") == "a/j"
    with pytest.raises(JobError):
        staged_folder("bzImage", "")
    with pytest.raises(JobError):
        staged_folder("/elsewhere/a/j/bzImage", "/srv/tftp")


def test_lines_wrapped_by_the_console_are_joined_and_escapes_dropped():
    lines = console_lines(log("ipxe-missing-kernel.log"))
    assert "tftp://10.0.2.2/root/missing-kernel-job/bzImage... No such file or directory (http://ipxe.org/2d12603b)" in lines
    banner = next(line for line in lines if line.startswith("iPXE 1.0.0"))
    assert "\x1b" not in banner and banner.endswith("-- http://ipxe.org")
    # iPXE erases its Ctrl-B prompt with backspaces once answered: the screen line is the command line's
    assert not any("Press Ctrl-B for the iPXE" in line for line in lines)
    assert "iPXE> dhcp" in lines
    assert console_lines("a" * 10 + "\r\nb", columns=10) == ["a" * 10 + "b"]
    assert console_lines("a" * 10 + "\r\nb", columns=0) == ["a" * 10, "b"]


def test_errors_of_a_missing_kernel():
    assert ipxe_errors(log("ipxe-missing-kernel.log")) == [
        "tftp://10.0.2.2/root/missing-kernel-job/bzImage... No such file or directory (http://ipxe.org/2d12603b)",
        "Could not boot: No such file or directory (http://ipxe.org/2d12603b)",
    ]


def test_errors_of_an_autoboot_without_boot_file():
    assert ipxe_errors(log("ipxe-autoboot-no-bootfile.log")) == [
        "Nothing to boot: No such file or directory (http://ipxe.org/2d03e13b)"]


def test_a_good_boot_has_no_errors():
    text = log("ipxe-boot-ok.log")
    assert ipxe_errors(text) == []
    assert "FARM-READY" in text  # the banner's plain http://ipxe.org is no error URL


# --- the env files: they load with labgrid's own Environment, the strategy resolvable ---


def test_twin_env_builds_a_target_with_the_strategy(monkeypatch, tmp_path):
    from labgrid import Environment

    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path))
    monkeypatch.setenv("LG_QEMU_ACCEL", "tcg")
    target = Environment(str(ROOT / "env" / "qemu-x86.yaml")).get_target("x86-twin")
    try:
        strategy = target.get_strategy()
        assert type(strategy).__name__ == "IPXENetbootStrategy"
        assert strategy.tftp_server == ""  # the next-server of iPXE's DHCP lease
        qemu = target.get_driver("QEMUDriver", activate=False)
        args = qemu.get_qemu_base_args()
        assert args[args.index("-nic") + 1] == f"user,model=virtio-net-pci,tftp={tmp_path}"  # no bootfile
        assert args[args.index("-accel") + 1] == "tcg"
        # bad input is a JobError before anything is powered on
        with pytest.raises(JobError):
            strategy.set_image("a/j/bzImage", "a/j/initrd.cpio.gz", ["init=/bin/sh;reboot"])
        with pytest.raises(JobError, match="different folders"):
            strategy.set_image("a/j/bzImage", "a/k/initrd.cpio.gz")
        with pytest.raises(JobError, match="bzImage"):
            strategy.set_image("a/j/bzImage", "a/j/initrd.cpio.gz", kernel_compressed=True)
        strategy.set_image("a/j/bzImage", "a/j/initrd.cpio.gz", ["maxcpus=1"])
        assert "console=ttyS0 quiet maxcpus=1 farm.ip=" in strategy.script()
    finally:
        target.cleanup()
