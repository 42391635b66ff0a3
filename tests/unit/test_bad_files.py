"""Ten bad pipeline and recipe files, each refused with its exact ``file:line: field: problem`` (farm.schema):
what a user sees for each kind of mistake, read through the one reader every file goes through."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import JobError
from farm.images.recipe import load_recipe
from farm.run.model import load_pipeline

ROOT = Path(__file__).resolve().parents[2]

PIPELINE = f"""\
name: bad
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets:
  - env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}
setups:
  - name: guest
    guest:
      vcpus: 2
benchmarks:
  - iperf3: {{duration: 3}}
"""

RECIPE = """\
name: bad
arch: arm64
kernel:
  package: linux-image-arm64
initrd:
  packages: [busybox-static]
  compress: zstd
"""

CASES = [
    # (which file, the change, the line, the field, the problem)
    ("pipeline", ("targets:", "target:"), 3, "target",
     "unknown field (allowed: benchmarks, boot_attempts, boots, compare, cpu_frequency_hz, description, image, "
     "images, name, order, repeats, repeats_in_boot, seed, settle, setups, targets); did you mean 'targets'?"),
    ("pipeline", ("{duration: 3}", "{duration: three}"), 10, "benchmarks[0].iperf3.duration",
     "expected an integer or a number, got str 'three'"),
    ("recipe", ("compress: zstd", "compress: xz"), 7, "initrd.compress", "'xz': expected one of gzip, zstd"),
    ("pipeline", ("vcpus: 2", "vcpus: 2\n      rt: {policy: rr, priority: 100}"), 9, "setups[0].guest.rt.priority",
     "100 is out of range: expected a whole number >= 1 and <= 99 (chrt's real-time priorities)"),
    ("recipe", ("[busybox-static]", "[busybox-static, 'Foo;rm']"), 6, "initrd.packages",
     "item 1 'Foo;rm': is not a valid Debian package name"),
    ("recipe", ("arch: arm64\n", ""), 1, "(top level)", "missing required field 'arch'"),
    ("pipeline", ("- name: guest", "- name: ../guest"), 6, "setups[0].name",
     "'../guest' is not a valid setup name (letters, digits and . _ - (not first), no '..', at most 64 characters)"),
    ("pipeline", ("vcpus: 2", "vcpus: 65"), 8, "setups[0].guest.vcpus",
     "65 is out of range: expected a whole number >= 1 and <= 64 vCPUs"),
    ("pipeline", ("{duration: 3}", "{durations: 3}"), 10, "benchmarks[0].iperf3.durations",
     "unknown field (allowed: bidir, bitrate, duration, length, omit, protocol, reverse, served); "
     "did you mean 'duration'?"),
    ("pipeline", ("vcpus: 2", "vcpu: 2"), 8, "setups[0].guest.vcpu",
     "unknown field (allowed: accel, boot_timeout, bootargs, cpu, extra_args, image, memory, network, pin, ports, "
     "rt, vcpus); did you mean 'vcpus'?"),
]


@pytest.mark.parametrize("kind, change, line, field, problem", CASES, ids=[c[3] for c in CASES])
def test_a_bad_file_is_refused_naming_file_line_and_field(tmp_path, kind, change, line, field, problem):
    text, load = (PIPELINE, load_pipeline) if kind == "pipeline" else (RECIPE, load_recipe)
    assert change[0] in text
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text.replace(*change, 1))
    with pytest.raises(JobError) as info:
        load(path)
    assert str(info.value) == f"{path}:{line}: {field}: {problem}"


@pytest.mark.parametrize("kind", ["pipeline", "recipe"])
def test_the_files_unchanged_are_read(tmp_path, kind):
    """Each case is its one change: the file without it is good."""
    path = tmp_path / f"{kind}.yaml"
    path.write_text(PIPELINE if kind == "pipeline" else RECIPE)
    assert (load_pipeline if kind == "pipeline" else load_recipe)(path).name == "bad"
