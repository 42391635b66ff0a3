"""What the benchmarks need on the target, which the image they run on gains (farm.images.needs): declared
by their registrations' params, added to a recipe without edits, and a recipe that has it all unchanged
(its image's cache key too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.bench.registry import benchmarks
from farm.images.needs import Needs, with_needs
from farm.images.recipe import load_recipe
from farm.images.request import ImageRequest

ROOT = Path(__file__).resolve().parents[2]


def needs(name: str, **given) -> Needs:
    spec = benchmarks()[name]
    return spec.target_needs(spec.params.of(given))


def test_each_benchmark_declares_its_tools():
    assert needs("iperf3") == Needs(packages=("iperf3",), files=("/usr/bin/iperf3",))
    # ipbench (the default) and ipbench-echo: the echo and the cpu_target_lukem CPU target (on by default)
    assert [p.name for p in needs("sweep").programs] == ["farm_echo", "farm_lukem"]
    assert [p.name for p in needs("sweep", method="ipbench-echo").programs] == ["farm_echo", "farm_lukem"]
    assert [p.name for p in needs("sweep", cpu_target=False).programs] == ["farm_echo"]
    assert needs("sweep", method="iperf3-sockperf").packages == ("iperf3", "sockperf")
    assert "openssl" in needs("openssl-speed").packages
    isal = needs("isal")
    assert [p.name for p in isal.programs] == ["isal_bench"] and "/bin/busybox" in isal.files
    assert needs("isal", corpus=["/etc/hostname"]).files == ()  # a corpus of its own is the recipe's


def test_a_recipe_gains_what_it_lacks_and_keeps_what_it_has(tmp_path):
    recipe = tmp_path / "bare.yaml"
    recipe.write_text("name: bare\narch: arm64\nkernel: {package: linux-image-arm64}\n"
                      "initrd: {packages: [busybox-static], files: [/bin/busybox]}\n")
    bare = load_recipe(recipe)
    more = with_needs(bare, needs("iperf3") | needs("sweep"))
    assert more.packages == ("busybox-static", "iperf3") and more.files == ("/bin/busybox", "/usr/bin/iperf3")
    assert [p.name for p in more.programs] == ["farm_echo", "farm_lukem"]
    assert more.canonical() != bare.canonical()  # another image
    full = load_recipe(ROOT / "images" / "maaxboard-bench.yaml")
    every = needs("iperf3") | needs("sweep") | needs("openssl-speed") | needs("isal") \
        | needs("sweep", method="iperf3-sockperf")
    assert with_needs(full, every) is full  # the benchmark image lists everything: the same cache key


def test_an_image_request_is_one_image_per_recipe_needs_and_what_it_carries():
    a = ImageRequest(recipe=Path("images/x.yaml"), needs=needs("iperf3"))
    assert a.key == ImageRequest(recipe=Path("images/x.yaml"), needs=needs("iperf3")).key
    assert a.key != ImageRequest(recipe=Path("images/x.yaml")).key
    host = ImageRequest(recipe=Path("images/x.yaml"), carries=a)
    assert host.key != a.key and host.name == "x"
    with pytest.raises(ValueError):
        ImageRequest()
