"""run.json's boot record says which device tree booted: the image's DTB (name, sha256) or U-Boot's."""

from __future__ import annotations

import json

import pytest

from farm.run import run_pipeline

from ..fakes import FakeFlow, booted_target
from .test_runner import constant, pipeline, registry  # noqa: F401  (pipeline: a fixture)

SHA = "cd" * 32


def dtb_flow(dtb):
    """Boots nothing; its booted target says which device tree it booted."""
    return FakeFlow(booted=lambda: booted_target(dtb=dtb))


@pytest.mark.parametrize("dtb", [{"name": "imx8mq-evk.dtb", "sha256": SHA}, "u-boot"])
def test_the_boot_record_names_the_device_tree(pipeline, tmp_path, dtb):  # noqa: F811
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: dtb_flow(dtb),
                       registry=registry(count=constant))
    boots = json.loads((run.path / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"]
    assert [b["dtb"] for b in boots] == [dtb]


def test_a_flow_without_a_device_tree_records_none(pipeline, tmp_path):  # noqa: F811
    run = run_pipeline(pipeline(setups=("a",)), out=tmp_path / "run", flow_for=lambda s: dtb_flow(None),
                       registry=registry(count=constant))
    boots = json.loads((run.path / "run.json").read_text())["targets"]["maaxboard-twin"]["boots"]
    assert "dtb" not in boots[0]  # iPXE: the PC has no device tree
