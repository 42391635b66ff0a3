"""System images (farm.images.system, farm.images.baremetal), the flow ``system``'s settings and U-Boot
commands (farm.flows.system, farm.boot.uboot), console lines as records (farm.measure.console) and the
pipeline's checks of shell-less setups: pure parts on real captured output; the stand-in is built with
the real cross gcc."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import attrs
import pytest

from farm.bench.console import STANDIN_STATS, parse_standin
from farm.boot.system import choose_boot, find_address, fit_ramdisk_and_fdt
from farm.boot.uboot import SystemBoot, system_boot_line, system_commands
from farm.boot.target import ConsoleTarget, ServedTarget, ShellTarget
from farm.errors import JobError, ParseError
from farm.flows import FlowType, SetupFlow
from farm.images.image import SYSTEM, load_image, manifest_problem
from farm.images.system import (ELF, RAW, UIMAGE, describe, file_format, make_uimage, system_image,
                                uimage_header)
from farm.measure.console import parse_stats, stats_pattern
from farm.run import given_images, given_load_addr
from farm.run.model import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
STANDIN = ROOT / "images" / "standin.yaml"
TWIN = ROOT / "env" / "qemu-maaxboard.yaml"


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return system_image(STANDIN, cache=tmp_path_factory.mktemp("cache"))


# --- the image kind -------------------------------------------------------------------------------

def test_the_standin_builds_into_a_system_image_of_three_boots(standin, tmp_path):
    assert standin.kind == SYSTEM and standin.arch == "arm64"
    assert standin.boots == {"bootm": "farm-standin.uimg", "bootelf": "farm-standin.elf", "go": "farm-standin.bin"}
    files = {n: (standin.path / n).read_bytes() for n in standin.boots.values()}
    assert file_format(files["farm-standin.uimg"]) == UIMAGE
    assert file_format(files["farm-standin.elf"]) == ELF
    assert file_format(files["farm-standin.bin"]) == RAW
    header = uimage_header(files["farm-standin.uimg"])  # its CRCs checked as bootm checks them
    assert (header["arch"], header["os"], header["type"], header["load_addr"]) == ("arm64", "linux", "kernel",
                                                                                    "0x40200000")
    assert files["farm-standin.uimg"][64:] == files["farm-standin.bin"]
    _, elf = describe(files["farm-standin.elf"])
    assert elf["arch"] == "arm64" and elf["entry"] == "0x40200000"
    assert manifest_problem(standin.manifest) is None
    # the same sources and compiler: the same image, from the cache (not rebuilt)
    again = system_image(STANDIN, cache=standin.path.parent.parent)
    assert again.path == standin.path and again.cached


def test_a_lab_file_is_copied_into_the_cache_with_its_sha256(standin, tmp_path):
    raw = tmp_path / "loader.img"
    raw.write_bytes((standin.path / "farm-standin.bin").read_bytes())
    with pytest.raises(JobError, match=r"loader.img: a raw binary: give its load address"):
        system_image(raw, arch="arm64", cache=tmp_path / "c")
    with pytest.raises(JobError, match=r"loader.img: a raw binary says not what it runs on"):
        system_image(raw, load_addr=0x40200000, cache=tmp_path / "c")
    image = system_image(raw, arch="arm64", load_addr=0x40200000, cache=tmp_path / "c")
    assert image.boots == {"go": "loader.img", "bootm": "loader.uimg"}  # bootm: farm's uImage of it
    assert image.manifest["source"]["path"] == str(raw.resolve())
    assert image.manifest["artifacts"]["loader.img"]["sha256"] == image.manifest["source"]["sha256"]
    raw.write_bytes(b"rebuilt by the lab meanwhile")  # the image booted is the copy recorded
    assert (image.path / "loader.img").read_bytes() == (standin.path / "farm-standin.bin").read_bytes()
    # a uImage says its architecture itself; one of another architecture than the target's is refused
    uimg = tmp_path / "sys.uimg"
    uimg.write_bytes((standin.path / "farm-standin.uimg").read_bytes())
    assert system_image(uimg, cache=tmp_path / "c").boots == {"bootm": "sys.uimg"}
    with pytest.raises(JobError, match="its header says arm64, but the target is amd64"):
        system_image(uimg, arch="amd64", cache=tmp_path / "c")


def test_a_damaged_uimage_is_refused_before_it_is_booted(standin, tmp_path):
    data = bytearray((standin.path / "farm-standin.uimg").read_bytes())
    data[100] ^= 0xFF
    bad = tmp_path / "bad.uimg"
    bad.write_bytes(bytes(data))
    with pytest.raises(JobError, match=r"bad.uimg: the uImage data's CRC is wrong"):
        system_image(bad, cache=tmp_path / "c")
    with pytest.raises(ValueError, match="truncated"):
        uimage_header(bytes(data[:80]))


def test_make_uimage_writes_mkimages_header():
    image = make_uimage(b"\x00" * 8, load_addr=0x50000000, name="x")
    magic, hcrc = struct.unpack_from(">II", image)
    assert magic == 0x27051956 and hcrc == zlib.crc32(image[:4] + b"\0" * 4 + image[8:64])
    assert uimage_header(image)["entry"] == "0x50000000"
    with pytest.raises(JobError, match="32-bit"):
        make_uimage(b"", load_addr=1 << 33, name="x")


def test_a_system_manifest_names_a_file_per_boot_command(standin):
    manifest = json.loads((standin.path / "manifest.json").read_text())
    assert manifest_problem({**manifest, "boot": {"booti": "farm-standin.uimg"}}) == \
        "boot.booti: unknown field (allowed: bootelf, bootm, go); did you mean 'bootm'?"
    assert manifest_problem({**manifest, "boot": {"bootm": "other"}}) == "boot.bootm: 'other' is not one of the artifacts"
    assert manifest_problem({**manifest, "kind": "rtos"}) == "kind: 'rtos': expected one of linux, system"
    assert manifest_problem({k: v for k, v in manifest.items() if k != "boot"}) == "missing required field 'boot'"
    assert load_image(standin.path).kind == SYSTEM


# --- console lines as records ----------------------------------------------------------------------

def test_the_standins_console_becomes_records():
    text = (DATA / "console-standin-bootm-twin.log").read_text()
    found = parse_standin(text)
    banner = [m for m in found if m.metric == "banner"]
    assert [(m.value, m.unit, m.params) for m in banner] == [(1.0, "count", {"version": "1", "el": "1"})]
    ticks = {m.params["component"]: m.value for m in found if m.metric == "ticks"}
    assert ticks == {"fill": 123370.0, "checksum": 69786.0, "copy": 37634.0}
    share = {m.params["component"]: m.value for m in found if m.metric == "share"}
    assert share == {"fill": 50.8, "checksum": 28.7, "copy": 15.5} and {m.benchmark for m in found} == {"console"}


def test_stats_patterns_are_checked_and_a_line_read_twice_is_an_error():
    with pytest.raises(JobError, match=r"units.ticks: the pattern has no group \(\?P<ticks>"):
        stats_pattern(r"component (?P<component>\w+)", {"ticks": "ticks"})
    with pytest.raises(JobError, match="a pattern needs units"):
        stats_pattern(r"ready")
    text = "component a: ticks 1 of 2 (50.0%)\ncomponent a: ticks 3 of 4 (75.0%)\n"
    with pytest.raises(ParseError, match=r"console line 2: .*ticks of component=a already read on line 1"):
        parse_stats(text, STANDIN_STATS)
    pattern = stats_pattern(r"load (?P<load>\S+)", {"load": "percent"})
    with pytest.raises(ParseError, match=r"console line 1: 'load high': load 'high' is not a number"):
        parse_stats("load high", [pattern])
    assert [m.params for m in parse_stats("load 3", [pattern], params={"point": 1})] == [{"point": 1}]


# --- the flow's settings, U-Boot's commands ---------------------------------------------------------

def _pipeline(tmp_path: Path, system: str, benchmarks: str = "[{console: {}}]") -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: sys\ntargets: [{{env: {TWIN}}}]\nsetups:\n  - name: sel4\n    system: {system}\n"
                    f"benchmarks: {benchmarks}\n")
    return path


def _error(path: Path) -> str:
    with pytest.raises(JobError) as info:
        load_pipeline(path)
    return str(info.value)


def test_a_system_setup_needs_no_recipe_and_is_checked_when_read(tmp_path):
    p = load_pipeline(_pipeline(tmp_path, f"{{path: {STANDIN}, ready: 'farm-standin: ready', load_addr: 0x50000000}}"))
    setup = p.setups[0]
    assert setup.flow.name == "system" and setup.flow.type.gives == (ServedTarget, ConsoleTarget) and p.images == {}
    assert setup.flow.settings.load_addr == 0x50000000
    assert setup.describe()["system"]["ready"] == "farm-standin: ready"
    path = _pipeline(tmp_path, "{ready: '(unclosed'}")
    assert _error(path).startswith(f"{path}:5: setups[0].system.ready: '(unclosed' is not a regular expression")
    path = _pipeline(tmp_path, "{ready: r, address: 'has address ([0-9.]+)'}")
    assert "a pattern needs the group (?P<address>...)" in _error(path)
    path = _pipeline(tmp_path, "{ready: r, boot: booti}")
    assert _error(path).startswith(f"{path}:5: setups[0].system.boot: 'booti': expected one of bootm, bootelf, go")
    path = _pipeline(tmp_path, "{ready: r, path: no-such.img}")  # checked when the image is made (farm reproduce)
    from farm.boot.flow import FlowSetup
    from farm.images.request import ImageRequest

    setup = load_pipeline(path).setups[0]
    with pytest.raises(JobError) as info:
        setup.flow.make(FlowSetup(arch="arm64")).images(ImageRequest(kind=SYSTEM))
    assert str(info.value).startswith(f"{path}:5: setups[0].system.path: ") and "no-such.img: no such file" in str(info.value)


def test_a_benchmark_that_needs_a_shell_is_refused_a_shell_less_setup(tmp_path):
    path = _pipeline(tmp_path, "{ready: r}", "[{console: {}}, {openssl-speed: {seconds: 1}}]")
    message = _error(path)
    assert message.startswith(f"{path}:6: benchmarks[1].openssl-speed: needs a shell on the target, and setup sel4")
    assert "its flow, system, gives a network the lab host reaches and a system image's console" in message


def test_a_system_setup_refuses_a_cpu_frequency_it_could_not_set(tmp_path):
    """The system flow sets no frequency (cpufreq needs a shell): accepted, it would be recorded unset."""
    path = tmp_path / "p.yaml"
    path.write_text(f"name: sys\ntargets: [{{env: {TWIN}}}]\nsetups:\n  - name: sel4\n"
                    "    system: {ready: r}\n    cpu_frequency_khz: 1000000\nbenchmarks: [{console: {}}]\n")
    message = _error(path)
    assert message.startswith(f"{path}:6: setups[0].cpu_frequency_khz: the flow system gives no shell")
    assert "cannot set its CPU frequency" in message
    path.write_text(f"name: sys\ntargets: [{{env: {TWIN}}}]\nsetups:\n  - name: sel4\n"
                    "    system: {ready: r}\n    cpus: 1\nbenchmarks: [{console: {}}]\n")
    assert load_pipeline(path).setups[0].cpus == 1  # its cores are the twin's -smp: still taken


def test_a_linux_setup_beside_a_system_one_still_needs_its_recipe(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(f"name: sys\ntargets: [{{env: {TWIN}}}]\nsetups:\n  - {{name: sel4, system: {{ready: r}}}}\n"
                    "  - {name: linux}\nbenchmarks: [{console: {}}]\n")
    assert "setups[1] (linux) boots a Linux image: give 'image'" in _error(path)


def test_the_boot_command_is_the_setups_else_the_env_files_else_the_images_first():
    offered = {"bootm": "a.uimg", "bootelf": "a.elf", "go": "a.bin"}
    assert choose_boot(None, "", offered, "a") == "bootm"
    assert choose_boot(None, "go", offered, "a") == "go"
    assert choose_boot("bootelf", "go", offered, "a") == "bootelf"
    with pytest.raises(JobError, match="the setup's system.boot is go, but the system image 'a' is booted by bootm"):
        choose_boot("go", "", {"bootm": "a.uimg"}, "a")
    assert fit_ramdisk_and_fdt({"formats": {"a.uimg": "uimage"}}, "a.uimg") == (False, True)
    assert fit_ramdisk_and_fdt({"formats": {"f": "fit"}, "header": {"ramdisk": "rd", "fdt": "fdt-1"}}, "f") == (True, False)


def test_uboot_loads_the_file_and_hands_over_as_the_command_says():
    boot = SystemBoot("bootm", "farm-standin.uimg", "${kernel_addr_r}", "ready")
    assert system_boot_line(boot, fdt_addr="${fdtcontroladdr}") == "bootm ${kernel_addr_r} - ${fdtcontroladdr}"
    assert system_boot_line(SystemBoot("go", "x.bin", "0x50000000", "r"), fdt_addr="x") == "go 0x50000000"
    fit = SystemBoot("bootm", "x.itb", "0x48000000", "r", ramdisk=True, fit_kernel="kernel-1", fit_ramdisk="ramdisk-1")
    assert system_boot_line(fit, fdt_addr="${fdtcontroladdr}") == \
        "bootm 0x48000000:kernel-1 0x48000000:ramdisk-1 ${fdtcontroladdr}"
    with pytest.raises(JobError, match="FIT image name"):
        system_boot_line(SystemBoot("bootm", "x", "0x4", "r", fit_kernel="k; reset"), fdt_addr="x")
    assert system_boot_line(SystemBoot("bootelf", "x.elf", "0x48000000", "r"), fdt_addr="x") == "bootelf -p 0x48000000"
    commands = system_commands(boot, "root/job/farm-standin.uimg", server="10.0.2.2", use_dhcp=True)
    assert commands[-1] == "tftpboot ${kernel_addr_r} root/job/farm-standin.uimg"
    assert not any(c.startswith("setenv bootargs") for c in commands) and any(c.startswith("dhcp") for c in commands)
    elf = system_commands(SystemBoot("bootelf", "x.elf", "0x48000000", "r"), "root/j/x.elf", server=None, use_dhcp=True)
    assert elf[-1] == "setenv autostart yes"
    with pytest.raises(JobError, match="load address"):
        system_boot_line(SystemBoot("go", "x", "0x5; reset", "r"), fdt_addr="x")
    with pytest.raises(JobError, match="system image path"):
        system_commands(boot, "root/job/a b", server=None, use_dhcp=True)


def test_the_address_is_the_last_the_console_names():
    from farm.boot.system_settings import SystemSettings

    settings = SystemSettings(ready="r", address=r"client0: has address (?P<address>[0-9.]+)")
    text = "client0: has address 10.0.2.15\nclient0: has address 10.0.2.16\n"
    assert find_address(settings, text) == "10.0.2.16"
    assert find_address(SystemSettings(ready="r", address="192.168.1.5"), text) == "192.168.1.5"


# --- --image FILE -------------------------------------------------------------------------------------

def test_image_a_file_is_a_system_image_of_the_setups_load_address(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FARM_CACHE", str(tmp_path / "cache"))
    raw = tmp_path / "loader.img"
    raw.write_bytes((standin.path / "farm-standin.bin").read_bytes())
    p = load_pipeline(_pipeline(tmp_path, "{ready: r, load_addr: 0x40200000}"))
    assert given_load_addr(p) == 0x40200000
    given = given_images([raw], {"arm64"}, {SYSTEM}, load_addr=given_load_addr(p))
    assert set(given) == {("arm64", SYSTEM)} and given["arm64", SYSTEM].boots["go"] == "loader.img"
    with pytest.raises(JobError, match=r"--image .*loader.img: a raw binary: give its load address"):
        given_images([raw], {"arm64"}, {SYSTEM})
    with pytest.raises(JobError, match=r"a system image \(booted by setups of the flow system\), and no setup"):
        given_images([standin.path], {"arm64"}, {"linux"})


def _lab_dir(path: Path, data: bytes = b"\x00" * 64) -> Path:
    """A directory a lab writes: its file and a system manifest.json (docs/system-images.md)."""
    import hashlib

    path.mkdir()
    (path / "loader.img").write_bytes(data)
    (path / "manifest.json").write_text(json.dumps({
        "kind": SYSTEM, "name": "client-vm", "arch": "arm64", "boot": {"go": "loader.img"}, "load_addr": "0x50000000",
        "artifacts": {"loader.img": {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}}}))
    return path


def test_a_system_directory_is_checked_against_its_manifest_as_image_dir_is(tmp_path):
    from farm.boot.flow import FlowSetup
    from farm.images.request import ImageRequest

    lab = _lab_dir(tmp_path / "client-vm")
    image = system_image(lab)
    assert image.boots == {"go": "loader.img"}
    # no key written: the content's (run.json's image_key, the archive's), the same for the same content
    assert len(image.manifest["key"]) == 64 and system_image(lab).manifest["key"] == image.manifest["key"]
    assert system_image(_lab_dir(tmp_path / "other", b"\x02" * 64)).manifest["key"] != image.manifest["key"]
    assert given_images([lab], {"arm64"}, {SYSTEM})["arm64", SYSTEM].manifest["key"] == image.manifest["key"]
    (lab / "loader.img").write_bytes(b"\x01" * 64)  # rebuilt after its manifest was written: a stale manifest
    stale = f"{lab}: loader.img does not match the sha256 in manifest.json"
    with pytest.raises(JobError) as info:
        system_image(lab)
    assert str(info.value).startswith(stale) and "the manifest is stale" in str(info.value)
    with pytest.raises(JobError) as info:  # the one check, --image DIR's
        given_images([lab], {"arm64"}, {SYSTEM})
    assert str(info.value).startswith(f"--image {stale}")
    path = _pipeline(tmp_path, f"{{ready: r, path: {lab}}}")
    with pytest.raises(JobError) as info:  # a setup's system.path: where the pipeline names it, and the file
        load_pipeline(path).setups[0].flow.make(FlowSetup(arch="arm64")).images(ImageRequest(kind=SYSTEM))
    assert str(info.value).startswith(f"{path}:5: setups[0].system.path: {stale}")
    (lab / "loader.img").unlink()
    with pytest.raises(JobError, match="loader.img.*missing"):
        system_image(lab)


def test_the_load_address_of_a_given_image_is_the_flows_word_not_the_runners(tmp_path):
    p = load_pipeline(_pipeline(tmp_path, "{ready: r, load_addr: 0x40200000}"))
    (sel4,) = p.setups
    other = attrs.evolve(sel4, name="sel4-high", flow=SetupFlow(sel4.flow.type, attrs.evolve(
        sel4.flow.settings, load_addr=0x50000000)))
    with pytest.raises(JobError, match=r"different load addresses \(sel4: 0x40200000, sel4-high: 0x50000000\)"):
        given_load_addr(attrs.evolve(p, setups=(sel4, other)))
    # a setup of its own path boots no --image: its load_addr is not the given image's
    own = attrs.evolve(other, flow=SetupFlow(sel4.flow.type, attrs.evolve(other.flow.settings, path=tmp_path)))
    assert given_load_addr(attrs.evolve(p, setups=(sel4, own))) == 0x40200000
    # a flow that does not say (no FlowType.given_load_addr) gives none, whatever its settings hold
    mute = FlowType("mute-system", lambda settings, setup: None, key="mute", gives=(ConsoleTarget,), image_kind=SYSTEM)
    silent = attrs.evolve(sel4, flow=SetupFlow(mute, sel4.flow.settings))
    assert given_load_addr(attrs.evolve(p, setups=(silent,))) is None


# --- the shell-less stand-in with networking: a FIT, an /init without a shell, the served sweep -------

def test_a_fit_of_a_kernel_and_ramdisk_reads_back_as_bootm_will_pick_it():
    import hashlib

    from farm.images.fit import fdt_blob, make_fit
    from farm.images.system import FIT, parse_fdt

    fit = make_fit(b"K" * 10, b"R" * 7, kernel_addr=0x40400000, description="t")
    assert file_format(fit) == FIT
    kind, summary = describe(fit)
    assert summary["configuration"] == "conf-1" and (summary["kernel"], summary["ramdisk"]) == ("kernel-1", "ramdisk-1")
    assert summary["images"]["kernel-1"]["load"] == "0x40400000" and summary["images"]["ramdisk-1"]["type"] == "ramdisk"
    root = parse_fdt(fit)
    kernel = root.children["images"].children["kernel-1"]
    assert kernel.props["data"] == b"K" * 10  # unpadded: the property's length is the data's
    assert kernel.children["hash-1"].props["value"] == hashlib.sha256(b"K" * 10).digest()
    assert "timestamp" in root.props  # U-Boot refuses a FIT without one (err -74)
    assert parse_fdt(fdt_blob({"a": "x", "n": {"c": 5}})).children["n"].props["c"] == b"\0\0\0\x05"


def test_the_serving_init_is_farms_without_the_shell():
    from importlib import resources

    from farm.images.fit import READY, serving_init

    init = resources.files("farm.images").joinpath("init.sh").read_text()
    served = serving_init(init, ["farm_echo -d -p 7 -s", "farm_lukem -d -p 1236"])
    assert "cttyhack /bin/sh" not in served and served.startswith(init[:init.index("exec setsid")])
    assert served.index("farm_echo -d -p 7 -s ||") < served.index("farm_lukem -d -p 1236 ||") < served.index(READY)
    with pytest.raises(JobError, match="does not end in"):
        serving_init("#!/bin/sh\n", [])


def test_a_served_sweep_needs_no_shell_and_its_cpu_is_the_targets(tmp_path):
    from farm.bench.network import SweepParams

    served = SweepParams.of({"served": True, "loads": [10]})
    assert served.requires() == (ServedTarget,) and SweepParams.of({}).requires() == (ShellTarget, ServedTarget)
    with pytest.raises(JobError, match="served: true: the CPU is the target's CPU target's"):
        SweepParams.of({"served": True, "cpu_target": False})
    with pytest.raises(JobError, match="not a parameter of this method"):
        SweepParams.of({"served": True, "method": "ipbench-echo"})
    p = load_pipeline(_pipeline(tmp_path, "{ready: r}", "[{sweep: {served: true, loads: [10]}}, "
                                                        "{iperf3: {served: true}}]"))
    assert p.benchmarks[0].params.served and ShellTarget not in p.benchmarks[1].params.requires()
    assert "iperf3: needs a shell on the target" in _error(_pipeline(tmp_path, "{ready: r}", "[{iperf3: {}}]"))
    assert "sweep: needs a shell on the target" in _error(_pipeline(tmp_path, "{ready: r}", "[{sweep: {loads: [10]}}]"))
