"""The DPDK setup (farm.flows.dpdk, farm.boot.dpdk) without a board: its settings checked when the pipeline
file is read, each step's command and the reading of its output (testpmd's log as captured on the twin),
the twin's NIC as DPDK needs it, and a responder's records joining a kernel echo's in a comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.boot import dpdk
from farm.boot.qemu import nic_as_device
from farm.errors import JobError, TestFailure
from farm.boot.dpdk_settings import DpdkSettings, parse_lcores
from farm.flows.dpdk import DpdkSetupSettings
from farm.results.identity import MetricKey
from farm.run.model import load_pipeline

from ..fakes import ScriptedShell, booted_target

ROOT = Path(__file__).resolve().parents[2]


def pipeline(tmp_path: Path, dpdk_settings: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: d\nimage: {ROOT / 'images' / 'maaxboard-dpdk.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\nsetups:\n"
                    f"  - name: dpdk\n    dpdk: {dpdk_settings}\n"
                    "benchmarks: [{sweep: {loads: [2]}}]\n")
    return path


def test_the_dpdk_settings_are_read_and_recorded(tmp_path):
    p = load_pipeline(pipeline(tmp_path, "{lcores: '0,2-3', hugepages: 32, port: '0000:00:02.0'}"))
    (setup,) = p.setups
    assert setup.flow.name == "dpdk"
    s = setup.flow.settings
    assert s == DpdkSetupSettings(lcores=(0, 2, 3), hugepages=32, port="0000:00:02.0")
    assert s.forwarding_lcores == (2, 3) and s.lcore_list == "0,2,3" and s.responder == "dpdk-testpmd-5tswap"
    assert setup.describe()["dpdk"] == {"app": "testpmd-5tswap", "responder": "dpdk-testpmd-5tswap",
                                        "lcores": [0, 2, 3], "hugepages": 32, "pmd": "net_virtio",
                                        "binding": "uio_pci_generic", "port": "0000:00:02.0", "ready_timeout": 120.0,
                                        "guest": None}
    # a vdev PMD's default binding is none (the kernel keeps the NIC)
    p = load_pipeline(pipeline(tmp_path, "{pmd: net_af_packet, port: eth0}"))
    assert p.setups[0].flow.settings.binding == "none" and p.setups[0].flow.settings.vdev
    assert load_pipeline(pipeline(tmp_path, "{}")).setups[0].flow.settings == DpdkSetupSettings()


@pytest.mark.parametrize("settings, message", [
    ("{app: l2fwd}", r"p.yaml:6: setups\[0\].dpdk.app: unknown echo app 'l2fwd'"),
    ("{lcores: 0}", r"setups\[0\].dpdk.lcores: testpmd needs a main lcore and at least one forwarding"),
    ("{lcores: '0-1,1'}", r"dpdk.lcores: core 1 is given twice"),
    ("{lcores: '3-1'}", r"dpdk.lcores: '3-1': the range runs backwards"),
    ("{lcores: 'a-b'}", r"dpdk.lcores: 'a-b' is not a core"),
    ("{lcores: [0, 1]}", r"dpdk.lcores: \[0, 1\]: expected EAL's lcore list"),
    ("{hugepages: 0}", r"dpdk.hugepages: 0: expected a number of 2 MiB pages"),
    ("{hugepages: true}", r"dpdk.hugepages: expected"),
    ("{pmd: net_ixgbe}", r"p.yaml:6: setups\[0\].dpdk.pmd: unknown PMD 'net_ixgbe' \(known: net_virtio"),
    ("{binding: igb_uio}", r"dpdk.binding: unknown binding 'igb_uio'"),
    ("{pmd: net_af_packet, binding: uio_pci_generic}", r"dpdk.binding: 'uio_pci_generic' does not fit the PMD net_af_packet"),
    ("{port: eth0}", r"dpdk.port: 'eth0': expected auto or a PCI address"),
    ("{pmd: net_af_packet, port: '0000:00:01.0'}", r"dpdk.port: '0000:00:01.0': expected auto or an interface"),
    ("{ready_timeout: 0}", r"dpdk.ready_timeout: 0"),
    ("{lcore: 0-1}", r"lcore"),
    ("{guest: {vcpus: 1}}", r"dpdk.lcores: core 1: the guest has 1 vCPUs"),
    ("{guest: {vcpus: 2, network: tap}}", r"dpdk.guest: a DPDK guest takes network: user"),
    ("{guest: {vcpus: 2}, pmd: net_af_packet}", r"dpdk.pmd: in a guest the PMD is net_virtio"),
    ("{guest: {vcpus: 2, memroy: 1G}}", r"memroy"),
    ("7", r"setups\[0\].dpdk: expected the DPDK echo's settings"),
])
def test_bad_dpdk_settings_are_refused_when_the_file_is_read(tmp_path, settings, message):
    with pytest.raises(JobError, match=message):
        load_pipeline(pipeline(tmp_path, settings))


def test_lcores_parse_as_eal_takes_them():
    assert parse_lcores("0-1") == (0, 1)
    assert parse_lcores("1,0") == (1, 0)  # the first given is testpmd's main lcore
    assert parse_lcores(" 0 , 4-5") == (0, 4, 5)
    with pytest.raises(ValueError, match="cores are 0-127"):
        parse_lcores("0-128")


# --- the steps: commands and their output --------------------------------------------------------------

NICS = ["farm-dpdk-nic eth0 /sys/devices/platform/4010000000.pcie/pci0000:00/0000:00:01.0/virtio0 virtio-pci "
        "52:54:00:12:34:56 10.0.2.15/24"]


def test_auto_takes_the_nic_holding_the_boots_address_by_its_pci_address():
    nics = dpdk.parse_nics(["garbage", *NICS, "farm-dpdk-nic eth1 - - 52:54:00:00:00:01 -"])
    assert [n.name for n in nics] == ["eth0", "eth1"] and nics[1].address is None
    nic, port = dpdk.choose_port(DpdkSettings(), nics)
    assert (nic.name, port, nic.driver) == ("eth0", "0000:00:01.0", "virtio-pci")
    assert dpdk.choose_port(DpdkSettings(pmd="net_af_packet", binding="none"), nics)[1] == "eth0"
    # a named PCI address need not be a kernel NIC: binding it says whether it exists
    assert dpdk.choose_port(DpdkSettings(port="0000:00:09.0"), nics) == (None, "0000:00:09.0")


def test_a_port_that_cannot_be_found_is_a_bind_error():
    with pytest.raises(dpdk.BindError, match="no NIC of the target has an IPv4 address"):
        dpdk.choose_port(DpdkSettings(), dpdk.parse_nics(["farm-dpdk-nic eth0 /sys/x virtio 52:54:00:12:34:56 -"]))
    mmio = ["farm-dpdk-nic eth0 /sys/devices/platform/a000000.virtio_mmio/virtio0 virtio_mmio 52:54:00:12:34:56 "
            "10.0.2.15/24"]
    with pytest.raises(dpdk.BindError, match="not a PCI device.*virtio-net-pci, not virtio-mmio"):
        dpdk.choose_port(DpdkSettings(), dpdk.parse_nics(mmio))
    with pytest.raises(dpdk.BindError, match="port eth3: no such interface"):
        dpdk.choose_port(DpdkSettings(pmd="net_af_packet", binding="none", port="eth3"), dpdk.parse_nics(NICS))


def test_the_bind_says_bound_or_why_not():
    assert "driver_override" in dpdk.bind_command("0000:00:01.0", "uio_pci_generic")
    assert dpdk.check_bound(["farm-dpdk-bind: was virtio-pci", "farm-dpdk-bind: bound uio_pci_generic"],
                            "0000:00:01.0", "uio_pci_generic") == "virtio-pci"
    assert dpdk.check_bound(["farm-dpdk-bind: was ", "farm-dpdk-bind: bound uio_pci_generic"],
                            "0000:00:01.0", "uio_pci_generic") is None
    for lines, why in [(["farm-dpdk-bind: no-device"], "no PCI device 0000:00:01.0"),
                       (["farm-dpdk-bind: no-driver"], "the kernel has no driver uio_pci_generic"),
                       (["sh: write error: No such device", "farm-dpdk-bind: was ", "farm-dpdk-bind: bound "],
                        "bound to no driver instead.*write error"),
                       ([], "printed nothing")]:
        with pytest.raises(dpdk.BindError, match=why):
            dpdk.check_bound(lines, "0000:00:01.0", "uio_pci_generic")


def test_hugepages_fewer_than_asked_are_no_hugepages():
    assert dpdk.parse_hugepages(["farm-dpdk-hugepages 64 64"], 64) == {"asked": 64, "total": 64, "free": 64,
                                                                       "page_kib": 2048}
    with pytest.raises(dpdk.NoHugepages, match="asked for 5000 pages of 2 MiB, the kernel has 412 \\(412 free\\)"):
        dpdk.parse_hugepages(["farm-dpdk-hugepages 412 412"], 5000)
    with pytest.raises(dpdk.NoHugepages, match=r"asked for 5000 pages of 2 MiB \(10000 MB\), the target has 812 MB"):
        dpdk.parse_hugepages(["farm-dpdk-hugepages-refused 831600"], 5000)
    with pytest.raises(dpdk.NoHugepages, match="no 2 MiB hugepages"):
        dpdk.parse_hugepages(["cat: can't open"], 64)


def test_a_pmd_the_image_lacks_is_a_pmd_error():
    assert dpdk.check_pmd(["farm-dpdk-pmd /usr/lib/aarch64-linux-gnu/dpdk/pmds-23.0/librte_net_virtio.so.23"],
                          "net_virtio").endswith("librte_net_virtio.so.23")
    with pytest.raises(dpdk.PmdError, match="unknown PMD net_enetfec in this image: librte_net_enetfec.so"):
        dpdk.check_pmd(["farm-dpdk-pmd none"], "net_enetfec")


def test_testpmd_is_the_5tswap_echo_on_the_port():
    argv = dpdk.testpmd_argv(DpdkSettings(lcores=(0, 1, 2)), "0000:00:01.0")
    assert argv[:4] == ["dpdk-testpmd", "-v", "-l", "0,1,2"] and ["-a", "0000:00:01.0"] == argv[6 + 2:6 + 4]
    assert argv[argv.index("--") + 1:] == ["--forward-mode=5tswap", "--auto-start", "--total-num-mbufs=8192",
                                           "--nb-cores=2", "--stats-period=3"]
    vdev = dpdk.testpmd_argv(DpdkSettings(pmd="net_af_packet", binding="none"), "eth0")
    assert "--no-pci" in vdev and "net_af_packet0,iface=eth0" in vdev
    start = dpdk.start_command(DpdkSettings(), "0000:00:01.0")
    assert start.startswith("rm -f /tmp/farm-dpdk.log; sh -c ") and "--stats-period=3 </dev/null; echo" in start


# testpmd's log as the twin wrote it (DPDK 22.11, net_virtio on a modern virtio-net-pci; tests/data/README.md)
READY_LOG = ["farm-dpdk-ready forwarding",
             *(Path(__file__).parents[1] / "data" / "testpmd-5tswap-twin.log").read_text().splitlines()]


def test_the_probe_is_read_from_testpmds_log():
    probe = dpdk.check_ready(READY_LOG, DpdkSettings(), "0000:00:01.0")
    assert probe.to_json() == {"version": "22.11.11", "pmd": "net_virtio", "device": "0000:00:01.0",
                               "mac": "52:54:00:12:34:56"}
    with pytest.raises(dpdk.PmdError, match="probed port 0000:00:01.0 with net_virtio, not the setup's net_af_packet"):
        dpdk.check_ready(READY_LOG, DpdkSettings(pmd="net_af_packet", binding="none"), "0000:00:01.0")


@pytest.mark.parametrize("log, error, message", [
    (["farm-dpdk-ready exited", "EAL: No available 2048 kB hugepages reported", "EAL: FATAL: Cannot init memory",
      "farm-dpdk-exit 1"], dpdk.NoHugepages, "no hugepages: EAL could not get its memory.*No available 2048 kB"),
    (["farm-dpdk-ready exited", "EAL: Detected CPU lcores: 2", "testpmd: No probed ethernet devices",
      "farm-dpdk-exit 1"], dpdk.PmdError, "EAL probed no port 0000:00:01.0 with the PMD net_virtio"),
    (["farm-dpdk-ready exited", "EAL: Cannot init plugins", "farm-dpdk-exit 1"], dpdk.DpdkExited,
     "exited before it forwarded.*Cannot init plugins"),
    (["farm-dpdk-ready wait", "EAL: Detected CPU lcores: 2"], dpdk.DpdkExited, "did not start forwarding within 120 s"),
])
def test_testpmd_that_does_not_forward_says_why(log, error, message):
    with pytest.raises(error, match=message) as caught:
        dpdk.check_ready(log, DpdkSettings(), "0000:00:01.0")
    assert isinstance(caught.value, TestFailure)


def test_a_responder_that_is_gone_is_dpdk_exited():
    dpdk.check_alive(["farm-dpdk-alive yes"])
    with pytest.raises(dpdk.DpdkExited, match="is gone.*farm-dpdk-exit 137"):
        dpdk.check_alive(["farm-dpdk-alive no", "Port 0: link state change event", "farm-dpdk-exit 137"])


def test_the_twins_nic_becomes_a_device_with_its_netdev_options_kept():
    cmd = ["qemu", "-nic", "user,model=virtio-net-pci,tftp=/srv", "-accel", "tcg"]
    assert nic_as_device(cmd, dpdk.TWIN_NIC) == [
        "qemu", "-netdev", "user,id=farmnet0,tftp=/srv",
        "-device", "virtio-net-pci,disable-legacy=on,romfile=,netdev=farmnet0", "-accel", "tcg"]
    with pytest.raises(JobError, match="no user-mode -nic"):
        nic_as_device(["qemu", "-nic", "tap,ifname=t0"], dpdk.TWIN_NIC)


def test_a_responder_param_splits_series_but_not_a_comparisons_row():
    class R:
        def __init__(self, setup, params):
            self.target, self.setup, self.suite, self.benchmark = "t", setup, "network", "sweep"
            self.params, self.metric, self.unit = params, "rtt_median", "us"

    kernel = MetricKey.of(R("kernel", "method=ipbench;packet_size=1472;requested=2000000"))
    dpdk_key = MetricKey.of(R("dpdk", "method=ipbench;packet_size=1472;requested=2000000;responder=dpdk-testpmd-5tswap"))
    assert kernel.measurement != dpdk_key.measurement
    assert kernel.anywhere == dpdk_key.anywhere


def test_a_sweep_method_that_starts_its_own_echo_is_refused_on_a_flows_responder():
    from farm.bench.context import BenchContext
    from farm.bench.network import SweepParams, run_echo_sweep
    from farm.boot.target import Responder
    from farm.measure import BenchmarkError

    ctx = BenchContext(booted_target(responder=Responder("dpdk-testpmd-5tswap", (1,))), None)
    with pytest.raises(BenchmarkError, match="answers the echo itself \\(dpdk-testpmd-5tswap\\).*use method ipbench"):
        run_echo_sweep(ctx, SweepParams.of({"method": "ipbench-echo", "loads": [1], "duration": 1}))


def test_the_settle_rule_reads_the_cores_a_responder_does_not_poll():
    from farm.bench.context import BenchContext
    from farm.boot.target import Responder
    from farm.measure.cpustat import WINDOW_MARK
    from farm.run.settle import busiest_core

    before = ["cpu  100 0 100 800 0 0 0 0 0 0", "cpu0 50 0 50 400 0 0 0 0 0 0", "cpu1 50 0 50 400 0 0 0 0 0 0"]
    after = ["cpu  250 0 250 900 0 0 0 0 0 0", "cpu0 55 0 55 490 0 0 0 0 0 0", "cpu1 195 0 195 410 0 0 0 0 0 0"]

    def shell():
        return ScriptedShell(lambda command: [*before, WINDOW_MARK, *after])

    polling = booted_target(shell(), responder=Responder("dpdk", (1,)))
    (window,) = BenchContext(polling, None).cpu_windows().values()
    assert set(window(1.0)[0]) == {"cpu0"}
    assert busiest_core(*window(1.0)) == pytest.approx(10.0)  # core 1 polls at 97 %: not waited for
    plain = booted_target(shell())
    (window,) = BenchContext(plain, None).cpu_windows().values()
    assert busiest_core(*window(1.0)) > 90


def test_dpdk_in_a_guest_composes_the_guest_flow_with_a_virtio_net_pci_nic(tmp_path):
    from farm.boot.flow import FlowSetup
    from farm.guest.command import qemu_command
    from farm.guest.flow import GuestFlow

    p = load_pipeline(pipeline(tmp_path, "{guest: {vcpus: 2, memory: 1G}, hugepages: 32}"))
    (setup,) = p.setups
    settings = setup.flow.settings
    assert settings.guest.vcpus == 2 and settings.guest.memory_mb == 1024
    assert setup.describe()["dpdk"]["guest"]["vcpus"] == 2
    flow = setup.flow.make(FlowSetup(ports=(7, 1236)))
    assert flow.kind == "netboot+guest+dpdk" and isinstance(flow.host, GuestFlow) and flow.host.ports == (7, 1236)
    argv = qemu_command(flow.host.spec, "/k", "/i", {7: 7})
    assert argv[argv.index("-device") + 1] == "virtio-net-pci,disable-legacy=on,romfile=,netdev=n0"
    # the guest's image is the setup's, inside the host image
    from farm.images.request import ImageRequest

    own = ImageRequest(recipe=Path("images/maaxboard-dpdk.yaml"))
    assert flow.images(own).carries is own
