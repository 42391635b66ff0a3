"""The flow registry (farm.flows): a setup names its boot flow by its settings field or ``flow:``, the
runner makes it from there, and a flow declares the images it boots (the benchmarks' needs in the one
they run on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import JobError
from farm.flows import flow_types
from farm.guest.flow import GuestFlow
from farm.images.request import ImageRequest
from farm.plugins import ENTRY_POINT_GROUP, OLD_FLOWS_GROUP
from farm.run.model import load_pipeline
from farm.bench.registry import benchmarks
from tests.unit.labdist import LabPlugin, added, installed

ROOT = Path(__file__).resolve().parents[2]


def pipeline(tmp_path: Path, setups: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: flows\nimage: {ROOT / 'images' / 'maaxboard-bench.yaml'}\n"
                    f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\nsetups:\n{setups}"
                    "benchmarks: [{iperf3: {}}]\n")
    return path


def test_a_setup_names_its_flow_by_its_settings_or_by_name(tmp_path):
    p = load_pipeline(pipeline(tmp_path, "  - {name: bare}\n  - {name: vm, guest: {vcpus: 1, accel: tcg}}\n"
                                         "  - {name: named, flow: netboot}\n"))
    assert [s.flow.name for s in p.setups] == ["netboot", "netboot+guest", "netboot"]
    assert p.setups[1].flow.settings.vcpus == 1
    # run.json's setups: the flow's name, and every flow's settings field (None where another flow runs)
    assert p.setups[0].describe() == {"bootargs": [], "image": None, "cpu_frequency_khz": None, "cpus": None,
                                      "flow": "netboot", "system": None, "dpdk": None,
                                      "guest": None}
    assert p.setups[1].describe()["guest"]["vcpus"] == 1


@pytest.mark.parametrize("setup, message", [
    ("  - {name: a, flow: bootelf}\n", r"p.yaml:5: setups\[0\].flow: unknown flow 'bootelf' \(known: dpdk, netboot, netboot\+guest"),
    ("  - {name: a, flow: netboot, guest: {vcpus: 1}}\n",
     r"p.yaml:5: setups\[0\].guest: belongs to the flow netboot\+guest, but the setup's flow is netboot"),
    ("  - {name: a, flow: netboot+guest}\n", r"p.yaml:5: setups\[0\].guest: the flow netboot\+guest needs its guest's settings"),
])
def test_a_flow_that_does_not_fit_is_refused_when_the_file_is_read(tmp_path, setup, message):
    with pytest.raises(JobError, match=message):
        load_pipeline(pipeline(tmp_path, setup))


def test_the_guest_flow_builds_the_guests_image_with_the_benchmarks_needs_inside_the_hosts():
    iperf3 = benchmarks()["iperf3"]
    needs = iperf3.target_needs(iperf3.params())
    own = ImageRequest(recipe=Path("images/maaxboard-bench.yaml"), needs=needs)
    netboot, guest = flow_types()["netboot"], flow_types()["netboot+guest"]
    assert netboot.make(None, _setup()).images(own) is own
    from farm.guest.spec import GuestSpec

    host = GuestFlow(GuestSpec()).images(own)
    assert host.recipe == own.recipe and not host.needs and host.carries is own
    other = GuestFlow(GuestSpec(image=Path("images/x86-bench.yaml"))).images(own)
    assert other.carries.recipe == Path("images/x86-bench.yaml") and other.carries.needs == needs
    assert guest.make(GuestSpec(), _setup(khz=1000000, ports=(5201,))).host.pin_khz == 1000000


def _setup(khz=None, ports=()):
    from farm.boot.flow import FlowSetup

    return FlowSetup(cpu_frequency_khz=khz, ports=ports)


LAB_FLOW = """
import attrs
from farm.flows import FlowType
from farm.hookspecs import hookimpl
from farm.schema import setting


@attrs.frozen
class BootElfFlow:
    entry: int
    setup: object


@attrs.frozen
class BootElfSettings:
    entry: int = setting(doc="the ELF's entry address (0x40000000)")


BOOTELF = FlowType("bootelf", lambda settings, setup: BootElfFlow(settings.entry, setup), key="bootelf",
                   settings=BootElfSettings, needs_settings=True, describe=lambda s: {"entry": hex(s.entry)})


@hookimpl
def farm_flows():
    return [BOOTELF]
"""


@pytest.fixture
def lab_flow(tmp_path, monkeypatch):
    """A lab's flow as an installed distribution declares it: a plugin in the entry-point group ``farm``
    (a dist-info on sys.path, as pip would install it), whose ``farm_flows`` hook returns a FlowType."""
    yield from installed(tmp_path / "site", monkeypatch, dist="mylab-flows", group=ENTRY_POINT_GROUP,
                         entry="mylab_bootelf = mylab_bootelf", module="mylab_bootelf", source=LAB_FLOW)


def test_a_lab_adds_a_flow_by_entry_point(lab_flow, tmp_path):
    import mylab_bootelf

    assert flow_types()["bootelf"] is mylab_bootelf.BOOTELF
    p = load_pipeline(pipeline(tmp_path, "  - {name: elf, bootelf: {entry: 0x40000000}}\n"
                                         "  - {name: bare}\n"))
    elf, bare = p.setups
    assert (elf.flow.name, elf.flow.settings.entry, bare.flow.name) == ("bootelf", 0x40000000, "netboot")
    assert elf.describe()["bootelf"] == {"entry": "0x40000000"} and bare.describe()["bootelf"] is None
    made = elf.flow.make(_setup())
    assert isinstance(made, mylab_bootelf.BootElfFlow) and made.entry == 0x40000000
    # the lab's settings are checked when the file is read, as farm's flows' are (the same reader)
    with pytest.raises(JobError, match=r"p.yaml:5: setups\[0\]\.bootelf: missing required field 'setups\[0\]\.bootelf\.entry'"):
        load_pipeline(pipeline(tmp_path, "  - {name: elf, bootelf: {}}\n"))


@pytest.fixture
def old_lab_flow(tmp_path, monkeypatch):
    """A lab's flow as farm found them before flows were plugins: a FlowType per entry point of ``farm.flows``."""
    yield from installed(tmp_path / "site", monkeypatch, dist="mylab-flows", group=OLD_FLOWS_GROUP,
                         entry="bootelf = mylab_bootelf:BOOTELF", module="mylab_bootelf",
                         source=LAB_FLOW.split("@hookimpl")[0])


def test_the_older_entry_point_group_of_flows_still_works_and_says_it_is_deprecated(old_lab_flow, capsys):
    import mylab_bootelf

    assert flow_types()["bootelf"] is mylab_bootelf.BOOTELF
    assert ("farm: warning: the flow mylab_bootelf:BOOTELF is registered in the entry-point group farm.flows, "
            "which is deprecated: return it from a farm_flows() hook") in capsys.readouterr().err


def test_a_flow_name_or_settings_field_is_one_plugins():
    from farm.flows import FlowType

    twice = LabPlugin(flows=[FlowType("netboot", lambda s, setup: None)])
    same_field = LabPlugin(flows=[FlowType("another-guest", lambda s, setup: None, key="guest")])
    for plugin, message in ((twice, "flow 'netboot' is registered already, by farm.flows"),
                            (same_field, "the settings field of flow 'guest' is registered already, by farm.flows")):
        with added(plugin, "mylab"), pytest.raises(JobError, match=f"farm plugin mylab: {message}"):
            flow_types()
    assert set(flow_types()) == {"netboot", "netboot+guest", "system", "dpdk"}
