"""farm.results.rundiff on recorded run.json files (tests/data): what differs between two runs' inputs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from farm.results.rundiff import Difference, diff_runs

DATA = Path(__file__).resolve().parent.parent / "data"


def _info(name: str) -> dict:
    return json.loads((DATA / name / "run.json").read_text(encoding="utf-8"))


def test_two_runs_of_the_same_inputs_differ_in_none():
    assert diff_runs(_info("qualify-twin/base"), _info("qualify-twin/same")) == []


def test_the_slow_run_differs_in_its_boot_argument_and_the_cores_it_saw():
    assert diff_runs(_info("qualify-twin/base"), _info("qualify-twin/slow")) == [
        Difference("target maaxboard-twin", "default: cpus", "4", "1"),
        Difference("target maaxboard-twin", "default: online", "0-3", "0"),
        Difference("setup default", "bootargs", "[]", '["maxcpus=1"]')]


def test_packages_kernel_programs_and_farm_the_image_first():
    a = _info("qualify-twin/base")
    b = copy.deepcopy(a)
    image = b["images"]["maaxboard-bench"]
    openssl = next(p for p in image["packages"] if p["name"] == "openssl")
    was = openssl["version"]
    openssl["version"] = "3.0.99-1"
    image["packages"] = [p for p in image["packages"] if p["name"] != "iperf3"]
    image["kernel_version"] = "6.1.0-99-arm64"
    image["recipe"]["programs"][1]["source_sha256"] = "f" * 64
    image["artifacts"]["Image"]["sha256"] = "e" * 64
    b["git_sha"] = "2" * 40
    found = diff_runs(a, b)
    part = "image maaxboard-bench"
    assert found[:2] == [Difference(part, "kernel_version", "6.1.0-57-arm64", "6.1.0-99-arm64"),
                         Difference(part, "package iperf3", "3.12-1+deb12u2", None)]
    assert Difference(part, "package openssl", was, "3.0.99-1") in found
    sha = a["images"]["maaxboard-bench"]["recipe"]["programs"][1]["source_sha256"]
    assert Difference(part, "program farm_echo source_sha256", sha, "f" * 64) in found
    assert found[-1] == Difference("farm", "git commit", a["git_sha"], "2" * 40)
    parts = [d.part for d in found]
    assert parts.index("farm") > max(i for i, p in enumerate(parts) if p == part)


def test_runs_of_other_pipelines_name_images_targets_and_setups_only_one_has():
    found = diff_runs(_info("qualify-twin/base"), _info("vm-vs-bare-5-boots"))
    whole = {(d.part, d.what): (d.a, d.b) for d in found}
    assert whole[("setup kvm-guest", "setup")] == (None, "run")
    assert ("pipeline", "pipeline_name") in whole and whole[("pipeline", "pipeline_name")][0] == "qualify"
    assert all(d.a != d.b for d in found)
