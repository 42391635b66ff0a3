"""farm.boot.uboot.uboot_boot_commands: the exact U-Boot command list, and every unsafe value refused."""

from __future__ import annotations

import pytest

from farm.boot.uboot import BOOT_COMMANDS, boot_command, uboot_boot_commands
from farm.errors import JobError

JOB = "alice/20261129-224807-71fa-maaxboard-twin-default-0"
LEASE = "farm.ip=${ipaddr}:${netmask}:${gatewayip} farm.mac=${ethaddr}"


def commands(**override) -> list[str]:
    """A typical call, as UBootNetbootStrategy makes it for the QEMU twin's env file."""
    kwargs = dict(kernel=f"{JOB}/Image", initrd=f"{JOB}/initrd.cpio.gz", kernel_addr="${kernel_addr_r}",
                  initrd_addr="${ramdisk_addr_r}", fdt_addr="${fdtcontroladdr}",
                  bootargs=["console=ttyAMA0", "quiet"], server="10.0.2.2", use_dhcp=True)
    kwargs.update(override)
    return uboot_boot_commands(**kwargs)


def test_typical_netboot():
    assert commands() == [
        "setenv autoload no",
        "dhcp",
        "setenv serverip 10.0.2.2",
        f"tftpboot ${{kernel_addr_r}} {JOB}/Image",
        f"tftpboot ${{ramdisk_addr_r}} {JOB}/initrd.cpio.gz",
        "setenv farm_initrd_size ${filesize}",
        'setenv bootargs "console=ttyAMA0 quiet farm.ip=${ipaddr}:${netmask}:${gatewayip} farm.mac=${ethaddr}"',
    ]


def test_static_network_no_lease():
    assert commands(use_dhcp=False, server=None, pass_lease=False, kernel_addr="0x40480000",
                    initrd_addr="0x4A000000", bootargs=["console=ttymxc0,115200", "ip=10.0.0.5::10.0.0.1:255.255.255.0"]) == [
        f"tftpboot 0x40480000 {JOB}/Image",
        f"tftpboot 0x4A000000 {JOB}/initrd.cpio.gz",
        "setenv farm_initrd_size ${filesize}",
        'setenv bootargs "console=ttymxc0,115200 ip=10.0.0.5::10.0.0.1:255.255.255.0"',
    ]


def test_dhcp_without_server_uses_the_lease_server():
    out = commands(server=None)
    assert out[:2] == ["setenv autoload no", "dhcp"]
    assert not any(c.startswith("setenv serverip") for c in out)
    assert commands(server="") == out


def test_no_bootargs():
    assert commands(bootargs=[], pass_lease=False)[-1] == 'setenv bootargs ""'
    assert commands(bootargs=[])[-1] == f'setenv bootargs "{LEASE}"'


def test_tftp_tuning_comes_first():
    out = commands(blocksize=1468, windowsize=8)
    assert out[:4] == ["setenv tftpblocksize 1468", "setenv tftpwindowsize 8", "setenv autoload no", "dhcp"]
    assert commands(blocksize=65464)[0] == "setenv tftpblocksize 65464"


def test_compressed_kernel():
    out = commands(comp_addr="0x48000000", comp_size=0x4000000)
    i = out.index("setenv serverip 10.0.2.2")
    assert out[i + 1:i + 3] == ["setenv kernel_comp_addr_r 0x48000000", "setenv kernel_comp_size 0x4000000"]
    assert out[i + 3] == f"tftpboot ${{kernel_addr_r}} {JOB}/Image"


# --- refused: each names what was wrong ---

BAD_PATHS = ["Image;reset", "Image; reset", "$(id)", "${bootcmd}", "`id`", "my Image", "Image'", 'Image"',
             "Image\nreset", "Image\n", "\nImage", "../Image", f"{JOB}/../../etc/passwd", "a/..", "..", "", "Image\t",
             "Image\0", "Image&&reset", "Image|reset", "Image#"]


@pytest.mark.parametrize("bad", BAD_PATHS)
@pytest.mark.parametrize("which", ["kernel", "initrd", "dtb"])
def test_bad_tftp_path(bad, which):
    with pytest.raises(JobError) as info:
        commands(**{which: bad})
    assert str(info.value) == f"{which} path {bad!r} contains characters not allowed on a U-Boot command line"


@pytest.mark.parametrize("bad", ["0x40480000;reset", "${kernel_addr_r};reset", "$(id)", "${KERNEL}", "${kernel_addr_r",
                                 "0x", "0xZZ", "0x4000 0x5000", "0x4000\n", "${a}${b}", "'0x4000'", "", "${}", "0x40..0"])
@pytest.mark.parametrize("which", ["kernel_addr", "initrd_addr", "fdt_addr", "comp_addr"])
def test_bad_load_address(bad, which):
    if which == "comp_addr" and bad == "":  # empty means: the kernel is not compressed
        assert not any("kernel_comp" in c for c in commands(comp_addr="", comp_size=0x4000000))
        return
    with pytest.raises(JobError) as info:
        commands(**{which: bad}, comp_size=0x4000000)
    assert str(info.value) == f"load address {bad!r} contains characters not allowed on a U-Boot command line"


@pytest.mark.parametrize("bad", ["quiet;reset", "$(id)", "init=`id`", "a b", "it's", 'x="y"', "x=${bootcmd}",
                                 "root=/dev/nfs\n", "quiet\nreset", "init=/../bin/sh", "", "a\tb", "x=y&reset", "x>y"])
def test_bad_kernel_argument(bad):
    with pytest.raises(JobError) as info:
        commands(bootargs=["console=ttyAMA0", bad])
    assert str(info.value) == f"kernel argument {bad!r} contains characters not allowed on a U-Boot command line"


@pytest.mark.parametrize("bad", ["10.0.2.2;reset", "10.0.2.2 ", "10.0.2.2\n", "$(id)", "tftp.example.com", "10.0.2",
                                 "10.0.2.2.5", "999.0.2.2", "10.0.2.256", "10.0.2.-1", "::1", "fe80::1", "0x0a000202",
                                 "${serverip}"])
def test_bad_server_address(bad):
    with pytest.raises(JobError) as info:
        commands(server=bad)
    assert str(info.value) == f"TFTP server address {bad!r} contains characters not allowed on a U-Boot command line"


@pytest.mark.parametrize("good", ["0.0.0.0", "10.0.2.2", "192.168.100.1", "255.255.255.255", "172.16.0.10"])
def test_good_server_address(good):
    assert f"setenv serverip {good}" in commands(server=good)


@pytest.mark.parametrize("bad", [0, -1, 65465, True, "1468", 1468.0])
@pytest.mark.parametrize("which", ["blocksize", "windowsize"])
def test_bad_tftp_sizes(bad, which):
    with pytest.raises(JobError, match=rf"^tftp{which} {bad!r}: expected a whole number"):
        commands(**{which: bad})


@pytest.mark.parametrize("bad", [0, -4096, None, True, "0x4000000"])
def test_bad_comp_size(bad):
    with pytest.raises(JobError, match=rf"^kernel_comp_size {bad!r}: expected a positive number of bytes$"):
        commands(comp_addr="0x48000000", comp_size=bad)


def test_nothing_is_returned_half_checked():
    # a bad value anywhere fails the whole call: no partial list that could reach the board
    with pytest.raises(JobError):
        commands(bootargs=["console=ttyAMA0", "quiet", "panic=5;reset"], server="10.0.2.2")


# --- the image's DTB (UBootNetbootStrategy.dtb): staged, loaded at fdt_load_addr, booted by booti ---

def test_dtb_is_loaded_between_kernel_and_initrd():
    out = commands(dtb=f"{JOB}/imx8mq-evk.dtb")
    i = out.index(f"tftpboot ${{kernel_addr_r}} {JOB}/Image")
    assert out[i:i + 5] == [
        f"tftpboot ${{kernel_addr_r}} {JOB}/Image",
        'test -n "${fdt_addr_r}"',  # not every U-Boot has it (QEMU's has not): unset, tftpboot would load anywhere
        f"tftpboot ${{fdt_addr_r}} {JOB}/imx8mq-evk.dtb",
        f"tftpboot ${{ramdisk_addr_r}} {JOB}/initrd.cpio.gz",
        "setenv farm_initrd_size ${filesize}",  # still the initrd's size: its tftpboot came last
    ]
    numeric = commands(dtb=f"{JOB}/x.dtb", fdt_load_addr="0x43000000")  # a number needs no guard
    assert numeric[i:i + 3] == [f"tftpboot ${{kernel_addr_r}} {JOB}/Image", f"tftpboot 0x43000000 {JOB}/x.dtb",
                                f"tftpboot ${{ramdisk_addr_r}} {JOB}/initrd.cpio.gz"]


def test_no_dtb_loads_none():
    assert not any("fdt_addr_r" in c for c in commands())
    assert commands(fdt_load_addr="not checked: no dtb") == commands()  # the address is only used with a dtb


@pytest.mark.parametrize("command", ["booti", "bootz", "bootm"])
def test_the_boot_line_is_the_chosen_command(command):
    assert boot_command(command, kernel_addr="${kernel_addr_r}", initrd_addr="${ramdisk_addr_r}",
                        fdt_addr="${fdt_addr_r}") == f"{command} ${{kernel_addr_r}} ${{ramdisk_addr_r}}:${{farm_initrd_size}} ${{fdt_addr_r}}"


def test_an_unknown_boot_command_is_refused():
    assert set(BOOT_COMMANDS) == {"booti", "bootz", "bootm"}
    with pytest.raises(JobError, match=r"^boot command 'go': expected one of booti, bootz, bootm$"):
        boot_command("go", kernel_addr="0x40480000", initrd_addr="0x44000000", fdt_addr="0x43000000")


@pytest.mark.parametrize("which", ["kernel_addr", "initrd_addr", "fdt_addr"])
def test_the_boot_line_refuses_bad_addresses(which):
    addrs = dict(kernel_addr="${kernel_addr_r}", initrd_addr="${ramdisk_addr_r}", fdt_addr="${fdt_addr_r}")
    with pytest.raises(JobError, match=r"^load address '0x40;reset' contains characters not allowed"):
        boot_command("booti", **{**addrs, which: "0x40;reset"})


@pytest.mark.parametrize("bad", ["0x43000000;reset", "${fdt_addr_r};reset", "$(id)", "", "0x"])
def test_bad_fdt_load_address(bad):
    with pytest.raises(JobError) as info:
        commands(dtb=f"{JOB}/x.dtb", fdt_load_addr=bad)
    assert str(info.value) == f"load address {bad!r} contains characters not allowed on a U-Boot command line"
