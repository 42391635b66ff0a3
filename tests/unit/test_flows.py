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
from farm.run.model import load_pipeline
from farm.bench.registry import BENCHMARKS

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
    needs = BENCHMARKS["iperf3"].target_needs(BENCHMARKS["iperf3"].params())
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
