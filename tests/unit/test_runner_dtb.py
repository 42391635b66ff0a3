"""run.json's boot record says which device tree booted: the image's DTB (name, sha256) or U-Boot's."""

from __future__ import annotations

import contextlib
import json

import pytest

from farm.run import run_pipeline

from .test_runner import booted_target, constant, pipeline, registry  # noqa: F401  (pipeline: a fixture)

SHA = "cd" * 32


class DTBFlow:
    kind = "fake"

    def __init__(self, dtb):
        self.dtb = dtb

    def images(self, image):
        return image

    @contextlib.contextmanager
    def boot(self, request):
        yield booted_target(dtb=self.dtb)


@pytest.mark.parametrize("dtb", [{"name": "imx8mq-evk.dtb", "sha256": SHA}, "u-boot"])
def test_the_boot_record_names_the_device_tree(pipeline, tmp_path, dtb):  # noqa: F811
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: DTBFlow(dtb),
                       registry=registry(count=constant))
    boots = json.loads((run.path / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"]
    assert [b["dtb"] for b in boots] == [dtb]


def test_a_flow_without_a_device_tree_records_none(pipeline, tmp_path):  # noqa: F811
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: DTBFlow(None),
                       registry=registry(count=constant))
    boots = json.loads((run.path / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"]
    assert "dtb" not in boots[0]  # iPXE: the PC has no device tree
